"""Loading task sets and splitting them into train and eval.

A task file is JSONL, one `Task` object a line (see `rlvr.types.Task`). Errors name the
file, the line and the field. `bundled:NAME` refers to `rlvr/tasks/data/NAME.jsonl`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rlvr.types import Task

BUNDLED_DIR = Path(__file__).parent / "data"


class TaskLoadError(ValueError):
    """A task file is missing or malformed; the message gives file, line and field."""


def resolve_source(source: str) -> Path:
    if source.startswith("bundled:"):
        name = source.split(":", 1)[1]
        path = BUNDLED_DIR / f"{name}.jsonl"
        if not path.is_file():
            names = sorted(p.stem for p in BUNDLED_DIR.glob("*.jsonl"))
            raise TaskLoadError(f"no bundled task set '{name}'; bundled: {', '.join(names)}")
        return path
    path = Path(source)
    if not path.is_file():
        raise TaskLoadError(f"task file not found: {path}")
    return path


def load_tasks(source: str, min_difficulty: int = 1, max_difficulty: int = 10**6) -> list[Task]:
    path = resolve_source(source)
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise TaskLoadError(f"{path}:{lineno}: not valid JSON: {e.msg}") from None
            try:
                task = Task.from_dict(data)
            except (TypeError, ValueError) as e:
                raise TaskLoadError(f"{path}:{lineno}: {e}") from None
            if task.id in seen:
                raise TaskLoadError(f"{path}:{lineno}: field 'id': '{task.id}' repeats line {seen[task.id]}")
            seen[task.id] = lineno
            if min_difficulty <= task.difficulty <= max_difficulty:
                tasks.append(task)
    if not tasks:
        raise TaskLoadError(f"{path}: no tasks with difficulty in [{min_difficulty}, {max_difficulty}]")
    return tasks


def is_eval(task_id: str, eval_fraction: float) -> bool:
    """Deterministic membership of the eval split: a hash of the id, not an RNG."""
    h = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big")
    return (h / 2**64) < eval_fraction


def split_tasks(tasks: list[Task], eval_fraction: float) -> tuple[list[Task], list[Task]]:
    """(train, eval), each sorted by id."""
    train = sorted((t for t in tasks if not is_eval(t.id, eval_fraction)), key=lambda t: t.id)
    evals = sorted((t for t in tasks if is_eval(t.id, eval_fraction)), key=lambda t: t.id)
    return train, evals
