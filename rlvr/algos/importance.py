"""Off-policy corrections: importance weights between the policy that generated the
tokens (behaviour, mu) and the policy the update is anchored to (proximal, pi_old).

Rollouts can come from an older policy version (asynchronous generation, replay) or from
an engine whose numerics differ from the trainer's. The PPO ratio is then taken against
the proximal policy (recomputed by the learner: decoupled PPO, Hilton et al. 2022 /
AReaL) and each token's loss is multiplied by w = pi_old / mu, truncated at `cap`
(truncated importance sampling, so that one unlikely token cannot blow up the update).

- "token": w_t = min(exp(prox_t - behav_t), cap)
- "sequence": w = min(exp(sum_t (prox_t - behav_t)), cap), one weight per sequence
"""

from __future__ import annotations

import torch

LEVELS = ("none", "token", "sequence")


def importance_weights(
    prox_logprobs: torch.Tensor, behav_logprobs: torch.Tensor, mask: torch.Tensor, level: str, cap: float = 2.0
) -> torch.Tensor:
    """[B, L] weights (0 outside the mask); level 'sequence' repeats one weight per row."""
    if level not in LEVELS:
        raise ValueError(f"unknown importance level '{level}'; valid: {', '.join(LEVELS)}")
    if cap <= 0:
        raise ValueError(f"cap must be positive, got {cap}")
    m = mask.to(prox_logprobs.dtype)
    if level == "none":
        return m.clone()
    log_w = ((prox_logprobs - behav_logprobs) * m).clamp(-20.0, 20.0)
    if level == "token":
        return torch.exp(log_w).clamp(max=cap) * m
    seq = torch.exp(log_w.sum(dim=1).clamp(-20.0, 20.0)).clamp(max=cap)  # [B]
    return seq.unsqueeze(1) * m
