"""The names of rlvr's own advantage estimators, policy losses and KL estimators, and what
each estimator needs, without importing torch: a config naming one of them is validated
without loading the tensor stack (which `rlvr score` and `rlvr sandbox` never need, and
which `rlvr train` loads only once its inputs are checked). A name not listed here is
looked up in the registries of `rlvr.algos` (plugins add to those, with
`register_advantage(name, needs=...)`); tests/unit/test_config.py checks that these
lists match the registries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EstimatorNeeds:
    """What an advantage estimator needs, so that the learner and the config ask for it
    by these properties, never by the estimator's name."""

    values: bool = False
    """A value head on the policy, its rollout-time estimates and a value loss (gamma,
    lam, value_coef, value_clip apply)."""
    token_rewards: bool = False
    """Rewards per token ([B, L]: the sequence reward on the last token, per-token KL in
    the reward) instead of one per sequence grouped by prompt ([B, G])."""
    group: bool = True
    """It compares the samples of a prompt's group: algo.group_size must be >= 2."""


BUILTIN_ESTIMATORS = {
    "drgrpo": EstimatorNeeds(),
    "gae": EstimatorNeeds(values=True, token_rewards=True, group=False),
    "grpo": EstimatorNeeds(),
    "reinforce_pp": EstimatorNeeds(),
    "rloo": EstimatorNeeds(),
}

BUILTIN = {
    "advantage": tuple(BUILTIN_ESTIMATORS),
    "policy_loss": ("gspo", "ppo_clip"),
    "kl_estimator": ("k1", "k2", "k3"),
}


def registered(kind: str) -> list[str]:
    """Every name valid for `kind` now, plugins' included (imports rlvr.algos)."""
    from rlvr.algos import ADVANTAGES, KL_ESTIMATORS, POLICY_LOSSES

    return {
        "advantage": ADVANTAGES.names(),
        "policy_loss": POLICY_LOSSES.names(),
        "kl_estimator": KL_ESTIMATORS.names(),
    }[kind]


def estimator_needs(name: str) -> EstimatorNeeds:
    """What the estimator `name` needs (a plugin's: as it registered; imports rlvr.algos)."""
    if name in BUILTIN_ESTIMATORS:
        return BUILTIN_ESTIMATORS[name]
    from rlvr.algos.advantages import NEEDS

    if name not in NEEDS:
        raise KeyError(f"unknown advantage estimator '{name}'; valid names: {', '.join(registered('advantage'))}")
    return NEEDS[name]
