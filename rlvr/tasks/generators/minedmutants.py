"""Realistic mutants for the test-writing tasks, mined from a run's failing solutions
(`rlvr tasks mine-mutants RUN`): the bugs a policy actually writes, beside the operators'.

For each test-writing task whose source function a run attempted (`metadata.source_task`,
e.g. py/add_2 for tw/add_2), the run's replies to that function that ran and failed some
test become candidate mutants, most frequent first:

  1. the reply's code as its environment ran it (the first code block after the response
     prefix, behind the task's prelude), parsed, defining the entry point;
  2. distinct, as a syntax tree, from the reference and from every mutant the task has;
  3. told apart from the reference as the generator tells its own mutants apart
     (rlvr.tasks.generators.testwritinggen): a source test fails on it, or a drawn input
     gives another value. Stricter than for generated mutants: a program that crashes
     before its tests (or times out) is dropped, since any test would "catch" it.

At most `per_task` are added to a task (family 'train', paid like the operators' mutants,
or 'hidden', evaluated only), and any assert that only a drawn input gave is added to the
task's gold tests (`metadata.reference_tests`), so the gold tests still catch every
mutant, and the fewest that do (`metadata.covering_tests`) are chosen again. The tasks
file is rewritten (or written elsewhere with --out); a task no reply reached is left as
it was."""

from __future__ import annotations

import ast
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlvr.envs.python_code import with_prelude
from rlvr.rewards.extract import extract_code
from rlvr.tasks import pyparse
from rlvr.tasks.generators.testwritinggen import distinguished, with_cover
from rlvr.tasks.loader import load_tasks
from rlvr.types import Task


@dataclass(frozen=True)
class Candidate:
    """A failing solution as a mutant: its id (`mined@` and a hash of its code) and code."""

    source: str
    count: int  # how many replies of the run wrote it (the same tree)

    @property
    def id(self) -> str:
        return "mined@" + hashlib.sha256(self.source.encode()).hexdigest()[:8]


def _tree(code: str) -> str | None:
    try:
        return ast.dump(pyparse.parse(code))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _defines(code: str, entry: str) -> bool:
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == entry for n in tree.body)


def failing_replies(run_dir: Path) -> dict[str, list[str]]:
    """Per task id, the last reply of each episode that ran and failed a test (the run's
    trajectories.jsonl; canaries and errors left out)."""
    path = Path(run_dir) / "trajectories.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no trajectories.jsonl (not a run directory, or it recorded none)")
    out: dict[str, list[str]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
        ex = row.get("execution") or {}
        if row.get("status") != "ok" or "#canary/" in row.get("task_id", "") or ex.get("status") != "ok":
            continue
        if not ex.get("total") or ex.get("passed", 0) >= ex["total"]:
            continue
        said = [t["content"] for t in row.get("turns") or [] if t.get("role") == "assistant"]
        if said:
            out.setdefault(row["task_id"], []).append(said[-1])
    return out


def candidates(source: Task, replies: list[str], known: list[str]) -> list[Candidate]:
    """The distinct programs among `replies` that define the entry point and differ as a
    tree from `known` (the reference and the task's mutants), most frequent first."""
    seen = {t for t in map(_tree, known) if t is not None}
    counts: Counter[str] = Counter()
    code_of: dict[str, str] = {}
    for reply in replies:
        code = with_prelude(source, extract_code(reply)).strip() + "\n"
        tree = _tree(code)
        if tree is None or tree in seen or not _defines(code, str(source.entry_point)):
            continue
        counts[tree] += 1
        code_of.setdefault(tree, code)
    return [Candidate(code_of[t], n) for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], code_of[kv[0]]))]


def mine(
    tasks: list[Task], replies: dict[str, list[str]], sources: dict[str, Task], *, per_task: int = 3,
    family: str = "train",
) -> tuple[list[Task], Counter[str]]:  # fmt: skip
    """`tasks` with mined mutants added (see the module docstring) and a count of what
    happened to the candidates."""
    why: Counter[str] = Counter()
    out = []
    for task in tasks:
        source = sources.get(str(task.metadata.get("source_task", "")))
        failing = replies.get(source.id, []) if source is not None else []
        if source is None or not failing:
            out.append(task)
            continue
        known = [str(task.reference)] + [m["source"] for m in task.tests["mutants"]]
        pool = candidates(source, failing, known)
        why["candidates"] += len(pool)
        kept, dropped, extra = distinguished(source, pool, crash_kills=False) if pool else ([], Counter(), [])
        why += dropped
        if len(kept) > per_task:
            why["over the cap"] += len(kept) - per_task
            kept = kept[:per_task]
        why["added"] += len(kept)
        if not kept:
            out.append(task)
            continue
        listed = list(task.tests["mutants"]) + [{"id": c.id, "family": family, "source": c.source} for c in kept]
        gold = str(task.metadata.get("reference_tests", "")).splitlines()
        gold += [t for t in extra if t not in gold]
        meta: dict[str, Any] = {**task.metadata, "reference_tests": "\n".join(gold)}
        out.append(with_cover(replace(task, tests={**task.tests, "mutants": listed}, metadata=meta)))
    return out, why


def mine_run(
    run_dir: Path, tasks_source: str, functions_source: str, *, per_task: int = 3, family: str = "train"
) -> tuple[list[Task], Counter[str]]:
    """The test-writing tasks of `tasks_source` with mutants mined from `run_dir`'s
    failing replies to the functions of `functions_source`."""
    tasks = load_tasks(tasks_source)
    sources = {t.id: t for t in load_tasks(functions_source)}
    return mine(tasks, failing_replies(run_dir), sources, per_task=per_task, family=family)
