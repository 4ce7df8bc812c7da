"""DAPO's batch filters (Yu et al. 2025).

- Dynamic sampling: a group whose G rewards are all equal has zero group-relative
  advantage everywhere and only dilutes the batch; `informative_groups` marks the others.
  The loop then drops the uninformative groups, or keeps sampling new prompts until the
  batch is full again (refill), as configured.
- Overlong filtering: a completion cut off by the token limit has no real outcome; its
  tokens are excluded from the loss (`overlong_loss_mask`).
- Compact filtering (DeepSWE, Luo et al. 2025): a multi-turn episode cut by a budget
  (out of turns, context or the environment's own calls or time) has no real outcome
  either; `budget_cut_loss_mask` excludes it the same way.
"""

from __future__ import annotations

import torch


def informative_groups(rewards: torch.Tensor, tol: float = 1e-9) -> torch.Tensor:
    """rewards [B, G] -> bool [B]: True where the group's rewards are not all equal."""
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [B, G], got shape {tuple(rewards.shape)}")
    return (rewards.max(dim=1).values - rewards.min(dim=1).values) > tol


def overlong_loss_mask(finish_reasons: list[str]) -> list[int]:
    """1 per sequence that ended on its own (eos/stop), 0 for those truncated at the limit."""
    return [0 if r == "length" else 1 for r in finish_reasons]


BUDGET_CUTS = ("turns", "context", "budget")
"""finish_reasons of an episode its budget ended (rlvr.rollout.runner)."""


def budget_cut_loss_mask(finish_reasons: list[str]) -> list[int]:
    """1 per episode that ended on its own (a submit, a final answer), 0 for budget cuts."""
    return [0 if r in BUDGET_CUTS else 1 for r in finish_reasons]
