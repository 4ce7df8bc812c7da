"""Generator of the bundled test-writing tasks (`data/test_writing.jsonl`).

Each task starts from a bundled Python function task (assert tests, a reference): the
model is shown its specification and signature and asked for tests. Its mutants come
from rlvr.tasks.mutate (the one mutation engine), both families: `train` (paid) and
`hidden` (other operators, logged only). A mutant is kept only if something tells it
apart from the reference:
  1. the source task's tests (visible and held-out) run against it in the sandbox and one
     fails, or
  2. on inputs drawn for the task (rlvr.rewards.hidden_tests.draw_inputs) its value (or
     its exception) differs from the reference's.
Mutants no check tells apart are dropped as presumed equivalent, and so are mutants that
time out on the source task's tests (every reply would spend the per-test limit on
them). At most MAX_TRAIN and MAX_HIDDEN are kept per task (a seeded draw), bounding a
reply's sandbox cost; a task with no train mutant left is skipped. The source task's
tests, with an assert for each mutant only a drawn input told apart, are kept as
`metadata.reference_tests` (the gold tests: they catch every kept mutant; the domain's
bench's upper line). The fewest of them that still catch every kept mutant (a greedy set
cover, `metadata.covering_tests`) are the domain's reference reply: what a warm start
learns to write, short enough for a reply's token budget, every test catching a mutant no
earlier one did. The split is fixed by family (`metadata.split`, a hash of the family
name): no function of a held-out family is trained on.

    python -m rlvr.tasks.generators.testwritinggen    # rewrites the file (runs the sandbox)
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any, Protocol, TypeVar

from rlvr.rewards.hidden_tests import NotDrawable, draw_inputs
from rlvr.sandbox import execute_many
from rlvr.sandbox.api import SandboxFailure, observe
from rlvr.sandbox.executor import Limits
from rlvr.tasks import pyparse
from rlvr.tasks.loader import BUNDLED_DIR, is_eval, load_tasks, write_tasks
from rlvr.tasks.mutate import Mutant, MutationError, mutants
from rlvr.types import RunStatus, Task, TestStatus

DATA = BUNDLED_DIR / "test_writing.jsonl"
MAX_TRAIN, MAX_HIDDEN = 10, 5
SEED = 5
EVAL_FRACTION = 0.2
TEST_LIMIT_S = 1.0
LIMITS = Limits(timeout_s=20.0, test_timeout_s=TEST_LIMIT_S)
REFERENCE_LIMITS = Limits(timeout_s=20.0, test_timeout_s=TEST_LIMIT_S / 4)
NO_VERDICT = ("timeout", "no result")  # observe's reasons that say nothing about the program

INSTRUCTIONS = (
    "Write tests for `{entry}`: assert statements, or test_ functions taking no arguments, that call it "
    "and check what it returns. It is already defined; do not define it. Good tests pass on a correct "
    "implementation and fail on wrong ones: check boundaries, empty and extreme inputs. Tests that fail "
    "on a correct implementation cost reward."
)


def signature(reference: str, entry: str) -> str:
    tree = pyparse.parse(reference)
    for node in tree.body:
        if getattr(node, "name", None) == entry:
            line = reference.splitlines()[node.lineno - 1].strip()
            return line.removesuffix(":")
    return f"def {entry}(...)"


def prompt(task: Task) -> str:
    entry = str(task.entry_point)
    return (
        f"A Python function is specified as follows:\n\n{task.prompt.strip()}\n\n"
        f"Its signature: `{signature(str(task.reference), entry)}`\n\n" + INSTRUCTIONS.format(entry=entry)
    )


def gold_tests(task: Task) -> list[str]:
    return [str(t) for t in (task.tests.get("tests") or []) + (task.tests.get("held_out") or [])]


class Program(Protocol):
    """A mutant as the checks read it: an id and its source (a generated Mutant, or a
    mined failing solution)."""

    @property
    def id(self) -> str: ...

    @property
    def source(self) -> str: ...


P = TypeVar("P", bound=Program)


def distinguished(task: Task, pool: list[P], *, crash_kills: bool = True) -> tuple[list[P], Counter[str], list[str]]:
    """The mutants some check tells apart from the reference (see the module docstring),
    why the others were dropped, and for those only a drawn input tells apart, an assert
    on that input with the reference's value (added to the gold tests, so that they catch
    every kept mutant). `crash_kills` False drops a mutant whose program does not run
    (a mined solution that crashes before its tests would be caught by any test)."""
    dropped: Counter[str] = Counter()
    tests = {"format": "assert", "tests": gold_tests(task)}
    results = execute_many([(m.source, tests) for m in pool], LIMITS, workers=2)
    caught, unsure, extra = [], [], []
    for m, r in zip(pool, results, strict=True):
        if r.status is RunStatus.SANDBOX_ERROR:
            raise SandboxFailure(f"{task.id}: {m.id}: the sandbox failed")
        if r.status is RunStatus.TIMEOUT or any(t.status is TestStatus.TIMEOUT for t in r.tests):
            dropped["times out"] += 1
        elif r.status is not RunStatus.OK and not crash_kills:
            dropped["does not run"] += 1
        elif r.status is not RunStatus.OK or r.passed < r.total:
            caught.append(m)
        else:
            unsure.append(m)
    if unsure:
        try:
            # the draws the shipped set was built from (before inputs of a known shape): a
            # drawer change would otherwise change which mutants the bundled tasks keep
            inputs = draw_inputs(task, seed=SEED, step=0, shaped_inputs=False)
        except NotDrawable:
            inputs = []
        calls = [f"{task.entry_point}({', '.join(repr(a) for a in args)})" for args in inputs]
        # the reference's values within a quarter of the per-test limit (the domain's rule
        # for a timeout to count as a kill): a slow input would make a flaky gold test
        want = observe(str(task.reference), calls, REFERENCE_LIMITS) if calls else []
        for m in unsure:
            got = observe(m.source, calls, LIMITS) if calls else []
            telling = [i for i, (a, b) in enumerate(zip(want, got, strict=True)) if _asserted_apart(a, b)]
            if telling:
                caught.append(m)
                extra.append(f"assert {calls[telling[0]]} == {want[telling[0]][1]!r}")
            else:
                dropped["presumed equivalent"] += 1
    order = {m.id: i for i, m in enumerate(pool)}
    return sorted(caught, key=lambda m: order[m.id]), dropped, list(dict.fromkeys(extra))


def covering_tests(task: Task) -> list[str]:
    """The fewest of a test-writing task's gold tests (`metadata.reference_tests`) that
    catch every one of its mutants, both families: a greedy set cover (most mutants not yet
    caught first, then the shorter test, then gold order), tests that the rest make
    redundant removed, in the order chosen, so each catches a mutant no earlier one does.
    A test fails, errors or times out on a mutant to catch it; a mutant that does not load
    is caught by any test; a test the reference does not pass is not chosen. Raises
    ValueError when the gold tests miss a mutant."""
    gold = list(dict.fromkeys(str(task.metadata.get("reference_tests", "")).splitlines()))
    gold = [t for t in gold if t.strip()]
    mutants = task.tests.get("mutants") or []
    programs = [str(task.reference)] + [m["source"] for m in mutants]
    results = execute_many([(p, {"format": "assert", "tests": gold}) for p in programs], LIMITS, workers=2)
    ref, results = results[0], results[1:]
    if ref.status is RunStatus.SANDBOX_ERROR:
        raise SandboxFailure(f"{task.id}: the reference: the sandbox failed")
    passing = {t.name for t in ref.tests if t.status is TestStatus.PASSED} if ref.status is RunStatus.OK else set()
    gold = [t for t in gold if t in passing]  # a test the reference fails is no test of a mutant
    catches: list[set[int]] = [set() for _ in gold]
    for j, (m, r) in enumerate(zip(mutants, results, strict=True)):
        if r.status is RunStatus.SANDBOX_ERROR:
            raise SandboxFailure(f"{task.id}: {m['id']}: the sandbox failed")
        verdict = {t.name: t.status for t in r.tests}
        for i, test in enumerate(gold):
            if r.status is not RunStatus.OK or verdict.get(test, TestStatus.ERROR) is not TestStatus.PASSED:
                catches[i].add(j)
    missed = set(range(len(mutants))) - set().union(*catches)
    if missed:
        names = ", ".join(mutants[j]["id"] for j in sorted(missed))
        raise ValueError(f"{task.id}: the gold tests catch no failure of {names}")
    chosen = cover(catches, [len(t) for t in gold])
    return [gold[i] for i in chosen]


def cover(catches: list[set[int]], sizes: list[int]) -> list[int]:
    """Greedy set cover: indices of `catches` whose union is the union of all, picking the
    set with the most members not yet covered (then the smaller size, then the lower
    index), then dropping, last chosen first, any the others make redundant. In the order
    chosen, each set covers a member no earlier one does."""
    everything: set[int] = set().union(*catches)
    chosen: list[int] = []
    left = set(everything)
    while left:
        best = min(range(len(catches)), key=lambda i: (-len(catches[i] & left), sizes[i], i))
        chosen.append(best)
        left -= catches[best]
    for i in reversed(list(chosen)):
        rest = [k for k in chosen if k != i]
        if set().union(*(catches[k] for k in rest)) >= everything:
            chosen = rest
    return chosen


def _literal(observed: tuple[bool, Any]) -> bool:
    """A value the reference returned whose repr reads back as itself (so it can be asserted)."""
    if not observed[0]:
        return False
    try:
        back = pyparse.literal(repr(observed[1]))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return bool(back == observed[1] and type(back) is type(observed[1]))


def _asserted_apart(want: tuple[bool, Any], got: tuple[bool, Any]) -> bool:
    """Whether `assert call == <the reference's value>` fails on the mutant: the reference
    returned a literal and the mutant raised, or returned a value that is not == to it. A
    value equal but of another type (1.0 for 1, True for 1) is not told apart: such an
    assert would pass on the mutant, and a tie broken toward the other operand is no bug.
    Nor is a mutant that ran out of time where the reference did not."""
    if not _literal(want):
        return False
    if not got[0]:
        return got[1] not in NO_VERDICT  # a slower mutant is not told apart: its verdict is the load's
    try:
        return bool(got[1] != want[1])
    except Exception:  # a value whose comparison raises is told apart by the assert too
        return True


def build_task(task: Task) -> tuple[Task | None, Counter[str]]:
    """The test-writing task built from one Python function task (None when no train mutant
    is left), and why mutants were dropped. A pure function of the task (its own seeded
    draw), so any task can be rebuilt alone."""
    ref, entry = str(task.reference), str(task.entry_point)
    rng = random.Random(f"{SEED}:{task.id}")
    try:
        pool = {fam: mutants(ref, family=fam, functions=None) for fam in ("train", "hidden")}
    except MutationError:
        return None, Counter({"reference does not parse": 1})
    kept: dict[str, list[Mutant]] = {}
    why: Counter[str] = Counter()
    gold = gold_tests(task)
    for fam, cap in (("train", MAX_TRAIN), ("hidden", MAX_HIDDEN)):
        good, dropped, extra = distinguished(task, pool[fam]) if pool[fam] else ([], Counter(), [])
        why += dropped
        kept[fam] = sorted(rng.sample(good, cap), key=good.index) if len(good) > cap else good
        gold += [t for t in extra if t not in gold]
    if not kept["train"]:
        return None, why + Counter({"no train mutant": 1})
    family = str(task.metadata.get("family", task.id))
    listed = [{"id": m.id, "family": fam, "source": m.source} for fam in ("train", "hidden") for m in kept[fam]]
    built = Task(
        id=task.id.replace("py/", "tw/", 1),
        domain="test_writing",
        prompt=prompt(task),
        entry_point=entry,
        reference=ref,
        tests={"format": "mutants", "mutants": listed},
        difficulty=min(10, 1 + len(kept["train"]) // 2),
        metadata={
            "family": family,
            # held out by family, as every domain is: tests learned for add_2 are not
            # evaluated on add_3
            "split": "eval" if is_eval(family, EVAL_FRACTION) else "train",
            "source_task": task.id,
            "reference_tests": "\n".join(gold),
            "show_code": False,
        },
    )
    return with_cover(built), why


def with_cover(task: Task) -> Task:
    """The task with its `metadata.covering_tests` (re)computed from its gold tests and mutants."""
    return dataclasses.replace(task, metadata={**task.metadata, "covering_tests": "\n".join(covering_tests(task))})


def build_tasks(source: str = "bundled:python_functions", limit: int | None = None) -> tuple[list[Task], Counter[str]]:
    out: list[Task] = []
    why: Counter[str] = Counter()
    for task in load_tasks(source)[:limit]:
        if task.tests.get("format") != "assert" or not task.reference or not task.entry_point:
            continue
        built, dropped = build_task(task)
        why += dropped
        if built is not None:
            out.append(built)
    return out, why


def main() -> None:
    tasks, why = build_tasks()
    n = write_tasks(tasks, DATA)
    counts = Counter(m["family"] for t in tasks for m in t.tests["mutants"])
    print(f"{n} tasks, {counts['train']} train and {counts['hidden']} hidden mutants -> {DATA}")
    print("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(why.items())))


if __name__ == "__main__":
    main()
