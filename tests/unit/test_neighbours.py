"""rlvr.tasks.neighbours: edits of an example call, fixed by the generator's seed."""

from __future__ import annotations

import random
import string

from rlvr.tasks.neighbours import neighbour


def _many(args: tuple, nonneg: tuple[bool, ...] = (), count: int = 400) -> list[tuple]:  # type: ignore[type-arg]
    rng = random.Random(5)
    return [neighbour(args, rng, nonneg) for _ in range(count)]


def test_the_same_seed_gives_the_same_neighbours_and_most_differ_from_the_example() -> None:
    a = [neighbour(("([])", 3), random.Random(s)) for s in range(50)]
    assert a == [neighbour(("([])", 3), random.Random(s)) for s in range(50)]
    assert sum(x != ("([])", 3) for x in a) >= 40


def test_string_edits_keep_the_structure_and_reach_the_classic_misnesting() -> None:
    got = {s for (s,) in _many(("([])",))}
    assert "([)]" in got  # two characters swapped
    assert all(set(s) <= set("()[]{}") for s in got)  # no letter where none was; a bracket may change kind
    letters = {c for (s,) in _many(("wxyz",)) for c in s}
    assert letters - set("wxyz") and letters <= set(string.ascii_lowercase)  # another letter of the same case


def test_integer_pairs_get_common_factors_and_nonnegative_arguments_stay_so() -> None:
    pairs = _many((4, 6), (True, True))
    assert all(a >= 0 and b >= 0 for a, b in pairs)
    assert any(a % k == 0 and b % k == 0 and a // k == 4 and b // k == 6 for a, b in pairs for k in range(2, 20))
    assert any(a < 0 for (a,) in _many((4,)))  # an argument with no such promise may turn negative


def test_list_edits_reorder_grow_and_shrink() -> None:
    got = [xs for (xs,) in _many(([3, 1, 2],))]
    assert [1, 2, 3] in got and [2, 1, 3] in got
    assert any(len(xs) == 2 for xs in got) and any(len(xs) == 4 for xs in got)
    assert neighbour(([],), random.Random(0)) == ([],)  # no element to copy the kind of
    assert neighbour((True,), random.Random(0)) == (False,)


def test_reordering_shuffles_one_sequence_argument_and_edits_the_others() -> None:
    from rlvr.tasks.neighbours import reordered

    got = {reordered(("([])", 7), random.Random(s)) for s in range(60)}
    assert all(sorted(s) == sorted("([])") and k == 7 for s, k in got)
    assert ("([)]", 7) in got and ("])[(", 7) in got
    lists = {tuple(xs) for (xs,) in (reordered(([1, 2, 3],), random.Random(s)) for s in range(60))}
    assert len(lists) == 6  # every order of three elements
    assert reordered((4, 6), random.Random(0)) != (4, 6)  # no sequence: an edit instead


def test_a_replaced_character_keeps_its_kind() -> None:
    from rlvr.tasks.neighbours import _same_class

    rng = random.Random(3)
    text = "(a[1]{B})"
    for c, kind in (("(", "([{"), ("}", ")]}"), ("a", string.ascii_lowercase), ("B", string.ascii_uppercase)):
        got = {_same_class(c, rng, text) for _ in range(200)}
        assert got <= set(kind) and len(got) > 1  # an opening bracket for an opening bracket, …
    assert {_same_class("1", rng, text) for _ in range(200)} == set(string.digits)


def test_an_integer_is_drawn_negative_unless_the_prompt_says_it_is_not() -> None:
    from rlvr.tasks.neighbours import said_nonnegative

    said = said_nonnegative
    assert said("returns the sum of all positive multiples of 3 that are smaller than n.", ["n"]) == (False,)
    assert said("returns n! for a non-negative integer n (0! is 1)", ["n"]) == (True,)
    assert said("the greatest common divisor of the positive integers a and b.", ["a", "b"]) == (True, True)
    assert said("the positive integers a, b and c", ["a", "b", "c"]) == (True, True, True)
    assert said("Given `k` >= 0 and a list xs", ["xs", "k"]) == (False, True)
    assert said("for 0 <= n < 100", ["n"]) == (True,) and said("n is at least 1", ["n"]) == (True,)
    assert said("returns the n-th triangular number", ["n"]) == (True,)
    assert said("returns the number of digits of the integer nn", ["n"]) == (False,)  # another name


def test_signs_follow_the_prompt_for_integers_and_the_examples_for_lists() -> None:
    from rlvr.rewards.hidden_tests import _signs
    from rlvr.types import Task

    def task(prompt: str) -> Task:
        ref = "def f(n, xs):\n    return n + sum(xs)\n"
        tests = {"format": "assert", "tests": ["assert f(1, [2]) == 3"]}
        return Task(id="t", domain="python", prompt=prompt, tests=tests, reference=ref, entry_point="f")

    examples = [(1, [2]), (5, [0, 3])]
    assert _signs(task("returns n plus the sum of xs"), examples) == (False, True)
    assert _signs(task("returns n plus the sum of xs, for a positive integer n"), examples) == (True, True)
    assert _signs(task("returns n plus the sum of xs"), [(-1, [2])]) == (False, True)
