"""The arguments' state after a call is a test where the reference says what it must be
(rlvr.rewards.argument_state)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rlvr.rewards.argument_state import is_state_test, stance, state_call, state_test
from rlvr.rewards.hidden_tests import _exact
from tests.unit.test_hidden_tests import _python_observer


def _values(reference: str) -> Callable[[list[str]], list[tuple[bool, Any]]]:
    return lambda exprs: _python_observer(reference, exprs)


def _passes(program: str, test: str) -> bool:
    env: dict[str, Any] = {}
    exec(program, env)
    try:
        exec(test, env)
    except AssertionError:
        return False
    return True


SQUARE_NEW = "def f(xs):\n    return [x * x for x in xs]\n"
SQUARE_IN_PLACE = "def f(xs):\n    for i, x in enumerate(xs):\n        xs[i] = x * x\n    return xs\n"


def test_the_state_call_evaluates_to_the_arguments_after_the_call() -> None:
    env: dict[str, Any] = {}
    exec(SQUARE_IN_PLACE, env)
    assert state_call("f", ([1, 2, 3],)) == "(lambda _a: (f(*_a), _a)[1])(([1, 2, 3],))"
    assert eval(state_call("f", ([1, 2, 3],)), env) == ([1, 4, 9],)


def test_a_reference_that_returns_a_new_list_fails_a_program_that_changes_the_callers() -> None:
    test = state_test("f", [([2],), ([1, 2, 3],), (5,)], _values(SQUARE_NEW), _exact, "keep")
    assert test == "assert (lambda _a: (f(*_a), _a)[1])(([1, 2, 3],)) == ([1, 2, 3],)"  # the biggest input
    assert test is not None and is_state_test(test)
    assert _passes(SQUARE_NEW, test) and not _passes(SQUARE_IN_PLACE, test)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("returns a new list with every number of lst squared.", "keep"),
        ("returns a copy of lst, sorted.", "keep"),
        ("returns the largest value, without modifying lst.", "keep"),
        ("sorts lst in place and returns nothing.", "change"),
        ("returns lst rotated left by 1 positions.", None),  # either way is right: no test
        ("returns the largest number in the list.", None),
    ],
)
def test_the_statement_says_whether_the_arguments_must_stay_or_change(text: str, said: str | None) -> None:
    assert stance(text) == said


def test_no_test_where_the_statement_is_silent_or_the_reference_does_other_than_it_says() -> None:
    rotate_in_place = "def f(xs):\n    xs.append(xs.pop(0))\n    return xs\n"
    assert state_test("f", [([1, 2, 3],)], _values(rotate_in_place), _exact, None) is None
    # a reference that changes the list where the statement asks for a new one: not a test
    assert state_test("f", [([1, 2, 3],)], _values(SQUARE_IN_PLACE), _exact, "keep") is None
    assert state_test("f", [([1, 2, 3],)], _values(SQUARE_NEW), _exact, "change") is None


def test_a_reference_that_works_in_place_asks_for_the_same_change() -> None:
    ref = "def f(xs, k):\n    xs.sort()\n    xs.append(k)\n"
    test = state_test("f", [([3, 1, 2], 9)], _values(ref), _exact, "change")
    assert test == "assert (lambda _a: (f(*_a), _a)[1])(([3, 1, 2], 9)) == ([1, 2, 3, 9], 9)"
    assert _passes(ref, test)
    assert not _passes("def f(xs, k):\n    return sorted(xs) + [k]\n", test)


def test_dicts_and_nested_lists_count_and_plain_values_do_not() -> None:
    ref = "def f(d):\n    return sorted(d)\n"
    test = state_test("f", [({"b": [1], "a": [2, 3]},)], _values(ref), _exact, "keep")
    assert test is not None and _passes(ref, test)
    assert not _passes("def f(d):\n    d.pop('a')\n    return ['a', 'b']\n", test)
    nothing = _values("def f(x, s):\n    return x\n")
    assert state_test("f", [(1, "abc"), (2, (3, 4))], nothing, _exact, "keep") is None  # nothing to change
    assert state_test("f", [([],)], _values("def f(xs):\n    return 0\n"), _exact, "keep") is None  # empty
    assert state_test("f", [], nothing, _exact, "keep") is None


def test_a_state_the_reference_leaves_unreadable_or_a_failing_reference_gives_no_test() -> None:
    floats = "def f(xs):\n    xs.append(0.5)\n    return 1\n"  # a float in a container: not compared exactly
    assert state_test("f", [([1],)], _values(floats), _exact, "change") is None
    assert state_test("f", [([1],)], _values("def f(xs):\n    raise ValueError\n"), _exact, "keep") is None
