"""Advantage estimators, policy losses and KL estimators: pure tensor functions,
looked up by name (`ADVANTAGES.get("grpo")`, `POLICY_LOSSES.get("ppo_clip")`,
`KL_ESTIMATORS.get("k3")`).

The names below are loaded on first use, so that `rlvr.algos.names` (the built-in names,
read by config validation) does not import torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlvr.algos.advantages import ADVANTAGES, drgrpo_advantages, grpo_advantages
    from rlvr.algos.aggregation import AGGREGATIONS, aggregate
    from rlvr.algos.kl import KL_ESTIMATORS, kl_k1, kl_k2, kl_k3
    from rlvr.algos.policy_loss import POLICY_LOSSES, ppo_clip_loss

_WHERE = {
    "ADVANTAGES": "advantages",
    "drgrpo_advantages": "advantages",
    "grpo_advantages": "advantages",
    "AGGREGATIONS": "aggregation",
    "aggregate": "aggregation",
    "KL_ESTIMATORS": "kl",
    "kl_k1": "kl",
    "kl_k2": "kl",
    "kl_k3": "kl",
    "POLICY_LOSSES": "policy_loss",
    "ppo_clip_loss": "policy_loss",
}

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


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"rlvr.algos.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'rlvr.algos' has no attribute {name!r}")
