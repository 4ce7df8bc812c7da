"""The `learned` reward term end to end: a reward model trained on feedback (tiny random
backbone; the feedback prefers replies that say "good"), named in reward.terms, scores a
group's replies as a guarded bonus in the scorer and in a real training run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import ConfigError, RewardConfig, TermConfig, load_config
from rlvr.envs.settings import check_reward
from rlvr.rewards.scorer import Scorer
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestResult, TestStatus, Trajectory, Turn
from tests.integration.test_feedback_rm import _feedback


@pytest.fixture(scope="module")
def reward_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rlvr.feedback.rm import from_causal_lm
    from rlvr.feedback.rm_data import load_feedback, prepare
    from rlvr.feedback.rm_train import train_rm
    from rlvr.rollout.models import load_policy

    tmp = tmp_path_factory.mktemp("rm")
    fb = _feedback(tmp / "fb.jsonl")
    cfg = load_config(None, ["model.name_or_path=tiny-random", "rm.batch_size=8", "rm.epochs=3", "rm.lr=3e-3"])
    base, tok = load_policy("tiny-random")
    train_rm(cfg, from_causal_lm(base, tok, cfg.seed), tok, prepare(load_feedback([str(fb)]), cfg.rm, tok), tmp / "rm")
    return tmp / "rm"


TASK = Task(id="py/1", domain="python", prompt="Question 3?", tests={"format": "assert", "cases": ["assert f() == 1"]})


def _ep(reply: str, passed: bool) -> Trajectory:
    t = Trajectory(
        task_id=TASK.id, domain="python", group_id="g", turns=[Turn("user", "Question 3?"), Turn("assistant", reply)]
    )
    t.completion_ids = [1, 2, 3]
    verdict = TestStatus.PASSED if passed else TestStatus.FAILED
    t.execution = ExecutionResult(RunStatus.OK, tests=[TestResult("t0", verdict)], cpu_time_s=0.01)
    t.reward = RewardBreakdown(float(passed), {"completion": float(passed)})
    return t


def test_the_learned_term_orders_ties_and_never_a_ranking(reward_model: Path) -> None:
    cfg = load_config(
        None,
        [
            "reward.terms=[{name: completion}, {name: learned, weight: 0.3}]",
            f"reward.learned.model={reward_model}",
        ],
    )
    check_reward(cfg)
    group = [
        _ep("answer 3: this is bad", True),
        _ep("answer 3: this is good", True),
        _ep("answer 3: this is good", False),
        _ep("answer 3: this is bad", False),
    ]
    Scorer(cfg.reward, max_new_tokens=16).score_group([TASK] * 4, group)
    totals = [t.reward.total for t in group if t.reward is not None]
    assert totals[1] > totals[0] > totals[2] > totals[3]  # good over bad within each tie, right over wrong always
    assert totals[1] - totals[0] == pytest.approx(0.3)  # the full weight: the extremes of the group's scores
    assert totals[0] > totals[2]  # capped below the verifiable gap (1.0 x SHARE)
    scores = [t.reward.components["learned"] for t in group if t.reward is not None]
    assert scores[1] == scores[2] and scores[0] == scores[3]  # the same reply scores the same (cached)


def test_a_config_without_a_usable_model_is_refused_when_the_run_starts(tmp_path: Path) -> None:
    cfg = load_config(None, ["reward.terms=[{name: completion}, {name: learned}]"])
    with pytest.raises(ConfigError, match=r"reward\.learned\.model: the learned term needs a reward model"):
        check_reward(cfg)
    cfg.reward.learned.model = str(tmp_path)
    with pytest.raises(ConfigError, match="is not an rlvr reward model"):
        check_reward(cfg)
    assert RewardConfig(terms=[TermConfig(name="learned")]).learned.batch_size == 8


def test_a_training_run_with_the_learned_term(tmp_path: Path, reward_model: Path) -> None:
    from rlvr.train.loop import train
    from tests.integration.test_train import _toy_cfg

    cfg = _toy_cfg(
        tmp_path,
        "name=learned",
        "train.steps=2",
        "eval.before_training=false",
        "eval.after_training=false",
        "reward.terms=[{name: completion}, {name: learned, weight: 0.2}]",
        f"reward.learned.model={reward_model}",
    )
    train(cfg, quiet=True)
    trajs = [json.loads(x) for x in (tmp_path / "learned" / "trajectories.jsonl").read_text().splitlines()]
    scored = [t for t in trajs if t["status"] == "ok"]
    guarded = [t["reward"]["details"]["guarded"]["learned"] for t in scored]
    assert scored and all(0.0 <= g["bonus"] <= 0.2 for g in guarded)
    assert all(g["bonus"] == 0.0 for g in guarded if not g["eligible"])
    # only the replies that can earn the bonus (not hack-flagged) are scored (reward.learned.score_all: every one)
    assert [("learned" in t["reward"]["components"]) for t in scored] == [g["eligible"] for g in guarded]
    steps = [json.loads(x) for x in (tmp_path / "learned" / "metrics.jsonl").read_text().splitlines()]
    by_step = {t["step"] for t, g in zip(scored, guarded, strict=True) if g["eligible"]}
    assert by_step and all(("reward/learned" in r) == (r["step"] in by_step) for r in steps if r["event"] == "step")
