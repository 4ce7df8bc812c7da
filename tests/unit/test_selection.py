"""rlvr.rewards.selection and the features hidden_tests gives it: hand-worked covers."""

from __future__ import annotations

from rlvr.rewards.hidden_tests import features
from rlvr.rewards.selection import select_covering


def test_each_pick_covers_the_most_new_features_then_a_new_round_starts() -> None:
    feats = [frozenset("a"), frozenset("ab"), frozenset("c"), frozenset("a")]
    # 1 covers two new; then 2 (c); nothing adds anything: a new round, the earliest of the most
    assert select_covering(feats, 3) == [1, 2, 0]
    assert select_covering(feats, 10) == [1, 2, 0, 3]
    assert select_covering(feats, 0) == []
    assert select_covering([frozenset(), frozenset()], 5) == [0, 1]  # nothing to cover: drawing order


def test_rounds_keep_the_answers_balanced() -> None:
    # eight inputs answering True, two answering False: the rare answer comes every other pick
    feats = [frozenset({("answer", "True")})] * 8 + [frozenset({("answer", "False")})] * 2
    picks = select_covering(feats, 4)
    assert picks == [0, 8, 1, 9]
    # the answer as a minor feature (as hidden_tests counts it): the same alternation
    assert select_covering(feats, 4, minor=lambda f: f[0] == "answer") == [0, 8, 1, 9]


def test_a_minor_feature_only_breaks_ties() -> None:
    # 0 covers three answers (minor); 1 covers one shape: the shape is picked first
    feats = [frozenset({("answer", 1), ("answer", 2), ("answer", 3)}), frozenset({("shape", "square")}), frozenset()]
    minor = lambda f: f[0] == "answer"  # noqa: E731
    assert select_covering(feats, 1) == [0]  # counted alike: the three answers win
    assert select_covering(feats, 1, minor=minor) == [1]
    # equal major gain: the one with more minor features goes first
    tied = [frozenset({("shape", "a")}), frozenset({("shape", "b"), ("answer", 1)})]
    assert select_covering(tied, 2, minor=minor) == [1, 0]


def test_features_read_answers_flips_reorders_lengths_and_the_examples_range() -> None:
    examples = [("()",), (")(",), ("((",)]
    answers = {repr(("()",)): "True", repr((")(",)): "False", repr(("((",)): "False"}
    cands = [
        (("(]",), 0, False),  # an edit of example 0 with another answer
        (("(())",), 0, True),  # an edit with the same answer: no flip
        ((")(",), -1, False),  # example 0's characters in another order, another answer
        (("((((((",), -1, False),  # past the longest example
    ]
    got = features(cands, examples, answers, [frozenset(), frozenset({2}), frozenset(), frozenset()])
    assert got[0] == {("answer", "False"), ("flip", 0), ("length", 0, 2)}
    assert got[1] == {("answer", "True"), ("length", 0, 3), ("kill", 2)}
    assert ("reorder", 0) in got[2] and ("reorder", 1) not in got[2]  # equal to example 1 itself
    assert ("length", 0, 3) in got[3]  # lengths past the longest example count as one
    ints = features([((-4,), -1, 0), ((5,), -1, 1), ((99,), -1, 2)], [(0,), (10,)], {}, [frozenset()] * 3)
    assert ("beyond", 0, "below") in ints[0] and ints[1] == {("answer", "1")} and ("beyond", 0, "above") in ints[2]
