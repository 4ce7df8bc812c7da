"""Hidden tests at the reference's reach: for each ladder of ever larger inputs grown from
a task's examples (`rlvr.tasks.reach`), the largest rung the reference answers within
REACH_STEPS trace events becomes a test (issue 33: blind set 5 paid nine replies that were
right only below the sizes a fixed draw stops at).

The ladder is walked inside the sandbox, in one fork per ladder (process isolation: a
memo one walk leaves cannot shorten another's): rung after rung, the reference runs
under `sys.settrace` counting its trace events (calls, lines, returns), and the walk
stops at the first rung that needs more than REACH_STEPS of them (the tracer stops it
there), raises, or returns a value the wire cannot carry back (an integer past 4,000
digits, more than 150,000 elements). Work is bounded by counts, not seconds, so a busy
machine reaches the same rung and a run stays the same for its seed; the wall-clock
limit (REACH_SECONDS) only stops a reference whose time goes into C code the tracer does
not see. REACH_STEPS trace events take the reference about 20 ms untraced, which leaves a
reply the sandbox's per-test limit (`sandbox.test_timeout_s`, 2 s) many times over.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
from collections.abc import Callable
from typing import Any

from rlvr.tasks.reach import ladders
from rlvr.types import Task

Observer = Callable[[str, list[str]], list[tuple[bool, Any]]]
REACH_STEPS = 200_000  # trace events (calls, lines, returns) the reference may take on a rung
REACH_SECONDS = 5.0  # one ladder's wall-clock limit: the tracer stops it first, but for C code
MAX_BEYOND_CHARS = 1 << 19  # a drawn rung's test longer than this keeps the fixed rung's (a request stays small)
_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str], tuple[bool, Any]] = {}
_CACHE_MAX = 20_000

_WALK = """
import sys as _rlvr_sys


class _RlvrReach(BaseException):
    pass


def _rlvr_fits(value, budget):
    # what the wire carries back (rlvr.sandbox.wire): integers of at most 4,000 digits,
    # at most 200,000 elements in all; a rung whose value does not fit ends the walk
    stack = [value]
    while stack:
        v = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        if type(v) is int and v.bit_length() > 13000:
            return False
        if isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
    return True


def _rlvr_walk(rungs, cap):
    best = None
    for i, rung in enumerate(rungs):
        count = [0]

        def tracer(frame, event, arg):
            count[0] += 1
            if count[0] > cap:
                raise _RlvrReach()
            return tracer

        _rlvr_sys.settrace(tracer)
        try:
            value = rung()
        except BaseException:
            break
        finally:
            _rlvr_sys.settrace(None)
        if count[0] > cap or not _rlvr_fits(value, 150000):  # past the budget (a reference that caught the stop)
            break
        best = [i, value]
    return best
"""


def walk_program(task: Task) -> str:
    """The reference (after its prelude) and the walker."""
    prelude = task.tests.get("prelude")
    pre = prelude.rstrip() + "\n\n" if isinstance(prelude, str) and prelude.strip() else ""
    return pre + str(task.reference or "") + "\n" + _WALK


def reached_tests(
    task: Task,
    examples: list[tuple[Any, ...]],
    rng: random.Random,
    observe: Observer,
    *,
    nonneg: tuple[bool, ...] = (),
    exact: bool = False,
    fixed: tuple[bool, ...] = (),
    exact_value: Callable[[Any], bool],
    float_tolerance: str,
    cache: bool = True,
) -> list[str]:
    """One assert per ladder: the largest rung the reference answers (its drawn rung past
    the fixed ones where it answers that too), with its value
    (`exact_value` says which values a test can compare with ==; a finite float is
    compared within `float_tolerance`); none for a ladder whose first rung is already past
    the reference's reach. `cache`: keep the walks for later steps (the sandbox's
    observer; never a stand-in's)."""
    entry = str(task.entry_point)
    found = ladders(examples, rng, nonneg, exact, fixed)
    if not found:
        return []
    program = walk_program(task)
    best = _best(program, entry, [lad.rungs for lad in found], observe, cache)
    # a ladder whose top fixed rung was answered walks its drawn rung past it, alone: the
    # fixed walks stay cached across steps, and the drawn one (new each step: never
    # cached, where it would only push out walks that come again) costs only where it counts
    past = [i for i, (lad, b) in enumerate(zip(found, best, strict=True)) if lad.beyond and b and b[0] == lad.rungs[-1]]
    if past:
        further = _best(program, entry, [[str(found[i].beyond)] for i in past], observe, cache=False)
        for i, got in zip(past, further, strict=True):
            test = _test(entry, got, exact_value, float_tolerance)
            if test and len(test) <= MAX_BEYOND_CHARS:  # else the fixed rung's test stays
                best[i] = got
    tests = [_test(entry, got, exact_value, float_tolerance) for got in best]
    return list(dict.fromkeys(t for t in tests if t))


def _test(entry: str, got: tuple[str, Any] | None, exact_value: Callable[[Any], bool], tolerance: str) -> str | None:
    """The assert for a rung and the reference's value there; None where the value is no
    test (a float that is not finite, a value whose repr does not read back)."""
    if got is None:
        return None
    call, value = f"{entry}({got[0]})", got[1]
    if exact_value(value):
        return f"assert {call} == {value!r}"
    if type(value) is float and math.isfinite(value):
        return f"assert math.isclose({call}, {value!r}, {tolerance})"
    return None


def _best(
    program: str, entry: str, walks: list[list[str]], observe: Observer, cache: bool
) -> list[tuple[str, Any] | None]:
    """For each walk (rungs ascending): the largest rung the reference answers and its
    value, or None where it answers none."""
    exprs = [f"_rlvr_walk([{', '.join(f'lambda: {entry}({r})' for r in rungs)}], {REACH_STEPS})" for rungs in walks]
    out: list[tuple[str, Any] | None] = []
    for rungs, (ok, got) in zip(walks, _walked(program, exprs, observe, cache), strict=True):
        answered = ok and isinstance(got, list) and len(got) == 2 and type(got[0]) is int and 0 <= got[0] < len(rungs)
        out.append((rungs[got[0]], got[1]) if answered else None)
    return out


def _walked(program: str, exprs: list[str], observe: Observer, cache: bool = True) -> list[tuple[bool, Any]]:
    """Each walk's result, from the cache or the sandbox: most ladders are the same every
    step (an example nested or repeated), so a run walks them once. Only walks that came
    back are cached (one stopped by the wall clock on a busy machine is asked again), and
    only with the sandbox's observer (`cache`)."""
    key = hashlib.sha256(program.encode()).hexdigest()
    keys = {e: hashlib.sha256(e.encode()).hexdigest() for e in exprs}
    found: dict[str, tuple[bool, Any]] = {}
    with _LOCK:
        for e in exprs:
            hit = _CACHE.get((key, keys[e])) if cache else None
            if hit is not None:
                found[e] = hit
    missing = [e for e in dict.fromkeys(exprs) if e not in found]
    if missing:
        got = observe(program, missing)
        found.update(zip(missing, got, strict=True))
        if cache:
            with _LOCK:
                for e, v in zip(missing, got, strict=True):
                    if v[0]:
                        if len(_CACHE) >= _CACHE_MAX:
                            _CACHE.pop(next(iter(_CACHE)))
                        _CACHE[(key, keys[e])] = v
    return [found[e] for e in exprs]
