"""Policy-gradient losses over per-token log-probs.

Shapes: logprobs, old_logprobs, mask: [B, L]; advantages: [B] (one per sequence,
broadcast over its tokens) or [B, L]. Each loss returns (scalar loss, metrics).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rlvr.algos.aggregate import aggregate
from rlvr.algos.registry import Registry

PolicyLossFn = Callable[..., tuple[torch.Tensor, dict[str, float]]]
POLICY_LOSSES: Registry[PolicyLossFn] = Registry("policy loss")


@POLICY_LOSSES.register("ppo_clip")
def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    aggregation: str = "token-mean",
    num_tokens: float | None = None,
    num_seqs: float | None = None,
    norm_len: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate with separate lower and upper clip (DAPO's clip-higher).

    per token: -min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A),
    ratio = exp(logprobs - old_logprobs). A raised `clip_high` lets low-probability
    tokens with positive advantage grow faster, which keeps entropy from collapsing.
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1).expand_as(logprobs)  # [B, L]
    log_ratio = (logprobs - old_logprobs).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)  # [B, L]
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * advantages
    per_token = -torch.minimum(unclipped, clipped)  # [B, L]
    loss = aggregate(per_token, mask, aggregation, num_tokens=num_tokens, num_seqs=num_seqs, norm_len=norm_len)
    with torch.no_grad():
        m = mask.to(per_token.dtype)
        n = m.sum().clamp(min=1.0)
        clipped_frac = (((unclipped > clipped).to(m.dtype)) * m).sum() / n
        metrics = {
            "clip_frac": float(clipped_frac),
            "ratio_mean": float((ratio * m).sum() / n),
            "approx_kl_old": float(((0.5 * log_ratio**2) * m).sum() / n),
        }
    return loss, metrics
