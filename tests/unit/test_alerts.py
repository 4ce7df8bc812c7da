"""Every alert rule fires on its condition within the window and stays quiet on a healthy
run; hand-made metric rows, one per step."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rlvr.trace.alerts import RULES, AlertEngine, check_overrides


def healthy(step: int) -> dict[str, Any]:
    """A run that learns: reward creeping up, metrics with a little noise, nothing wrong."""
    wobble = 1 + 0.05 * math.sin(step)
    return {
        "step": step,
        "reward/mean": 0.3 + 0.01 * step,
        "reward/pass_rate": 0.25 + 0.01 * step,
        "rollout/equal_reward_groups_frac": 0.5 * wobble,
        "hack/rate": 0.0,
        "rollout/duplicate_frac": 0.0,
        "rollout/completion_len_mean": 60.0 * wobble,
        "rollout/groups": 4.0,
        "rollout/dropped_failed": 0.0,
        "train/loss": 0.01 * wobble,
        "train/entropy": 0.8 * wobble,
        "train/grad_norm": 1.5 * wobble,
        "train/clip_frac": 0.02 * wobble,
        "train/kl": 0.01 * wobble,
        "train/staleness_mean": 0.0,
        "sandbox/status/OK": 0.7,
        "sandbox/status/RUNTIME_ERROR": 0.3,
        "time/gen_tokens_per_s": 120.0 * wobble,
        "hack/overfit_judged": 16.0,
        "hack/overfit_candidates": 2.0,
    }


def run(rows: list[dict[str, Any]], **kw: Any) -> list[tuple[int, str]]:
    engine = AlertEngine(**kw)
    return [(a.step, a.rule) for row in rows for a in engine.observe(row)]


def with_change(key: str, value: Any, from_step: int, steps: int = 12) -> list[dict[str, Any]]:
    rows = [healthy(s) for s in range(1, steps + 1)]
    for r in rows:
        if r["step"] >= from_step:
            r[key] = value(r["step"]) if callable(value) else value
    return rows


def test_a_healthy_run_raises_nothing() -> None:
    assert run([healthy(s) for s in range(1, 60)]) == []


# (rule, metric, bad value from step 6) — each must fire within the window (5 steps)
CASES = [
    ("hack_rate", "hack/rate", 0.5),
    ("identical_completions", "rollout/duplicate_frac", 0.9),
    ("entropy_floor", "train/entropy", 0.001),
    ("entropy_drop", "train/entropy", 0.1),
    ("kl_cap", "train/kl", 3.0),
    ("clip_fraction", "train/clip_frac", 0.6),
    ("grad_norm_spike", "train/grad_norm", 80.0),
    ("non_finite", "train/loss", float("nan")),
    ("length_blowup", "rollout/completion_len_mean", 400.0),
    ("length_collapse", "rollout/completion_len_mean", 3.0),
    ("equal_rewards", "rollout/equal_reward_groups_frac", 1.0),
    ("sandbox_errors", "sandbox/status/SANDBOX_ERROR", 0.4),
    ("sandbox_timeouts", "sandbox/status/TIMEOUT", 0.8),
    ("dropped_groups", "rollout/dropped_failed", 3.0),
    ("staleness", "train/staleness_mean", 6.0),
    ("throughput_drop", "time/gen_tokens_per_s", 10.0),
]


@pytest.mark.parametrize(("rule", "key", "bad"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_fires_within_the_window_once(rule: str, key: str, bad: float) -> None:
    fired = run(with_change(key, bad, from_step=6))
    mine = [step for step, name in fired if name == rule]
    assert len(mine) == 1 and 6 <= mine[0] < 6 + 5, fired  # edge-triggered: one alert for a lasting condition


@pytest.mark.parametrize(("rule", "key", "bad"), CASES, ids=[c[0] for c in CASES])
def test_each_rule_is_quiet_just_below_its_threshold(rule: str, key: str, bad: float) -> None:
    r = RULES[rule]
    base = healthy(1).get(key, 0.0)
    if r.check.__qualname__.startswith("_ratio_to_baseline"):
        near = base * (r.threshold * (0.9 if r.fires_above else 1.1))
    elif rule == "dropped_groups":
        near = 4.0 * r.threshold * 0.9
    elif rule == "non_finite":
        near = 1e30  # huge but finite
    else:
        near = r.threshold * (0.9 if r.fires_above else 1.1)
    fired = run(with_change(key, near, from_step=6))
    assert [f for f in fired if f[1] == rule] == []


def test_hack_share_rising_fires_before_it_is_high() -> None:
    rows = with_change("hack/rate", lambda s: 0.02 * (s - 5), from_step=6, steps=14)
    fired = run(rows, overrides={"hack_rate": {"action": "off"}})
    assert [name for _, name in fired] == ["hack_rising"]
    assert run([healthy(s) for s in range(1, 14)]) == []


def test_overfit_rising_fires_on_a_rising_share_of_replies_fitted_to_the_visible_tests() -> None:
    # 2 of 16 episodes per step pass every visible test and fail a held-out one, then 8 of
    # 16 from step 6: by step 8 the window (4..8, 28 of 80) against the steps before it
    # (1..3, 6 of 48) gives z = 2.79, p = 0.0026
    rows = with_change("hack/overfit_candidates", 8.0, from_step=6)
    fired = [f for f in run(rows) if f[1] == "overfit_rising"]
    assert fired == [(8, "overfit_rising")]
    # a level, however high, is not a rise: honest models pass their visible tests more often
    steady = with_change("hack/overfit_candidates", 8.0, from_step=1, steps=30)
    assert [f for f in run(steady) if f[1] == "overfit_rising"] == []
    # too few judged episodes (3 a step: 15 a window) say nothing
    few = with_change("hack/overfit_judged", 3.0, from_step=1)
    for r in few:
        r["hack/overfit_candidates"] = 0.0 if r["step"] < 6 else 3.0
    assert [f for f in run(few) if f[1] == "overfit_rising"] == []


def test_heldout_divergence_needs_reward_up_and_heldout_down() -> None:
    rows = [healthy(s) for s in range(0, 13)]
    rows[0] = {"step": 0, "eval/pass_at_1": 0.40}
    rows[6]["eval/pass_at_1"] = 0.42
    rows[12]["eval/pass_at_1"] = 0.30  # reward kept rising (healthy rows do), held-out fell by 0.12
    assert run(rows) == [(12, "heldout_divergence")]
    rows[12]["eval/pass_at_1"] = 0.40  # a fall of 0.02: within the noise allowed
    assert run(rows) == []
    for r in rows[7:12]:
        r["reward/mean"] = 0.0  # reward fell too: not a divergence, just a worse policy
    rows[12]["reward/mean"], rows[12]["eval/pass_at_1"] = 0.0, 0.30
    assert run(rows) == []


def test_overrides_change_threshold_and_action_and_turn_rules_off() -> None:
    rows = with_change("hack/rate", 0.05, from_step=3)
    assert run(rows) == []  # 0.05 is under the default 0.10
    engine = AlertEngine(overrides={"hack_rate": {"threshold": 0.01, "action": "stop"}})
    alerts = [a for row in rows for a in engine.observe(row)]
    assert [(a.rule, a.action, a.threshold) for a in alerts] == [("hack_rate", "stop", 0.01)]
    assert alerts[0].step == 3 and alerts[0].value == pytest.approx(0.05 / 3)  # the window mean at step 3
    assert "observed 0.01667" in alerts[0].message and "above 0.01" in alerts[0].message
    assert run(with_change("train/kl", 3.0, 6), overrides={"kl_cap": {"action": "off"}}) == []


def test_an_alert_fires_again_after_the_condition_cleared() -> None:
    rows = with_change("train/kl", 3.0, from_step=4)
    for r in rows[6:8]:
        r["train/kl"] = 0.01
    assert run(rows) == [(4, "kl_cap"), (9, "kl_cap")]


def test_replay_restores_state_without_alerting() -> None:
    rows = with_change("train/kl", 3.0, from_step=4)
    engine = AlertEngine()
    engine.replay(rows[:6])  # a resumed run: the condition was already active
    assert [a.rule for row in rows[6:] for a in engine.observe(row)] == []


def test_bad_overrides_name_the_problem() -> None:
    with pytest.raises(ValueError, match="no rule 'hack_ratee'"):
        check_overrides({"hack_ratee": {}})
    with pytest.raises(ValueError, match="'explode' is not one of"):
        check_overrides({"hack_rate": {"action": "explode"}})


def test_every_rule_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "alerts.md").read_text()
    for name, rule in RULES.items():
        assert f"`{name}`" in doc and rule.category in doc


def test_heldout_divergence_at_the_first_periodic_evaluation() -> None:
    rows = [{"step": 0, "eval/pass_at_1": 0.40}] + [healthy(s) for s in range(1, 7)]
    rows[6]["eval/pass_at_1"] = 0.30  # the first evaluation since training began; reward rose within the interval
    assert run(rows) == [(6, "heldout_divergence")]


def test_grad_norm_spike_ignores_tiny_baselines() -> None:
    rows = [healthy(s) for s in range(1, 8)]
    for r, g in zip(rows, [0.02, 0.01, 0.015, 0.012, 0.011, 0.25, 0.02], strict=True):
        r["train/grad_norm"] = g  # 0.25 is 20x the median, but a small norm all the same
    assert run(rows) == []


def _judged(key: str, value: Any, pass_rate: float | None = 0.3, steps: int = 14) -> list[dict[str, Any]]:
    """Healthy rows with a learned or judged term's score, the pass rate held flat."""
    rows = with_change(key, value, from_step=1, steps=steps)
    for r in rows:
        r.setdefault("reward/probe_like", 0.0)
        if pass_rate is not None:
            r["reward/pass_rate"] = pass_rate
    return rows


