"""Policy-gradient losses over per-token log-probs.

Shapes: logprobs, old_logprobs, mask: [B, L]; advantages: [B] (one per sequence,
broadcast over its tokens) or [B, L]. Each loss returns (scalar loss, metrics).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rlvr.algos.aggregation import aggregate
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
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate with separate lower and upper clip (DAPO's clip-higher).

    per token: -min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A),
    ratio = exp(logprobs - old_logprobs). A raised `clip_high` lets low-probability
    tokens with positive advantage grow faster, which keeps entropy from collapsing.
    `is_weights` ([B, L] or [B], no gradient) multiply each token's loss: the importance
    correction from the behaviour policy when `old_logprobs` are a proximal policy's
    (decoupled PPO) or when rollouts came from a stale or mismatched engine.
    """
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1).expand_as(logprobs)  # [B, L]
    log_ratio = (logprobs - old_logprobs).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)  # [B, L]
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * advantages
    per_token = -torch.minimum(unclipped, clipped)  # [B, L]
    if is_weights is not None:
        w = is_weights.detach()
        per_token = per_token * (w.unsqueeze(1) if w.dim() == 1 else w)
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


@POLICY_LOSSES.register("gspo")
def gspo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 3e-4,
    clip_high: float = 4e-4,
    aggregation: str = "token-mean",
    num_tokens: float | None = None,
    num_seqs: float | None = None,
    norm_len: float | None = None,
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GSPO (Zheng et al. 2025): one importance ratio per *sequence*, the geometric mean
    of its token ratios, s = exp(mean_t(logprobs - old_logprobs)), clipped as a whole:
    per sequence -min(s * A, clip(s, 1 - clip_low, 1 + clip_high) * A), averaged over
    sequences (`aggregation` does not apply: the unit is the sequence). Its clip range is
    far narrower than PPO's (the paper uses 3e-4 / 4e-4). `is_weights` ([B]) multiply
    each sequence's loss."""
    del aggregation, num_tokens, norm_len
    m = mask.to(logprobs.dtype)
    lens = m.sum(dim=1).clamp(min=1.0)  # [B]
    seq_log_ratio = (((logprobs - old_logprobs) * m).sum(dim=1) / lens).clamp(-20.0, 20.0)  # [B]
    ratio = torch.exp(seq_log_ratio)  # [B]
    adv = advantages if advantages.dim() == 1 else (advantages * m).sum(dim=1) / lens  # [B]
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * adv
    per_seq = -torch.minimum(unclipped, clipped)  # [B]
    if is_weights is not None:
        w = is_weights.detach()
        per_seq = per_seq * (w if w.dim() == 1 else (w * m).sum(dim=1) / lens)
    has_tokens = (m.sum(dim=1) > 0).to(per_seq.dtype)
    n_seqs = num_seqs if num_seqs is not None else float(logprobs.shape[0])
    loss = (per_seq * has_tokens).sum() / n_seqs
    with torch.no_grad():
        n = has_tokens.sum().clamp(min=1.0)
        metrics = {
            "clip_frac": float(((unclipped > clipped).to(m.dtype) * has_tokens).sum() / n),
            "ratio_mean": float((ratio * has_tokens).sum() / n),
            "approx_kl_old": float(((0.5 * seq_log_ratio**2) * has_tokens).sum() / n),
        }
    return loss, metrics


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float = 0.2,
    num_tokens: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped value loss, token mean: 0.5 * max((V - R)^2, (clip(V, V_old +- clip) - R)^2)."""
    v_clipped = old_values + (values - old_values).clamp(-clip, clip)
    per_token = 0.5 * torch.maximum((values - returns) ** 2, (v_clipped - returns) ** 2)  # [B, L]
    loss = aggregate(per_token, mask, "token-mean", num_tokens=num_tokens)
    with torch.no_grad():
        m = mask.to(values.dtype)
        n = m.sum().clamp(min=1.0)
        metrics = {
            "value_clip_frac": float(
                (((values - returns) ** 2 < (v_clipped - returns) ** 2).to(m.dtype) * m).sum() / n
            ),
            "value_mean": float((values * m).sum() / n),
        }
    return loss, metrics
