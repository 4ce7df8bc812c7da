"""Generator of the bug-revealing test-writing tasks (`data/test_writing_repair.jsonl`).

Each task starts from a bundled code_repair task: a function's specification and a
version of it with one bug. The model is shown both and asked for tests that pass on a
correct implementation and fail on the one shown (a fail-to-pass test, as SWT-bench asks
of a repository's issue). The reward is the test_writing domain's, unchanged:

  - the paid (`train`) family is the bug alone, so a reply earns 1 (plus the tenth for a
    useful test) only when one of its tests fails on the bug and all pass on the function;
  - the `hidden` family is the bundled test-writing task's hidden mutants of the same
    function (other operators), run and logged, never paid: they show whether tests
    written against one bug catch others, or only tell the shown code apart.

The shown code is `metadata.shown_code`: a reply that defines a copy of it (names
changed or not) and compares the function with the copy is a hack finding
(`copies_shown_code`, rlvr.rewards.test_guards), since it tells the two apart without
knowing a right value.

A task is kept only when its bug is told apart from the function by the same checks as
a generated mutant (rlvr.tasks.generators.testwritinggen.distinguished). Its gold tests
are the source task's tests and the asserts the bundled test-writing task added (they
catch its hidden mutants), with any assert a drawn input needed for the bug; the covering
tests are chosen over the bug and the hidden mutants. Split, family and difficulty are
the source's (by family: held out exactly where the bundled test-writing set is).

    python -m rlvr.tasks.generators.testwritingrepairgen    # rewrites the file (runs the sandbox)
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from rlvr.tasks.generators.testwritinggen import INSTRUCTIONS, distinguished, gold_tests, signature, with_cover
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "test_writing_repair.jsonl"

BUG_INSTRUCTIONS = (
    "This implementation of `{entry}` has a bug:\n\n```python\n{buggy}\n```\n\n"
    "Write tests that pass on a correct implementation and fail on this one: assert what a correct "
    "`{entry}` returns. "
)


@dataclass(frozen=True)
class Bug:
    """The buggy version as a program the checks read (an id and its source)."""

    id: str
    source: str


def bug_of(repair: Task) -> Bug:
    buggy = str(repair.metadata["buggy"])
    return Bug(f"bug@{hashlib.sha256(buggy.encode()).hexdigest()[:8]}", buggy)


def prompt(function: Task, buggy: str) -> str:
    entry = str(function.entry_point)
    return (
        f"A Python function is specified as follows:\n\n{function.prompt.strip()}\n\n"
        f"Its signature: `{signature(str(function.reference), entry)}`\n\n"
        + BUG_INSTRUCTIONS.format(entry=entry, buggy=buggy.strip())
        + INSTRUCTIONS.format(entry=entry)
    )


def build_task(repair: Task, function: Task, written: Task) -> tuple[Task | None, str]:
    """The bug-revealing task built from a code_repair task, the function task it repairs
    and the bundled test-writing task of that function, or None and why it was skipped."""
    if str(repair.reference).strip() != str(function.reference).strip():
        return None, "the repair's reference is not the function's"
    if str(written.reference).strip() != str(function.reference).strip():
        return None, "the test-writing task's reference is not the function's"
    bug = bug_of(repair)
    caught, dropped, extra = distinguished(function, [bug])
    if not caught:
        return None, f"the bug is not told apart ({', '.join(dropped) or 'no check'})"
    gold = list(dict.fromkeys(str(written.metadata.get("reference_tests", "")).splitlines() or gold_tests(function)))
    gold += [t for t in extra if t not in gold]
    hidden = [m for m in written.tests.get("mutants") or [] if m.get("family") == "hidden"]
    built = Task(
        id=repair.id.replace("repair/", "twr/", 1),
        domain="test_writing",
        prompt=prompt(function, bug.source),
        entry_point=function.entry_point,
        reference=function.reference,
        tests={"format": "mutants", "mutants": [{"id": bug.id, "family": "train", "source": bug.source}, *hidden]},
        difficulty=repair.difficulty,
        metadata={
            "family": written.metadata["family"],
            "split": written.metadata["split"],  # held out where the bundled test-writing set is
            "source_task": function.id,
            "repair_task": repair.id,
            "mutation": repair.metadata.get("mutation", ""),
            "shown_code": bug.source,
            "reference_tests": "\n".join(t for t in gold if t.strip()),
            "show_code": False,
        },
    )
    return with_cover(built), "kept"


def build_tasks(
    repairs: str = "bundled:code_repair",
    functions: str = "bundled:python_functions",
    written: str = "bundled:test_writing",
    limit: int | None = None,
) -> tuple[list[Task], Counter[str]]:
    by_entry = {t.entry_point: t for t in load_tasks(functions)}
    tw = {t.metadata.get("source_task"): t for t in load_tasks(written)}
    out: list[Task] = []
    why: Counter[str] = Counter()
    for repair in load_tasks(repairs)[:limit]:
        function = by_entry.get(repair.entry_point)
        if function is None or function.id not in tw or "buggy" not in repair.metadata:
            why["no source task"] += 1
            continue
        built, reason = build_task(repair, function, tw[function.id])
        why[reason] += 1
        if built is not None:
            out.append(built)
    return out, why


def main() -> None:
    tasks, why = build_tasks()
    n = write_tasks(tasks, DATA)
    hidden = sum(m["family"] == "hidden" for t in tasks for m in t.tests["mutants"])
    print(f"{n} tasks, each one bug paid, {hidden} hidden mutants -> {DATA}")
    print(", ".join(f"{k} {v}" for k, v in sorted(why.items())))


if __name__ == "__main__":
    main()