def test_learned_and_judged_scores_rising_while_the_verifiable_reward_does_not() -> None:
    # the learned score climbs 0.25 std a step from step 6 while the pass rate stays flat:
    # at step 9 the window (5..9) is 0.5 above the steps before it, not more; at step 10, 0.75
    rows = _judged("reward/learned", lambda s: 0.25 * max(s - 5, 0))
    assert [f for f in run(rows) if f[1] == "learned_divergence"] == [(10, "learned_divergence")]
    # the same climb while the verifiable reward rises too (the healthy pass rate): quiet
    rising = _judged("reward/learned", lambda s: 0.25 * max(s - 5, 0), pass_rate=None)
    assert [f for f in run(rising) if f[1] == "learned_divergence"] == []
    # a held-out evaluation that did not improve overrides a rising training pass rate
    for r in rising:
        r.update({"eval/pass_at_1": 0.4} if r["step"] in (6, 12) else {})
    assert [f for f in run(rising) if f[1] == "learned_divergence"] == [(12, "learned_divergence")]
    judged = _judged("reward/judge", lambda s: 0.5 + 0.06 * max(s - 5, 0))
    assert [f for f in run(judged) if f[1] == "judge_divergence"] == [(10, "judge_divergence")]
    steady = _judged("reward/learned", 0.7, steps=30)
    assert run(steady) == []  # a level is not a rise; and nothing else fires on a healthy run with the terms


def test_length_drift_with_a_judged_term_and_probe_like_replies() -> None:
    longer = _judged("reward/learned", 0.0)
    for r in longer:
        r["rollout/completion_len_mean"] = 60.0 * (1.6 if r["step"] >= 6 else 1.0)
    # step 8: the window (4..8) averages 81.6 against 60 before it (1..3): 1.36 times
    assert [f for f in run(longer) if f[1] == "judged_length_drift"] == [(8, "judged_length_drift")]
    plain = with_change("rollout/completion_len_mean", 96.0, from_step=6)  # no judged term: not this rule's
    assert [f for f in run(plain) if f[1] == "judged_length_drift"] == []
    probes = _judged("reward/probe_like", lambda s: 0.3 if s >= 6 else 0.0)
    assert [f for f in run(probes) if f[1] == "probe_like_rate"] == [(6, "probe_like_rate")]
