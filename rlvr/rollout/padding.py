"""Batches of distinct prompts, left-padded: what generation's shared prefill and the
learner's shared prompt pass both feed the model."""

from __future__ import annotations

from typing import NamedTuple

import torch


class DistinctPrompts(NamedTuple):
    """`row_to_prompt[r]`: the row of `ids` holding row r's prompt. `ids`, `mask` and
    `positions` are [U, P]: each distinct prompt once, left-padded so that every prompt
    ends at column P - 1 (its positions count from 0 at its first real token)."""

    row_to_prompt: list[int]
    ids: torch.Tensor
    mask: torch.Tensor
    positions: torch.Tensor


def distinct_prompts(prompts: list[list[int]], pad_id: int, *, share: bool = True) -> DistinctPrompts:
    """With `share=False` every row keeps its own copy (row r is row r of `ids`)."""
    uniq: dict[tuple[int, ...], int] = {}
    row_to_prompt = [uniq.setdefault(tuple(p), len(uniq)) for p in prompts] if share else list(range(len(prompts)))
    rows = list(uniq) if share else [tuple(p) for p in prompts]
    P = max(len(p) for p in rows)
    ids = torch.full((len(rows), P), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), P), dtype=torch.long)
    for u, p in enumerate(rows):
        ids[u, P - len(p) :] = torch.tensor(p)
        mask[u, P - len(p) :] = 1
    return DistinctPrompts(row_to_prompt, ids, mask, (mask.cumsum(-1) - 1).clamp(min=0))
