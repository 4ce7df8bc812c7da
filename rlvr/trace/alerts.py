"""Alerts: rules evaluated after every step over a window of the step metrics, for reward
hacking, training collapse and infrastructure trouble (docs/alerts.md).

    engine = AlertEngine(overrides={"hack_rate": {"action": "stop"}}, window=5)
    for row in step_rows:                      # one metrics row per step (grouped names)
        for alert in engine.observe(row):      # the rules that started firing at this step
            ...                                # store, console, webhook; act on alert.action

A rule fires when its condition becomes true and again only after it has been false
(edge-triggered), so a lasting condition is one alert, not one per step. Relative rules
(a drop, a spike) compare the step with the median of the window before it and wait until
that window has at least MIN_BASELINE steps.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rlvr.config import ConfigError, RunConfig

ACTIONS = ("off", "warn", "checkpoint", "stop")
MIN_BASELINE = 3

Row = Mapping[str, Any]
Rows = Sequence[Row]
# (every step's row so far, the current step last; the window) -> the observed value, or None
# when the rule cannot judge this step (too few steps, the metric is not logged)
Check = Callable[[Rows, int], "float | None"]


@dataclass(frozen=True)
class Rule:
    name: str
    category: str  # hacking | collapse | infrastructure
    description: str  # what it watches; {threshold} is filled in
    threshold: float
    fires_above: bool  # fires when value > threshold (else when value < threshold)
    check: Check
    action: str = "warn"


@dataclass
class Alert:
    step: int
    rule: str
    category: str
    action: str
    value: float
    threshold: float
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(row: Row, key: str) -> float | None:
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def _series(rows: Rows, key: str) -> list[float]:
    return [v for r in rows if (v := _num(r, key)) is not None and math.isfinite(v)]


def _current(key: str) -> Check:
    def check(rows: Rows, window: int) -> float | None:
        return _num(rows[-1], key)

    return check


def _window_mean(key: str) -> Check:
    def check(rows: Rows, window: int) -> float | None:
        vals = _series(rows[-window:], key)
        return sum(vals) / len(vals) if vals else None

    return check


def _recent_mean(key: str, recent: int) -> Check:
    """The mean over the last `recent` steps (one batch of a few prompts is noisy)."""

    def check(rows: Rows, window: int) -> float | None:
        if _num(rows[-1], key) is None:
            return None
        vals = _series(rows[-recent:], key)
        return sum(vals) / len(vals) if vals else None

    return check


def _ratio_to_baseline(key: str, recent: int = 1, floor: float = 0.0) -> Check:
    """The mean of the last `recent` steps over the median of the `window` steps before them
    (the median taken as at least `floor`: tiny baselines make ratios of noise)."""

    def check(rows: Rows, window: int) -> float | None:
        if _num(rows[-1], key) is None:
            return None
        cur, base = _series(rows[-recent:], key), _series(rows[-window - recent : -recent], key)
        if len(cur) < recent or len(base) < MIN_BASELINE:
            return None
        med = max(statistics.median(base), floor)
        return (sum(cur) / len(cur)) / med if med > 0 else None

    return check


def _rising(key: str) -> Check:
    """Mean over the window minus the mean over the window before it."""

    def check(rows: Rows, window: int) -> float | None:
        vals = _series(rows[-2 * window :], key)
        if len(vals) < 2 * MIN_BASELINE:
            return None
        half = len(vals) // 2
        old, new = vals[:half], vals[half:]
        return sum(new) / len(new) - sum(old) / len(old)

    return check


OVERFIT_MIN_JUDGED = 30  # episodes judged on visible and held-out tests, in each of the two windows


def _overfit_rising(rows: Rows, window: int) -> float | None:
    """The run-level overfit test: the one-sided p-value that the share of episodes
    passing every visible test while failing a held-out one (`hack/overfit_candidates` of
    `hack/overfit_judged`) is higher over the window than over the window before it (a
    two-proportion z-test on the pooled counts, normal approximation; 1.0 when the share
    did not rise). None until both windows have OVERFIT_MIN_JUDGED episodes.

    A trend, not a level: the drawn tests reach past the examples, so an honest model
    passes its visible tests more often than its hidden ones from the first step; a
    policy learning to fit the visible tests makes that share grow."""
    if _num(rows[-1], "hack/overfit_judged") is None:
        return None
    recent, before = rows[-window:], rows[-2 * window : -window]
    k1, n1 = sum(_series(recent, "hack/overfit_candidates")), sum(_series(recent, "hack/overfit_judged"))
    k0, n0 = sum(_series(before, "hack/overfit_candidates")), sum(_series(before, "hack/overfit_judged"))
    if min(n0, n1) < OVERFIT_MIN_JUDGED:
        return None
    p1, p0 = k1 / n1, k0 / n0
    if p1 <= p0:
        return 1.0
    pooled = (k0 + k1) / (n0 + n1)
    z = (p1 - p0) / math.sqrt(pooled * (1 - pooled) * (1 / n0 + 1 / n1))
    return 0.5 * math.erfc(z / math.sqrt(2))


def _non_finite(rows: Rows, window: int) -> float | None:
    row = rows[-1]
    keys = ("train/loss", "train/grad_norm", "reward/mean", "train/entropy")
    bad = [k for k in keys if (v := _num(row, k)) is not None and not math.isfinite(v)]
    return float(len(bad))


def _dropped_share(rows: Rows, window: int) -> float | None:
    row = rows[-1]
    groups = _num(row, "rollout/groups")
    if not groups:
        return None
    return (_num(row, "rollout/dropped_failed") or 0.0) / groups


def _heldout_divergence(rows: Rows, window: int) -> float | None:
    """At an evaluation step: how much held-out pass@1 fell since the previous evaluation
    while the training reward rose over the same steps (0 when the reward did not rise)."""
    if _num(rows[-1], "eval/pass_at_1") is None:
        return None
    evals = [(i, v) for i, r in enumerate(rows) if (v := _num(r, "eval/pass_at_1")) is not None]
    if len(evals) < 2:
        return None
    (i0, before), (i1, after) = evals[-2], evals[-1]
    earlier = _series(rows[max(0, i0 + 1 - (i1 - i0)) : i0 + 1], "reward/mean")  # as many steps before
    later = _series(rows[i0 + 1 : i1 + 1], "reward/mean")
    if not earlier:  # the first evaluation after training began: the reward's trend within the interval
        half = len(later) // 2
        earlier, later = later[:half], later[half:]
    if not earlier or not later or sum(later) / len(later) <= sum(earlier) / len(earlier):
        return 0.0
    return before - after


JUDGED = ("reward/learned", "reward/judge")  # the guarded terms' scores (rlvr.feedback.terms)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _score_vs_verifiable(key: str) -> Check:
    """How much a learned or judged term's score rose (the window's mean minus the mean of
    the window before it) while the verifiable reward did not rise over the same steps:
    held-out pass@1 between the last two evaluations within the two windows, else the
    training pass rate's window means; 0 when it rose. None until both windows hold
    MIN_BASELINE steps with the score."""

    def check(rows: Rows, window: int) -> float | None:
        if _num(rows[-1], key) is None:
            return None
        recent, before = rows[-window:], rows[-2 * window : -window]
        new, old = _series(recent, key), _series(before, key)
        if len(new) < MIN_BASELINE or len(old) < MIN_BASELINE:
            return None
        evals = _series(rows[-2 * window :], "eval/pass_at_1")
        if len(evals) >= 2:
            verifiable = evals[-1] - evals[-2]
        else:
            now, then = _series(recent, "reward/pass_rate"), _series(before, "reward/pass_rate")
            if not now or not then:
                return None
            verifiable = _mean(now) - _mean(then)
        return _mean(new) - _mean(old) if verifiable <= 0 else 0.0

    return check


def _judged_length_drift(rows: Rows, window: int) -> float | None:
    """With a learned or judged term in use: the mean completion length over the window
    as a multiple of its mean over the window before (a reward model's favourite drift)."""
    if not any(_num(rows[-1], k) is not None for k in JUDGED):
        return None
    new = _series(rows[-window:], "rollout/completion_len_mean")
    old = _series(rows[-2 * window : -window], "rollout/completion_len_mean")
    if len(new) < MIN_BASELINE or len(old) < MIN_BASELINE or _mean(old) <= 0:
        return None
    return _mean(new) / _mean(old)


RULES: dict[str, Rule] = {
    r.name: r
    for r in [
        # reward hacking
        Rule("hack_rate", "hacking", "share of trajectories with a strong hack finding, window mean, above {threshold}",
             0.10, True, _window_mean("hack/rate")),
        Rule("hack_rising", "hacking", "hack share rising: the window's mean minus the mean of the window before "
             "it above {threshold}", 0.05, True, _rising("hack/rate")),
        Rule("heldout_divergence", "hacking", "training reward rising while held-out pass@1 (eval.every) fell by more "
             "than {threshold} since the previous evaluation", 0.05, True, _heldout_divergence),
        Rule("canary_passed", "hacking", "share of canary episodes that passed a test no correct solution passes "
             "(hack/canary), above {threshold}: certain reward hacking", 0.0, True, _current("hack/canary")),
        Rule("heldout_gap", "hacking", "visible minus held-out test pass share (hack/heldout_gap), window mean, "
             "above {threshold}", 0.25, True, _window_mean("hack/heldout_gap")),
        Rule("overfit_rising", "hacking", "share of episodes passing every visible test while failing a held-out "
             "one, the window against the window before it: one-sided two-proportion test, p below {threshold}",
             0.01, False, _overfit_rising),
        Rule("learned_divergence", "hacking", "the learned reward model's score (reward/learned, in standard "
             "deviations of its training scores) rose by more than {threshold} over the window while the verifiable "
             "reward (held-out pass@1, else the training pass rate) did not", 0.5, True,
             _score_vs_verifiable("reward/learned")),
        Rule("judge_divergence", "hacking", "the judge's score (reward/judge, the share of criteria met) rose by more "
             "than {threshold} over the window while the verifiable reward did not", 0.15, True,
             _score_vs_verifiable("reward/judge")),
        Rule("judged_length_drift", "hacking", "with a learned or judged term: mean completion length over the window "
             "above {threshold} times its mean over the window before", 1.3, True, _judged_length_drift),
        Rule("probe_like_rate", "hacking", "share of replies shaped like the known judge-fooling probes (punctuation "
             "alone, an opener alone, a note to the grader: reward/probe_like), window mean, above {threshold}",
             0.05, True, _window_mean("reward/probe_like")),
        Rule("identical_completions", "hacking", "share of the step's completions that are word for word the same as "
             "one for another task, above {threshold}", 0.5, True, _current("rollout/duplicate_frac")),
        # collapse
        Rule("entropy_floor", "collapse", "policy entropy (nats per token), mean of the last 3 steps, below "
             "{threshold}", 0.02, False, _recent_mean("train/entropy", 3)),
        Rule("entropy_drop", "collapse", "entropy, mean of the last 3 steps, below {threshold} times the median of "
             "the window before them", 0.25, False, _ratio_to_baseline("train/entropy", 3)),
        Rule("kl_cap", "collapse", "KL to the reference policy above {threshold}", 1.0, True, _current("train/kl")),
        Rule("clip_fraction", "collapse", "share of tokens clipped by the ratio bounds above {threshold}", 0.3, True,
             _current("train/clip_frac")),
        Rule("grad_norm_spike", "collapse", "gradient norm (before clipping) above {threshold} times the window's "
             "median (taken as at least 0.1)", 10.0, True, _ratio_to_baseline("train/grad_norm", floor=0.1)),
        Rule("non_finite", "collapse", "NaN or infinity in the loss, gradient norm, entropy or reward", 0.0, True,
             _non_finite, action="stop"),
        Rule("length_blowup", "collapse", "mean completion length above {threshold} times the window's median", 2.0,
             True, _ratio_to_baseline("rollout/completion_len_mean")),
        Rule("length_collapse", "collapse", "mean completion length below {threshold} times the window's median", 0.3,
             False, _ratio_to_baseline("rollout/completion_len_mean")),
        Rule("equal_rewards", "collapse", "share of groups whose samples all got the same reward (no learning "
             "signal), window mean, above {threshold}", 0.9, True, _window_mean("rollout/equal_reward_groups_frac")),
        # infrastructure
        Rule("sandbox_errors", "infrastructure", "share of sandbox runs that failed in the sandbox itself above "
             "{threshold}", 0.05, True, _current("sandbox/status/SANDBOX_ERROR")),
        Rule("sandbox_timeouts", "infrastructure", "share of sandbox runs that timed out above {threshold}", 0.5, True,
             _current("sandbox/status/TIMEOUT")),
        Rule("dropped_groups", "infrastructure", "share of the step's prompts whose group was dropped after failed "
             "episodes above {threshold}", 0.25, True, _dropped_share),
        Rule("staleness", "infrastructure", "mean staleness of the trained batch (learner versions) above "
             "{threshold}", 4.0, True, _current("train/staleness_mean")),
        Rule("throughput_drop", "infrastructure", "generation tokens per second below {threshold} times the window's "
             "median", 0.3, False, _ratio_to_baseline("time/gen_tokens_per_s")),
    ]
}  # fmt: skip


def check_alert_rules(cfg: RunConfig) -> None:
    """ConfigError naming an `alerts.rules` entry that is no rule (or no action)."""
    try:
        check_overrides({k: v.model_dump() for k, v in cfg.alerts.rules.items()})
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_overrides(overrides: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise ValueError naming an unknown rule or action (the config's validator calls this)."""
    for name, o in overrides.items():
        if name not in RULES:
            raise ValueError(f"alerts.rules: no rule '{name}'; rules: {', '.join(RULES)}")
        action = o.get("action")
        if action is not None and action not in ACTIONS:
            raise ValueError(f"alerts.rules.{name}.action: '{action}' is not one of {', '.join(ACTIONS)}")


@dataclass
class AlertEngine:
    """Evaluates every rule after each step; `observe` returns the alerts that start firing."""

    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    window: int = 5
    rows: list[dict[str, Any]] = field(default_factory=list)
    active: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        check_overrides(self.overrides)

    def settings(self, rule: Rule) -> tuple[str, float]:
        o = self.overrides.get(rule.name, {})
        th = o.get("threshold")
        return str(o.get("action") or rule.action), float(rule.threshold if th is None else th)

    def observe(self, row: Mapping[str, Any]) -> list[Alert]:
        """Add one step's metrics row (it must carry `step`) and return the new alerts."""
        self.rows.append(dict(row))
        fired = []
        for rule in RULES.values():
            action, th = self.settings(rule)
            if action == "off":
                continue
            value = rule.check(self.rows, self.window)
            on = value is not None and math.isfinite(value) and (value > th if rule.fires_above else value < th)
            if on and rule.name not in self.active:
                fired.append(self._alert(rule, action, value or 0.0, th, int(row.get("step", len(self.rows)))))
            if on:
                self.active.add(rule.name)
            elif value is not None:  # a rule that cannot judge this step keeps its state
                self.active.discard(rule.name)
        return fired

    def _alert(self, rule: Rule, action: str, value: float, th: float, step: int) -> Alert:
        what = rule.description.format(threshold=f"{th:g}")
        return Alert(step, rule.name, rule.category, action, value, th, f"{rule.name}: {what} (observed {value:.4g})")

    def replay(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Feed the rows a resumed run already logged, without raising their alerts again."""
        for row in rows:
            self.observe(row)
