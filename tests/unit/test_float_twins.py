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
        ("returns x / 2 rounded to the nearest whole.", True),  # a .5 twin would sit on a rounding tie
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
    # a declared range is the integers the tests may draw; past 2**52 a float cannot hold a half
    assert float_twins("x plus y", [(1, 2)], (False, False), (True, False)) == [(1, 1.5), (1, 2.5)]
    assert float_twins("x plus y", [(10**400,), (2**60,)], (False,)) == []
    assert float_twins("the sum of lst", [([1, 10**400],)], (False,)) == []


def test_a_repair_prompt_is_read_for_its_statement_not_its_code_or_failures() -> None:
    from rlvr.tasks.neighbours import statement

    prompt = (
        "This Python function has a bug. What it should do: `first_element(lst)` returns the first element "
        "of the non-empty list lst. These tests fail:\n- assert first_element([5]) == 5  (IndexError: list "
        "index out of range)\n"
    )
    assert "index" not in statement(prompt) and "returns the first element" in statement(prompt)
    assert float_twins(statement(prompt), [([1, 2],)], (False,)) == [([0.5, 1.5],), ([1.5, 2.5],)]
    assert statement("Write `f(x)` that returns x.") == "Write `f(x)` that returns x."


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
