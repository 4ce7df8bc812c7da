"""Reducing per-token loss values [B, L] under a mask to a scalar.

Each mode takes optional global normalisers so that a batch split into micro-batches
(gradient accumulation) gives exactly the loss of the whole batch: pass the whole
batch's `num_tokens` / `num_seqs` to every micro-batch and sum the micro-batch losses.

- "token-mean": sum of all token values / number of tokens (DAPO; long answers weigh more)
- "seq-mean-token-mean": mean over tokens within a sequence, then mean over sequences
  (the original GRPO; every sequence weighs the same)
- "seq-mean-token-sum": sum over tokens within a sequence / `norm_len`, then mean over
  sequences (Dr.GRPO; a constant length normaliser, no length bias)
"""

from __future__ import annotations

import torch

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    *,
    num_tokens: float | None = None,
    num_seqs: float | None = None,
    norm_len: float | None = None,
) -> torch.Tensor:
    """values, mask: [B, L]. Returns a scalar."""
    if values.shape != mask.shape:
        raise ValueError(f"values {tuple(values.shape)} and mask {tuple(mask.shape)} differ")
    mask = mask.to(values.dtype)
    if mode == "token-mean":
        denom = num_tokens if num_tokens is not None else mask.sum().clamp(min=1.0)
        return (values * mask).sum() / denom
    n_seqs = num_seqs if num_seqs is not None else float(values.shape[0])
    seq_sums = (values * mask).sum(dim=1)  # [B]
    if mode == "seq-mean-token-mean":
        seq_means = seq_sums / mask.sum(dim=1).clamp(min=1.0)  # [B]
        return seq_means.sum() / n_seqs
    if mode == "seq-mean-token-sum":
        if norm_len is None:
            raise ValueError("aggregation 'seq-mean-token-sum' needs norm_len (e.g. max_new_tokens)")
        return seq_sums.sum() / (n_seqs * norm_len)
    raise ValueError(f"unknown aggregation '{mode}'; valid: {', '.join(AGGREGATIONS)}")
