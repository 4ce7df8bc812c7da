"""The guarded group stage (rlvr.rewards.guard and the scorer's use of it): a learned or
judged score orders what the verifiable reward ties and never reorders what it ranks,
held by hand-worked cases and a property test over arbitrary groups."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.config import ConfigError, RewardConfig, RunConfig, TermConfig
from rlvr.envs.settings import check_reward
from rlvr.rewards.guard import SHARE, TIE, guarded_bonus, scaled, smallest_gap
from rlvr.rewards.registry import GROUP_REWARDS, TermContext, register_group_reward
from rlvr.rewards.scorer import Scorer
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestResult, TestStatus, Trajectory, Turn


def test_hand_worked_group() -> None:
    totals = [1.0, 1.0, 0.5, 0.0]
    # eligible scores 0.2, 0.8, 0.9 -> u = 0, 6/7, 1; no score -> 0
    assert scaled([0.2, 0.8, 0.9, None], [True] * 4) == pytest.approx([0.0, 6 / 7, 1.0, 0.0])
    assert smallest_gap(totals) == 0.5
    bonus, cap = guarded_bonus(totals, [0.2, 0.8, 0.9, None], [True] * 4, weight=1.0)
    assert cap == SHARE * 0.5 == 0.25  # the weight (1.0) is cut to half the smallest gap
    assert bonus == pytest.approx([0.0, 0.25 * 6 / 7, 0.25, 0.0])
    # all tied: the weight is the full scale
    bonus, cap = guarded_bonus([0.0, 0.0], [3.0, 1.0], [True, True], weight=0.2)
    assert (bonus, cap) == ([0.2, 0.0], 0.2)
    # a negative weight turns the score into a penalty, within the same reach
    assert guarded_bonus([0.0, 0.0], [3.0, 1.0], [True, True], weight=-0.2)[0] == [-0.2, -0.0]
    # one eligible reply, or all eligible scores equal: no signal, no bonus
    assert guarded_bonus([0.0, 0.0], [3.0, 1.0], [True, False], 1.0)[0] == [0.0, 0.0]
    assert guarded_bonus([0.0, 0.0], [2.0, 2.0], [True, True], 1.0)[0] == [0.0, 0.0]
    # float sums that differ by less than TIE are one reward (0.7 - 0.4 vs 0.3)
    assert smallest_gap([0.7 - 0.4, 0.3, 0.0]) == pytest.approx(0.3)


scores_st = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False))


@settings(max_examples=400, database=None, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.floats(-3, 3, allow_nan=False), scores_st, st.booleans()), min_size=1, max_size=12),
    st.floats(-5, 5, allow_nan=False),
)
def test_a_higher_verifiable_reward_always_means_a_higher_total(group: list, weight: float) -> None:
    totals = [v for v, _, _ in group]
    bonus, cap = guarded_bonus(totals, [s for _, s, _ in group], [e for _, _, e in group], weight)
    final = [v + b for v, b in zip(totals, bonus, strict=True)]
    for i, vi in enumerate(totals):
        for j, vj in enumerate(totals):
            if vi > vj + TIE:
                assert final[i] > final[j], (totals, bonus)
    assert all(abs(b) <= min(abs(weight), cap) + 1e-12 for b in bonus)


# ---- the scorer's group stage -----------------------------------------------------------

PY = Task(id="py/1", domain="python", prompt="f?", tests={"format": "assert", "cases": ["assert f(1) == 1"]})


def _ep(reply: str, passed: bool, flags: Sequence[str] = ()) -> Trajectory:
    t = Trajectory(task_id=PY.id, domain="python", group_id="g", turns=[Turn("user", "f?"), Turn("assistant", reply)])
    t.completion_ids = [1, 2]
    verdict = TestStatus.PASSED if passed else TestStatus.FAILED
    t.execution = ExecutionResult(RunStatus.OK, tests=[TestResult("t0", verdict)], cpu_time_s=0.01)
    t.reward = RewardBreakdown(1.0 if passed else 0.0, {"completion": 1.0 if passed else 0.0})
    return t


@pytest.fixture
def style() -> Iterator[str]:
    """A group term scoring a reply by its length in characters (what a naive reward model
    would learn), registered the way the feedback package registers its own."""

    def needs_nothing(cfg: RewardConfig) -> None:
        return None

    @register_group_reward("test_style", check=needs_nothing)
    def style_term(tasks: Sequence[Task], trajs: Sequence[Trajectory], ctx: TermContext) -> list[float | None]:
        """Longer is better (a test stand-in)."""
        return [float(len(t.completion_text)) if "skip" not in t.completion_text else None for t in trajs]

    yield "test_style"
    del GROUP_REWARDS["test_style"]


def _score(terms: list[TermConfig], group: list[Trajectory]) -> list[float]:
    cfg = RewardConfig(terms=[TermConfig(name="completion"), *terms])
    Scorer(cfg, max_new_tokens=64).score_group([PY] * len(group), group)
    return [t.reward.total for t in group if t.reward is not None]


def test_scorer_never_lets_the_learned_term_lift_a_wrong_reply_over_a_right_one(style: str) -> None:
    group = [_ep("short", True), _ep("a much longer reply that is right", True), _ep("x" * 500, False), _ep("w", False)]
    totals = _score([TermConfig(name=style, weight=10.0)], group)
    assert min(totals[:2]) > max(totals[2:])  # right over wrong, whatever the weight
    assert totals[1] > totals[0] and totals[2] > totals[3]  # the score orders each tie
    assert group[2].reward is not None and group[2].reward.components[style] == 500.0  # the raw score is logged
    assert group[1].reward is not None and group[1].reward.details["guarded"][style]["cap"] == 0.5  # SHARE * gap 1


def test_gates_and_flags(style: str) -> None:
    group = [_ep("ok", True), _ep("right and long", True), _ep("wrong but very long", False)]
    totals = _score([TermConfig(name=style, weight=0.2, gate="all_tests_pass")], group)
    assert totals == pytest.approx([1.0, 1.2, 0.0])  # only the passing replies are compared
    tied = [_ep("a", False), _ep("abc", False), _ep("skip: no score", False)]
    assert _score([TermConfig(name=style, weight=0.2, gate="tie_break")], tied) == pytest.approx([0.0, 0.2, 0.0])
    mixed = [_ep("a", True), _ep("abc", False)]
    assert _score([TermConfig(name=style, weight=0.2, gate="tie_break")], mixed) == [1.0, 0.0]  # not tied: none
    # a flagged reply (here: it passed a canary's impossible test) gets no bonus
    canary = Task(id="py/1", domain="python", prompt="f?", tests=PY.tests, metadata={"canary": {"test": 0}})
    g = [_ep("a", False), _ep("abcdef", True)]
    cfg = RewardConfig(terms=[TermConfig(name="completion"), TermConfig(name=style, weight=0.2)])
    Scorer(cfg, max_new_tokens=64).score_group([canary, canary], g)
    assert g[1].reward is not None and "canary" in g[1].reward.flags
    assert g[1].reward.details["guarded"][style] == {"bonus": 0.0, "cap": 0.2, "eligible": False}
    assert g[1].reward.total == -0.5  # capped at 0 less the hack penalty, no bonus on top


def test_config_checks(style: str) -> None:
    cfg = RunConfig(reward=RewardConfig(terms=[TermConfig(name="format", gate="tie_break")]))
    with pytest.raises(ConfigError, match=r"tie_break needs a group term \(.*test_style.*\), not 'format'"):
        check_reward(cfg)
    check_reward(RunConfig(reward=RewardConfig(terms=[TermConfig(name=style, gate="tie_break")])))


def test_probe_like_replies_get_no_bonus(style: str) -> None:
    group = [_ep("same line\n" * 8, False), _ep("ok", False), _ep("fine", False)]
    totals = _score([TermConfig(name=style, weight=0.2)], group)
    assert group[0].reward is not None and group[0].reward.components["probe_like"] == 1.0
    assert totals == pytest.approx([0.0, 0.0, 0.2])  # the longest reply is a probe: only the other two compared
