"""The test-writing generator's pure parts (rlvr.tasks.generators.testwritinggen): the
greedy set cover that picks the fewest gold tests catching every mutant, and the rule for
when a drawn input's assert tells a mutant apart. Checked against hand-worked cases."""

from __future__ import annotations

import pytest

from rlvr.tasks.generators.testwritinggen import _asserted_apart, cover


def test_the_cover_takes_the_widest_test_first_and_the_shorter_on_a_tie() -> None:
    # t0 catches {0, 1}, t1 {2}, t2 {2}, t3 {3}: t0 first; t1 and t2 tie on count, t2 is shorter
    assert cover([{0, 1}, {2}, {2}, {3}], [10, 30, 20, 30]) == [0, 2, 3]


def test_the_cover_breaks_an_equal_tie_by_gold_order() -> None:
    assert cover([{0}, {0}], [5, 5]) == [0]


def test_a_test_the_later_ones_make_redundant_is_dropped() -> None:
    # greedy takes C = {1,2,3,4} first, then A = {1,2,5} for 5 and B = {3,4,6} for 6;
    # A and B together catch everything C does, so C goes
    c, a, b = {1, 2, 3, 4}, {1, 2, 5}, {3, 4, 6}
    assert cover([a, b, c], [1, 1, 1]) == [0, 1]


def test_each_chosen_test_catches_a_mutant_no_earlier_one_does() -> None:
    sets = [{0, 1, 2}, {2, 3}, {3, 4, 5}, {5, 6}, {0, 6}, {1, 4}]
    chosen = cover(sets, [1] * len(sets))
    seen: set[int] = set()
    for i in chosen:
        assert sets[i] - seen
        seen |= sets[i]
    assert seen == set().union(*sets)


def test_nothing_to_cover_chooses_nothing() -> None:
    assert cover([set(), set()], [1, 1]) == []


@pytest.mark.parametrize(
    ("want", "got", "apart"),
    [
        ((True, 3), (True, 4), True),
        ((True, 3), (False, "ZeroDivisionError: division by zero"), True),
        ((True, 1), (True, 1.0), False),  # `assert f(...) == 1` passes on 1.0: not told apart
        ((True, 1), (True, True), False),
        ((True, 3), (False, "timeout"), False),  # slower is not wrong: its verdict is the load's
        ((True, 3), (False, "no result"), False),
        ((False, "ValueError"), (True, 3), False),  # the reference raised: nothing to assert
        ((True, float("nan")), (True, 0.0), False),  # nan reads back unequal to itself
        ((True, [1, 2]), (True, (1, 2)), True),
    ],
)
def test_a_drawn_input_tells_a_mutant_apart_only_when_its_assert_would_fail(want, got, apart) -> None:
    assert _asserted_apart(want, got) is apart
