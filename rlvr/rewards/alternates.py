"""Programs that are almost the reference, and the drawn inputs that tell them apart from
it (hidden tests' `kill` feature, `rlvr.rewards.selection`).

The alternates of a function task are its reference's first-order mutants
(`rlvr.tasks.mutate`: an operator flipped, a constant off by one, a statement dropped, …)
and, for a repair task, the buggy program it was made from (`metadata.buggy`). An input
on which an alternate's value differs from the reference's *kills* it: a hidden set that
kills the buggy program cannot be passed by a patch that hides the shown failure and
leaves the bug, and one that kills the reference's mutants asks the places where a
near-miss goes wrong.

All alternates are evaluated inside the sandbox, in the same fork as the reference, one
fork per input: `kill_program` defines each in its own namespace, and `_rlvr_kills(args)`
returns for each whether it differs (an exception counts; so does running past a step
budget of 20 times the reference's own line events on that input, counted with
`sys.settrace`, which stops a mutant that loops without a per-mutant timer). An input on
which the reference itself takes more than REFERENCE_STEPS line events asks none (it
returns None): the work is bounded by counts, not seconds, so a busy machine keeps the
same kills and a run stays the same for its seed. Only that list of booleans leaves the
process.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from rlvr.types import Task

Observer = Callable[[str, list[str]], list[tuple[bool, Any]]]
MAX_ALTERNATES = 48  # per step; a reference with more mutants has a different share asked each step
STEP_FACTOR = 20  # an alternate may take this many times the reference's line events
REFERENCE_STEPS = 5000  # an input the reference takes more line events on asks no alternate (bounded work, not time)

_HELPER = """
import copy as _rlvr_copy
import math as _rlvr_math
import sys as _rlvr_sys


class _RlvrBudget(BaseException):  # past a mutant's own `except Exception`
    pass


def _rlvr_traced(fn, args, limit):
    count = [0]

    def tracer(frame, event, arg):
        count[0] += 1
        if limit is not None and count[0] > limit:
            raise _RlvrBudget()
        return tracer

    _rlvr_sys.settrace(tracer)
    try:
        return fn(*_rlvr_copy.deepcopy(args)), count[0]
    finally:
        _rlvr_sys.settrace(None)


def _rlvr_same(got, want):
    try:
        if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
            return _rlvr_math.isclose(got, want, rel_tol=1e-09, abs_tol=1e-09)
        return bool(got == want)
    except Exception:
        return False


def _rlvr_kills(*args):
    want, steps = _rlvr_traced(_rlvr_ref, args, None)
    if steps > {ref_cap}:
        return None
    limit = {factor} * steps + 1000
    out = []
    for fn in _rlvr_alts:
        if fn is None:
            out.append(False)
            continue
        try:
            got, _ = _rlvr_traced(fn, args, limit)
            out.append(not _rlvr_same(got, want))
        except BaseException:
            out.append(True)
    return out
"""


def buggy_program(task: Task) -> str | None:
    """A repair task's buggy program (`metadata.buggy`) where it differs from the reference."""
    buggy = task.metadata.get("buggy")
    if isinstance(buggy, str) and buggy.strip() and buggy.strip() != str(task.reference or "").strip():
        return buggy
    return None


def alternate_programs(task: Task, *, draw: int) -> list[str]:
    """The buggy program (repair tasks) first, then up to MAX_ALTERNATES - 1 of the
    reference's mutants, a different share for each `draw` (the step's draw seed for the
    task, `rlvr.rewards.hidden_tests.draw_seed`) where it has more."""
    from rlvr.tasks.mutate import MutationError, mutants

    ref = str(task.reference or "")
    buggy = buggy_program(task)
    out: list[str] = [buggy] if buggy is not None else []
    try:
        found = [m.source for m in mutants(ref, family=None)]
    except (MutationError, SyntaxError, ValueError, RecursionError):
        found = []
    random.Random(draw ^ 0x6D75).shuffle(found)
    return out + found[: MAX_ALTERNATES - len(out)]


def kill_program(task: Task, alternates: list[str]) -> str:
    """The sandbox program: the reference (with its prelude), each alternate in its own
    namespace, and `_rlvr_kills`."""
    entry = str(task.entry_point)
    prelude = task.tests.get("prelude")
    pre = prelude.rstrip() + "\n\n" if isinstance(prelude, str) and prelude.strip() else ""
    lines = [pre + str(task.reference or ""), f"_rlvr_ref = {entry}", "_rlvr_alts = []"]
    for src in alternates:
        lines.append(
            "try:\n"
            "    _rlvr_ns = {}\n"
            f"    exec(compile({pre + src!r}, '<alternate>', 'exec'), _rlvr_ns)\n"
            f"    _rlvr_alts.append(_rlvr_ns.get({entry!r}))\n"
            "except BaseException:\n"
            "    _rlvr_alts.append(None)"
        )
    lines.append(f"{entry} = _rlvr_ref")
    return "\n".join(lines) + "\n" + _HELPER.format(factor=STEP_FACTOR, ref_cap=REFERENCE_STEPS)


def kills(task: Task, inputs: list[tuple[Any, ...]], alternates: list[str], observe: Observer) -> list[frozenset[int]]:
    """For each input, the indices of the alternates it kills (empty where the sandbox
    could not say: the expression timed out or the program failed)."""
    if not alternates or not inputs:
        return [frozenset() for _ in inputs]
    exprs = [f"_rlvr_kills({', '.join(repr(a) for a in args)})" for args in inputs]
    out: list[frozenset[int]] = []
    for ok, value in observe(kill_program(task, alternates), exprs):
        if ok and isinstance(value, list) and len(value) == len(alternates):
            out.append(frozenset(j for j, v in enumerate(value) if v is True))
        else:
            out.append(frozenset())
    return out
