"""CodeT's dual agreement (rlvr.envs.codet.consensus_pick) on hand-worked matrices, and
how test replies are pooled (unreadable or flagged replies give no tests)."""

from __future__ import annotations

from rlvr.envs.codet import consensus_pick, pooled_tests

T, F = True, False


def test_the_largest_agreement_wins_not_the_most_tests_passed() -> None:
    # solutions 0 and 3 pass tests {0, 1}: 2 members x 2 tests = 4; solution 1 passes all
    # three tests alone: 1 x 3 = 3; solution 2 passes nothing
    assert consensus_pick([[T, T, F], [T, T, T], [F, F, F], [T, T, F]]) == 0
    # with a third member passing everything, {0, 1, 2} scores 2 x 3 = 6 > 4
    assert consensus_pick([[T, T, F], [T, T, T], [T, T, T], [T, T, F]]) == 1


def test_ties_go_to_the_group_whose_first_member_comes_first() -> None:
    assert consensus_pick([[F, T], [T, F]]) == 0  # two groups of 1 x 1
    assert consensus_pick([[F, F], [T, F], [F, T]]) == 1


def test_no_test_passed_anywhere_says_nothing() -> None:
    assert consensus_pick([[F, F], [F, F]]) is None
    assert consensus_pick([[], []]) is None
    assert consensus_pick([]) is None


def test_tests_are_pooled_once_each_and_flagged_replies_give_none() -> None:
    good = "```python\nassert f(1) == 2\nassert f(0) == 1\n```"
    again = "```python\nassert f(1) == 2\nassert f(5) == 6\n```"
    flagged = "```python\nimport inspect\nassert 'return' in inspect.getsource(f)\nassert f(9) == 10\n```"
    noise = "I would test f with a few inputs."
    assert pooled_tests([good, again, flagged, noise], "f") == [
        "assert f(1) == 2\n",
        "assert f(0) == 1\n",
        "assert f(5) == 6\n",
    ]
    assert pooled_tests([good, again], "f", limit=2) == ["assert f(1) == 2\n", "assert f(0) == 1\n"]
