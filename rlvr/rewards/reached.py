"""Hidden tests at the reference's reach: for each ladder of ever larger inputs grown from
a task's examples (`rlvr.tasks.reach`), the largest rung the reference answers within
REACH_STEPS line events becomes a test (issue 33: blind set 5 paid nine replies that were
right only below the sizes a fixed draw stops at).

The ladder is walked inside the sandbox, in one fork per ladder: rung after rung, the
reference runs under `sys.settrace` counting line events, and the walk stops at the first
rung that needs more than REACH_STEPS of them (the tracer stops it there), raises, or
returns nothing a test can compare. Work is bounded by counts, not seconds, so a busy
machine reaches the same rung and a run stays the same for its seed; the wall-clock
limit (REACH_SECONDS) only stops a reference whose time goes into C code the tracer does
not see. REACH_STEPS line events take the reference about 20 ms untraced, which leaves a
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
REACH_STEPS = 200_000  # line events the reference may take on a rung
REACH_SECONDS = 5.0  # one ladder's wall-clock limit: the tracer stops it first, but for C code
_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str], tuple[bool, Any]] = {}
_CACHE_MAX = 20_000

_WALK = """
import sys as _rlvr_sys


class _RlvrReach(BaseException):
    pass


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
) -> list[str]:
    """One assert per ladder: the largest rung the reference answers, with its value
    (`exact_value` says which values a test can compare with ==; a finite float is
    compared within `float_tolerance`); none for a ladder whose first rung is already past
    the reference's reach."""
    entry = str(task.entry_point)
    found = ladders(examples, rng, nonneg, exact, fixed)
    if not found:
        return []
    exprs = [f"_rlvr_walk([{', '.join(f'lambda: {entry}({r})' for r in rungs)}], {REACH_STEPS})" for _, rungs in found]
    tests = []
    for (_, rungs), (ok, got) in zip(found, _walked(walk_program(task), exprs, observe), strict=True):
        if not (ok and isinstance(got, list) and len(got) == 2 and type(got[0]) is int and 0 <= got[0] < len(rungs)):
            continue
        call, value = f"{entry}({rungs[got[0]]})", got[1]
        if exact_value(value):
            tests.append(f"assert {call} == {value!r}")
        elif type(value) is float and math.isfinite(value):
            tests.append(f"assert math.isclose({call}, {value!r}, {float_tolerance})")
    return list(dict.fromkeys(tests))


def _walked(program: str, exprs: list[str], observe: Observer) -> list[tuple[bool, Any]]:
    """Each walk's result, from the cache or the sandbox: most ladders are the same every
    step (an example nested or repeated), so a run walks them once."""
    key = hashlib.sha256(program.encode()).hexdigest()
    with _LOCK:
        missing = [e for e in dict.fromkeys(exprs) if (key, e) not in _CACHE]
    if missing:
        got = observe(program, missing)
        with _LOCK:
            if len(_CACHE) > _CACHE_MAX:
                _CACHE.clear()
            _CACHE.update({(key, e): v for e, v in zip(missing, got, strict=True)})
    with _LOCK:
        return [_CACHE[(key, e)] for e in exprs]
