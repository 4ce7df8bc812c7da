"""The `algo` section: advantage estimator, policy loss, KL, importance weights, DAPO filters.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from rlvr.algos.names import BUILTIN, estimator_needs, registered
from rlvr.config.base import _Section


class AlgoConfig(_Section):
    advantage: str = "grpo"
    """Advantage estimator: 'grpo' (group mean/std), 'drgrpo' (group mean only), 'rloo'
    (leave-one-out mean), 'reinforce_pp' (group mean, batch std), or 'gae' (PPO: a value
    head on the policy, generalised advantage estimation over tokens)."""
    policy_loss: str = "ppo_clip"
    """Policy loss: 'ppo_clip' (token ratios) or 'gspo' (one ratio per sequence; use a
    narrow clip such as clip_low 3e-4, clip_high 4e-4)."""
    group_size: int = Field(4, ge=1)
    """Completions sampled per prompt (G); group estimators need G >= 2."""
    clip_low: float = Field(0.2, ge=0.0, lt=1.0)
    """Lower clip: the ratio is clipped below 1 - clip_low."""
    clip_high: float = Field(0.28, ge=0.0)
    """Upper clip: the ratio is clipped above 1 + clip_high (DAPO clip-higher)."""
    aggregation: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = "token-mean"
    """How per-token losses reduce to one number (see rlvr.algos.aggregation)."""
    kl_coef: float = Field(0.0, ge=0.0)
    """Weight of the KL penalty to the frozen initial policy; 0 loads no reference model."""
    kl_estimator: str = "k3"
    """KL estimator: 'k1', 'k2' or 'k3'. Used only when kl_coef > 0."""
    kl_in: Literal["loss", "reward"] = "loss"
    """Where the KL penalty goes: 'loss' (a term of the loss, GRPO style) or 'reward'
    (subtracted from the reward before advantages: per token with gae, summed per
    sequence otherwise; PPO/REINFORCE++ style)."""
    entropy_coef: float = Field(0.0, ge=0.0)
    """Entropy bonus: the loss subtracts entropy_coef times the mean token entropy."""
    updates_per_batch: int = Field(1, ge=1)
    """Optimizer passes over each rollout batch (1 = on-policy; >1 uses the clipped ratio)."""
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    """Discount over tokens (gae only)."""
    lam: float = Field(0.95, ge=0.0, le=1.0)
    """GAE lambda (gae only)."""
    value_coef: float = Field(0.5, ge=0.0)
    """Weight of the value loss (gae only)."""
    value_clip: float = Field(0.2, gt=0.0)
    """Clip of the value update around the rollout-time value (gae only)."""
    dynamic_sampling: Literal["none", "drop", "refill"] = "none"
    """DAPO dynamic sampling: groups whose rewards are all equal carry no signal; 'drop'
    trains without them, 'refill' samples more prompts until the batch is full again
    (at most max_refill_rounds extra rounds)."""
    max_refill_rounds: int = Field(3, ge=1)
    """Extra sampling rounds allowed per step with dynamic_sampling 'refill'."""
    overlong_filter: bool = False
    """DAPO overlong filtering: completions truncated at max_new_tokens get no loss."""
    compact_filter: bool = False
    """DeepSWE's compact filtering: a multi-turn episode cut by a budget (finish_reason
    'turns', 'context' or 'budget': out of turns, context, or the environment's own tool
    calls or time) gets no loss instead of being taught as a failure."""
    importance: Literal["none", "token", "sequence"] = "none"
    """Importance correction from the behaviour policy (that generated the tokens) to the
    proximal one (the policy at the start of this update), truncated at is_cap: needed
    when rollouts are stale (async, replay) or come from a different engine."""
    is_cap: float = Field(2.0, gt=0.0)
    """Truncation of importance weights."""
    decoupled: bool = False
    """Decoupled PPO: the clip ratio is taken against the proximal policy (recomputed by
    the learner) instead of the behaviour log-probs; combine with importance."""

    @field_validator("advantage", "policy_loss", "kl_estimator")
    @classmethod
    def _registered(cls, value: str, info: ValidationInfo) -> str:
        kind = str(info.field_name)
        if value in BUILTIN[kind]:
            return value
        names = registered(kind)
        if value not in names:
            raise ValueError(f"'{value}' is unknown; valid: {', '.join(names)}")
        return value

    @model_validator(mode="after")
    def _group(self) -> AlgoConfig:
        if estimator_needs(self.advantage).group and self.group_size < 2:
            raise ValueError(f"advantage '{self.advantage}' compares samples of a group: group_size must be >= 2")
        return self
