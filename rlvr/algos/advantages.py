"""Advantage estimators over groups of samples of the same prompt.

Input rewards are shaped [B, G]: B prompts, G samples each. Output has the same shape;
the learner broadcasts each sequence's advantage over its completion tokens.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rlvr.algos.registry import Registry

AdvantageFn = Callable[..., torch.Tensor]
ADVANTAGES: Registry[AdvantageFn] = Registry("advantage estimator")


@ADVANTAGES.register("grpo")
def grpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO (Shao et al. 2024): (r - mean_group) / (std_group + eps).

    std is the unbiased sample std (as TRL and verl use). A group whose rewards are all
    equal gets advantage 0 everywhere: it carries no learning signal.
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    mean = rewards.mean(dim=1, keepdim=True)  # [B, 1]
    if rewards.shape[1] < 2:
        return torch.zeros_like(rewards)
    std = rewards.std(dim=1, keepdim=True)  # [B, 1]
    return (rewards - mean) / (std + eps)


@ADVANTAGES.register("drgrpo")
def drgrpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Dr.GRPO (Liu et al. 2025): r - mean_group, no std scaling, which removes the bias
    towards groups with low reward variance (too easy or too hard prompts)."""
    del eps
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    return rewards - rewards.mean(dim=1, keepdim=True)
