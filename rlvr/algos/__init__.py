"""Advantage estimators, policy losses and KL estimators: pure tensor functions,
looked up by name (`ADVANTAGES.get("grpo")`, `POLICY_LOSSES.get("ppo_clip")`,
`KL_ESTIMATORS.get("k3")`)."""

from rlvr.algos.advantages import ADVANTAGES, drgrpo_advantages, grpo_advantages
from rlvr.algos.aggregate import AGGREGATIONS, aggregate
from rlvr.algos.kl import KL_ESTIMATORS, kl_k1, kl_k2, kl_k3
from rlvr.algos.policy_loss import POLICY_LOSSES, ppo_clip_loss

__all__ = [
    "ADVANTAGES",
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "POLICY_LOSSES",
    "aggregate",
    "drgrpo_advantages",
    "grpo_advantages",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "ppo_clip_loss",
]
