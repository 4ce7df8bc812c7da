"""The names of rlvr's own advantage estimators, policy losses and KL estimators, without
importing torch: a config naming one of them is validated without loading the tensor
stack (which `rlvr score` and `rlvr sandbox` never need, and which `rlvr train` loads only
once its inputs are checked). A name not
listed here is looked up in the registries of `rlvr.algos` (plugins add to those);
tests/unit/test_config.py checks that these lists match the registries."""

from __future__ import annotations

BUILTIN = {
    "advantage": ("drgrpo", "gae", "grpo", "reinforce_pp", "rloo"),
    "policy_loss": ("gspo", "ppo_clip"),
    "kl_estimator": ("k1", "k2", "k3"),
}


def registered(kind: str) -> list[str]:
    """Every name valid for `kind` now, plugins' included (imports rlvr.algos)."""
    from rlvr.algos import ADVANTAGES, KL_ESTIMATORS, POLICY_LOSSES

    return {
        "advantage": [*ADVANTAGES.names(), "gae"],
        "policy_loss": POLICY_LOSSES.names(),
        "kl_estimator": KL_ESTIMATORS.names(),
    }[kind]
