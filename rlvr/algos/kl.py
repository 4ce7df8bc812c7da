"""Per-token estimators of KL(policy || reference) from log-probs of sampled tokens.

With x ~ policy and log_ratio = logp - ref_logp (Schulman, "Approximating KL divergence"):
- k1 = log_ratio                        unbiased, high variance, can be negative
- k2 = log_ratio**2 / 2                 biased, low variance, >= 0
- k3 = exp(-log_ratio) - 1 + log_ratio  unbiased, low variance, >= 0 (GRPO's choice)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rlvr.algos.registry import Registry

KLFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
KL_ESTIMATORS: Registry[KLFn] = Registry("KL estimator")


@KL_ESTIMATORS.register("k1")
def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    return logp - ref_logp


@KL_ESTIMATORS.register("k2")
def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    return 0.5 * (logp - ref_logp) ** 2


@KL_ESTIMATORS.register("k3")
def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)  # log(ref/p), clamped against overflow
    return torch.exp(log_ratio) - 1.0 - log_ratio
