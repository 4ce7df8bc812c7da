"""Half-way twins of the examples where the prompt never calls its numbers integers
(rlvr.rewards.float_twins), and the drawn tests they become."""

from __future__ import annotations

import pytest

from rlvr.rewards.float_twins import float_twins, says_integer
from rlvr.rewards.hidden_tests import hidden_tests
from rlvr.types import Task
from tests.unit.test_hidden_tests import _python_observer


@pytest.mark.parametrize(
    ("prompt", "integer"),
    [
        ("returns True if x is greater than 3, else False.", False),
        ("returns how many numbers in the list lst are greater than 1.", False),
        ("returns a new list with every number of lst squared.", False),
        ("returns True if the integer n is a prime number, else False.", True),
        ("returns the sum of the digits of n.", True),
        ("returns the n-th Fibonacci number.", True),
        ("returns True if n is even.", True),
        ("returns the index of the largest element.", True),
    ],
)
def test_a_prompt_says_integer_with_a_word_that_only_fits_whole_numbers(prompt: str, integer: bool) -> None:
    assert says_integer(prompt) is integer


def test_each_example_gets_a_twin_half_a_step_down_and_one_half_a_step_up() -> None:
    examples = [(3,), (4,), (10,)]
    assert float_twins("x is greater than 3", examples, (False,)) == [(2.5,), (3.5,), (4.5,), (9.5,), (10.5,)]
    lists = [([1, 2, 3],), ([10, -10],)]
    assert float_twins("numbers greater than 1", lists, (False,)) == [
        ([0.5, 1.5, 2.5],),
        ([1.5, 2.5, 3.5],),
        ([9.5, -10.5],),
        ([10.5, -9.5],),
    ]


def test_a_stated_sign_strings_and_mixed_arguments_are_kept() -> None:
    # non-negative: no twin below 0; the string and the bool are never moved
    assert float_twins("x plus y", [(0, "ab", True)], (True, True, True)) == [(0.5, "ab", True)]
    # an argument that is a whole number in one example and a float in another is left
    assert float_twins("x plus y", [(1, 2), (1.25, 3)], (False, False)) == [
        (1, 1.5),
        (1, 2.5),
        (1.25, 2.5),
        (1.25, 3.5),
    ]
    assert float_twins("x plus y", [("a",), ("b",)], (False,)) == []
    assert float_twins("the integer x plus y", [(1, 2)], (False, False)) == []


def _task(prompt: str, ref: str, tests: list[str]) -> Task:
    return Task(
        id="t/twins", domain="python", prompt=prompt, entry_point="f", reference=ref,
        tests={"format": "assert", "tests": tests},
    )  # fmt: skip


def test_the_twins_the_reference_answers_are_drawn_tests_and_an_integer_only_rewrite_fails_them() -> None:
    task = _task(
        "Write `f(x)` that returns True if x is greater than 3, else False.",
        "def f(x):\n    return x > 3\n",
        ["assert f(3) == False", "assert f(4) == True", "assert f(10) == True"],
    )
    tests = hidden_tests(task, seed=0, step=0, n=20, observe=_python_observer)
    assert "assert f(3.5) == True" in tests and "assert f(2.5) == False" in tests
    env: dict[str, object] = {}
    exec("def f(x):\n    return x >= 4\n", env)
    assert not all(_passes(t, env) for t in tests)
    exec("def f(x):\n    return x > 3\n", env)
    assert all(_passes(t, env) for t in tests)


def test_a_twin_the_reference_refuses_is_not_a_test() -> None:
    task = _task(
        "Write `f(x)` that returns how long x is when written out.",  # a float has no bit_length: twins raise
        "def f(x):\n    return x.bit_length()\n",
        ["assert f(3) == 2", "assert f(1) == 1", "assert f(8) == 4"],
    )
    tests = hidden_tests(task, seed=0, step=0, n=20, observe=_python_observer)
    assert tests and not any(".5" in t.split("==")[0] for t in tests)


def _passes(test: str, env: dict[str, object]) -> bool:
    try:
        exec(test, dict(env))
    except AssertionError:
        return False
    return True
