"""rlvr.rewards.alternates: the reference's mutants and a repair task's buggy program, and
which inputs kill them, evaluated in this process by a stand-in for the sandbox."""

from __future__ import annotations

import time
from typing import Any

from rlvr.rewards.alternates import MAX_ALTERNATES, alternate_programs, kill_program, kills
from rlvr.types import Task
from tests.unit.test_hidden_tests import _python_observer

REF = "def f(x):\n    return x > 10\n"


def _task(ref: str = REF, **metadata: Any) -> Task:
    spec = {"format": "assert", "tests": ["assert f(0) == False", "assert f(11) == True"]}
    return Task(id="t/1", domain="python", prompt="p", tests=spec, entry_point="f", reference=ref, metadata=metadata)


def test_a_repair_tasks_buggy_program_comes_first_then_the_references_mutants() -> None:
    buggy = "def f(x):\n    return x >= 10\n"
    alts = alternate_programs(_task(buggy=buggy), draw=0)
    assert alts[0] == buggy and len(alts) <= MAX_ALTERNATES
    assert "def f(x):\n    return x >= 10\n" in alts[1:] or "def f(x):\n    return x > 11\n" in alts[1:]
    assert alternate_programs(_task(), draw=7) == alternate_programs(_task(), draw=7)
    assert alternate_programs(_task(ref="def f(x) return"), draw=0) == []  # does not parse: none


def test_an_input_kills_the_alternates_whose_value_differs() -> None:
    alts = [
        "def f(x):\n    return x >= 10\n",  # differs at 10 only
        "def f(x):\n    return 1 / (x - 3) > 0 and x > 10\n",  # raises at 3
        "def f(x):\n    return x > 10\n",  # the same as the reference
    ]
    got = kills(_task(), [(10,), (3,), (20,)], alts, _python_observer)
    assert got == [frozenset({0}), frozenset({1}), frozenset()]
    assert kills(_task(), [(1,)], [], _python_observer) == [frozenset()]


def test_an_alternate_that_loops_is_stopped_by_its_step_budget_and_counts_as_killed() -> None:
    loops = "def f(x):\n    while True:\n        x += 1\n"
    start = time.monotonic()
    assert kills(_task(), [(5,), (50,)], [loops, REF], _python_observer) == [frozenset({0}), frozenset({0})]
    assert time.monotonic() - start < 5


def test_the_program_keeps_the_reference_under_its_name_and_a_broken_alternate_never_kills() -> None:
    code = kill_program(_task(), ["def f(x) return", "def g(x):\n    return 0\n"])
    env: dict[str, Any] = {}
    exec(code, env)
    assert env["f"](11) is True and env["_rlvr_kills"](11) == [False, False]


def test_an_input_the_reference_works_long_on_asks_no_alternate() -> None:
    from rlvr.rewards.alternates import REFERENCE_STEPS

    ref = "def f(x):\n    t = 0\n    for i in range(x):\n        t += i\n    return t > 10\n"
    wrong = "def f(x):\n    return False\n"
    small, large = (5,), (REFERENCE_STEPS,)  # about 2 and 2 * REFERENCE_STEPS line events
    assert kills(_task(ref), [small, large], [wrong], _python_observer) == [frozenset(), frozenset()]
    assert kills(_task(ref), [(6,)], [wrong], _python_observer) == [frozenset({0})]  # 15 > 10: killed
