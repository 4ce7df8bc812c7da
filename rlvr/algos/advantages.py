"""Advantage estimators, registered with what they need (rlvr.algos.names.EstimatorNeeds).

Group estimators take rewards shaped [B, G] (B prompts, G samples each) and return the
same shape; the learner broadcasts each sequence's advantage over its completion tokens.
Token estimators (`needs.token_rewards`, e.g. GAE) take rewards, values and a mask shaped
[B, L] and return (advantages, value targets), both [B, L].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from rlvr.algos.names import BUILTIN_ESTIMATORS, EstimatorNeeds
from rlvr.algos.registry import Registry

AdvantageFn = Callable[..., Any]
ADVANTAGES: Registry[AdvantageFn] = Registry("advantage estimator")
NEEDS: dict[str, EstimatorNeeds] = {}
"""What each registered estimator needs, by name."""


def register_advantage(name: str, needs: EstimatorNeeds | None = None) -> Callable[[AdvantageFn], AdvantageFn]:
    """Register an estimator with what it needs (a group estimator on [B, G] by default).
    A built-in one must declare what rlvr.algos.names says of it (read without torch)."""
    declared = needs or EstimatorNeeds()
    if name in BUILTIN_ESTIMATORS and BUILTIN_ESTIMATORS[name] != declared:
        raise ValueError(f"advantage estimator '{name}': its needs differ from rlvr.algos.names")

    def deco(fn: AdvantageFn) -> AdvantageFn:
        ADVANTAGES.register(name)(fn)
        NEEDS[name] = declared
        return fn

    return deco


@register_advantage("grpo")
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


@register_advantage("drgrpo")
def drgrpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Dr.GRPO (Liu et al. 2025): r - mean_group, no std scaling, which removes the bias
    towards groups with low reward variance (too easy or too hard prompts)."""
    del eps
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    return rewards - rewards.mean(dim=1, keepdim=True)


@register_advantage("rloo")
def rloo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RLOO (Ahmadian et al. 2024): each sample's baseline is the mean of the *other*
    G - 1 samples of its group: r_i - (sum_j r_j - r_i) / (G - 1). Unbiased, unlike a
    baseline that includes the sample itself; equals G / (G - 1) times Dr.GRPO's."""
    del eps
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    G = rewards.shape[1]
    if G < 2:
        return torch.zeros_like(rewards)
    others = (rewards.sum(dim=1, keepdim=True) - rewards) / (G - 1)  # [B, G]
    return rewards - others


@register_advantage("reinforce_pp")
def reinforce_pp_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """REINFORCE++ with baseline (Hu et al. 2025): subtract the group mean, then divide by
    the standard deviation over the *whole batch* (not per group), which keeps the scale
    stable without GRPO's per-group std that over-weights near-unanimous groups."""
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # [B, G]
    if centred.numel() < 2:
        return centred
    return centred / (centred.std() + eps)


@register_advantage("gae", EstimatorNeeds(values=True, token_rewards=True, group=False))
def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0, lam: float = 0.95
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016) over token positions.

    rewards, values, mask: [B, L] (mask 1 on real completion tokens, a contiguous prefix).
    delta_t = r_t + gamma * V_{t+1} - V_t, with V = 0 after the last token;
    A_t = delta_t + gamma * lam * A_{t+1}; returns R_t = A_t + V_t (the value targets).
    Positions outside the mask get 0 for both.
    """
    if not (rewards.shape == values.shape == mask.shape) or rewards.dim() != 2:
        raise ValueError(
            f"rewards, values and mask must share one [B, L] shape, got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}"
        )
    m = mask.to(rewards.dtype)
    r, v = rewards * m, values * m
    B, L = r.shape
    adv = torch.zeros_like(r)
    last = torch.zeros(B, dtype=r.dtype)
    for t in range(L - 1, -1, -1):
        next_v = v[:, t + 1] if t + 1 < L else torch.zeros(B, dtype=r.dtype)
        delta = r[:, t] + gamma * next_v - v[:, t]
        last = (delta + gamma * lam * last) * m[:, t]
        adv[:, t] = last
    return adv, (adv + v) * m


def whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(x - mean) / std over the masked entries (PPO's advantage normalisation)."""
    m = mask.to(x.dtype)
    n = m.sum().clamp(min=1.0)
    mean = (x * m).sum() / n
    var = (((x - mean) ** 2) * m).sum() / (n - 1).clamp(min=1.0)
    return (x - mean) / (var.sqrt() + eps) * m
