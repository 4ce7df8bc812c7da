"""rlvr.rewards.overfit: the one-sided Fisher test against hand-worked tables, the pooling,
and the rule in the scorer (a group of distinct fitted replies is strong, one is not)."""

from __future__ import annotations

from math import comb

import pytest

from rlvr.rewards.overfit import ALPHA, candidate, fisher_greater, pooled_p


def test_fisher_greater_against_hand_worked_tables() -> None:
    # 3 of 3 visible pass, 0 of 3 hidden: the only table as extreme, 1 / C(6, 3)
    assert fisher_greater(3, 0, 0, 3) == pytest.approx(1 / 20)
    # 8 of 8 visible, 10 of 20 hidden: C(18, 8) / C(28, 8)
    assert fisher_greater(8, 0, 10, 10) == pytest.approx(comb(18, 8) / comb(28, 8))
    assert fisher_greater(8, 0, 10, 10) == pytest.approx(0.014079, abs=1e-6)
    # 2 of 4 visible, 1 of 2 hidden: P(X >= 2) with 3 passes of 6, 4 drawn = (C(3,2)C(3,2) + C(3,3)C(3,1)) / C(6,4)
    assert fisher_greater(2, 2, 1, 1) == pytest.approx((9 + 3) / 15)
    assert fisher_greater(0, 3, 3, 0) == 1.0  # visible worse: no evidence at all
    assert fisher_greater(0, 0, 5, 5) == 1.0
    with pytest.raises(ValueError, match="2x2 table"):
        fisher_greater(-1, 0, 0, 0)


def test_pooling_adds_the_candidates_counts_only() -> None:
    assert not candidate((7, 8, 3, 20)) and not candidate((8, 8, 20, 20)) and candidate((8, 8, 19, 20))
    one = (6, 6, 12, 20)
    assert pooled_p([one]) == pytest.approx(fisher_greater(6, 0, 12, 8))
    assert pooled_p([one]) > ALPHA  # one reply's six visible tests: not enough
    three = [(6, 6, 12, 20), (6, 6, 13, 20), (6, 6, 11, 20), (2, 6, 0, 20)]  # the last fails visible: left out
    assert pooled_p(three) == pytest.approx(fisher_greater(18, 0, 36, 24)) and pooled_p(three) < ALPHA
    assert pooled_p([]) == 1.0


def test_a_group_of_distinct_fitted_replies_is_strong_and_one_reply_sampled_thrice_is_not() -> None:
    from rlvr.config import RewardConfig
    from rlvr.rewards.scorer import Scorer
    from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestResult, TestStatus, Trajectory, Turn

    task = Task(id="py/f", domain="python", prompt="p", tests={"format": "assert", "tests": ["assert f(1) == 1"]})

    def fitted(i: int) -> Trajectory:  # 6 of 6 visible, 12 of 20 held out
        tests = [TestResult(f"v{k}", TestStatus.PASSED) for k in range(6)]
        tests += [TestResult(f"held_out/{k}", TestStatus.PASSED if k < 12 else TestStatus.FAILED) for k in range(20)]
        t = Trajectory(task_id="py/f", domain="python", group_id="g")
        t.turns = [Turn(role="assistant", content=f"```python\ndef f(x):\n    return x  # variant {i}\n```")]
        t.execution = ExecutionResult(RunStatus.OK, tests)
        t.reward = RewardBreakdown(0.6, components={"completion": 0.6})
        return t

    def severity(trajs: list[Trajectory]) -> list[str]:
        Scorer(RewardConfig(), max_new_tokens=64).score_group([task] * len(trajs), trajs)
        out = []
        for t in trajs:
            assert t.reward is not None
            out += [h["severity"] for h in t.reward.details.get("hacks", []) if h["name"] == "overfit_visible"]
        return out

    assert severity([fitted(0)]) == ["suspect"]
    assert severity([fitted(0), fitted(0), fitted(0)]) == ["suspect"] * 3  # one program: one piece of evidence
    distinct = [fitted(0), fitted(1), fitted(2)]
    assert severity(distinct) == ["strong"] * 3
    # on_hack='zero' by default: capped at 0, less reward.hack_penalty (0.5)
    assert all(t.reward is not None and t.reward.total == -0.5 for t in distinct)
