"""The `curriculum` section of the run config: how tasks are chosen for each step
(rlvr.curriculum). Two choices compose: the mix across domains (`domain_mix`) and the
strategy inside each domain's pool (`strategy`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rlvr.config.base import _Section


class CurriculumConfig(_Section):
    strategy: Literal["uniform", "learnability", "ladder"] = "uniform"
    """Which tasks of a pool to draw: 'uniform' (a seeded permutation per epoch, every
    task once per epoch), 'learnability' (in proportion to p(1-p), p a per-task success
    estimate, with an exploration floor; tasks always or never solved are retired to a
    low rate and revisited), 'ladder' (difficulty bands: up when the current band's
    rolling pass rate reaches ladder_up, down when it falls to ladder_down)."""
    domain_mix: Literal["pooled", "fixed", "bandit"] = "pooled"
    """How draws are shared among domains: 'pooled' (one pool of every task, as today),
    'fixed' (domain_weights), 'bandit' (a softmax over each domain's recent mean absolute
    advantage: domains whose groups disagree get more rollouts, none below
    min_domain_share)."""
    domain_weights: dict[str, float] = Field(default_factory=dict)
    """Relative draw weights per domain for domain_mix 'fixed' (and the starting weights of
    'bandit'); a domain not named gets 1.0."""
    min_domain_share: float = Field(0.05, ge=0.0, lt=1.0)
    """The least share of draws any domain gets under 'bandit' (so none starves)."""
    max_domain_share: float = Field(1.0, gt=0.0, le=1.0)
    """The most share of draws one domain gets under 'bandit' or 'fixed' (so none takes
    over; with n domains, at least 1/n): what a domain's share has above it goes to the
    others in proportion to theirs. 1.0: no ceiling."""
    bandit_temperature: float = Field(0.1, gt=0.0)
    """domain_mix 'bandit': softmax temperature over the domains' scores (each an average,
    faded by `memory`, of its groups' mean absolute advantage, 0..1); lower is greedier."""
    prior_strength: float = Field(2.0, gt=0.0)
    """Pseudo-observations behind each task's prior success estimate (its mean set by the
    task's difficulty: 1 -> 0.7, 2 -> 0.4, 3 -> 0.15, none -> 0.5)."""
    pool_by: str = "family"
    """Tasks with the same value of this metadata key (in one domain) share their evidence:
    a task's prior is its family's observed success rate, shrunk towards the difficulty
    prior by prior_strength (the bundled sets mark each generated task's `family`, e.g.
    `add_{k}`). Empty: every task's estimate stands alone."""
    pool_cells: bool = True
    """Tasks of one domain at one difficulty share their evidence too, one level above
    families: a family's (or a lone task's) prior is its cell's observed success rate,
    shrunk towards the difficulty prior. A domain the model cannot solve at all is then
    known as such after a few of its groups, not after a visit to each of its tasks."""
    evidence: Literal["reward", "solved", "informative"] = "reward"
    """What the estimates count as success: 'reward' (each reply's total reward, clipped
    to 0..1, as a fractional success: partial credit makes a group informative even when
    no reply solves the task), 'solved' (the share of replies that solve the task), or
    'informative' (one event per group: were its rewards not all equal; learnability then
    draws in proportion to that chance, and the prefilter skips a task whose chance is at
    most 1 - prefilter. Under partial credit a task whose replies all earn the same part
    looks learnable by its mean reward, but its groups teach nothing)."""
    calibration_weight: float = Field(1.0, ge=0.0)
    """How many replies' worth of evidence each sampled reply of a task's calibration
    (`metadata.calibration`, written by `rlvr tasks calibrate`) counts as when the run
    starts: the estimate of a calibrated task begins from what the model earned on it,
    faded by `memory` like any other evidence and pooled with its family and cell. 0
    ignores calibrations."""
    family_cap: int | None = Field(None, ge=1)
    """learnability: at most this many draws of one family (tasks sharing `pool_by`'s
    metadata value in a domain; a task without one is a family of its own) among a pool's
    last `family_window` draws, so that a few families cannot take every draw; lifted for
    a draw only when every task left is capped. null: no cap."""
    family_window: int = Field(64, ge=1)
    """learnability: how many of a pool's latest draws the family cap counts."""
    memory: float = Field(0.9, gt=0.0, le=1.0)
    """Weight kept by a task's older evidence at each new group (1.0 = never forget): the
    model changes, so old outcomes count less."""
    floor: float = Field(0.02, ge=0.0)
    """learnability: weight added to every active task (p(1-p) is at most 0.25), so no task
    starves."""
    retire_after: int = Field(3, ge=1)
    """learnability: a task whose last N groups were all solved (or all failed) is retired."""
    retired_weight: float = Field(0.005, ge=0.0)
    """learnability: the weight of a retired task (it is revisited now and then; one mixed
    group brings it back)."""
    ladder_up: float = Field(0.6, gt=0.0, le=1.0)
    """ladder: move to the next harder band when the current band's rolling pass rate
    reaches this."""
    ladder_down: float = Field(0.1, ge=0.0, lt=1.0)
    """ladder: move back a band when the rolling pass rate falls to this."""
    ladder_window: int = Field(16, ge=1)
    """ladder: samples (replies) in the rolling pass rate; a move needs a full window."""
    ladder_review: float = Field(0.25, ge=0.0, le=1.0)
    """ladder: share of draws from the easier bands already passed (so they are not
    forgotten)."""
    prefilter: float | None = Field(None, gt=0.5, lt=1.0)
    """Skip a drawn task before generating when its estimate says the whole group will
    agree (all solved or all failed) with at least this probability, e.g. 0.95; every
    fourth such draw is generated anyway so the estimate can change. null: off."""

    @model_validator(mode="after")
    def _bands(self) -> CurriculumConfig:
        if self.ladder_down >= self.ladder_up:
            raise ValueError(f"curriculum.ladder_down ({self.ladder_down}) must be below ladder_up ({self.ladder_up})")
        if self.family_cap is not None and self.strategy != "learnability":
            raise ValueError(f"curriculum.family_cap applies to strategy learnability, not {self.strategy!r}")
        if self.max_domain_share < 1.0 and self.domain_mix == "pooled":
            raise ValueError("curriculum.max_domain_share applies to domain_mix bandit or fixed, not pooled")
        if self.max_domain_share < self.min_domain_share:
            raise ValueError(
                f"curriculum.max_domain_share ({self.max_domain_share}) is below min_domain_share "
                f"({self.min_domain_share})"
            )
        bad = {d: w for d, w in self.domain_weights.items() if w < 0}
        if bad:
            raise ValueError(f"curriculum.domain_weights must not be negative: {bad}")
        return self
