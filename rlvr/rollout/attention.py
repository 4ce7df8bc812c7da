"""Attention for one new token per row, as a CPU decodes.

A decoding step asks attention for one query per row against the row's whole cache.
PyTorch's scaled-dot-product kernel on a CPU is a flash kernel tiled for long queries:
for a single query it spends ~250 us a layer at the quickstart's batch (16 rows, 9 query
heads over 3 key/value heads, ~100 cached positions), a sixth of a float32 step. The same
product as two batched matrix products, the query heads of each key/value head stacked
as the rows of one product (no copy of the cache per query head), takes a third of that.

`decode_attention(model)` routes a transformers model's attention through
`single_query_attention` for the duration of a block, where the model uses the `sdpa`
implementation; anything else (a prompt's prefill, gradients being recorded, dropout,
soft-capping, attention sinks or a position bias) takes transformers' own sdpa path. The
scores and softmax are computed in float32 with autocast off, in the dtype the cache holds
(under a bfloat16 region the cache is float32, and casting it at every step would cost
more than the product). Results differ from the flash kernel's by summation order only
(relative ~1e-6).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

NAME = "rlvr_single_query"
_UNSUPPORTED = ("softcap", "position_bias", "sinks", "s_aux", "sliding_window_bias")


def single_query_attention(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None, scaling: float | None
) -> torch.Tensor:
    """softmax(q k^T * scaling + mask) v for one query per row.

    query [B, H, 1, D]; key [B, Hk, L, D] and value [B, Hk, L, Dv] with H a multiple of
    Hk (query head h reads key/value head h // (H / Hk), as transformers' repeat_kv);
    mask None, boolean [B or 1, 1, 1, L] (True: attend) or additive float of that shape.
    Returns [B, 1, H, Dv], the layout transformers' attention functions return."""
    b, h, q_len, d = query.shape
    hk = key.shape[1]
    if q_len != 1 or h % hk:
        raise ValueError(
            f"one query per row over a whole number of query heads per key head, got {query.shape} and {key.shape}"
        )
    with torch.autocast(query.device.type, enabled=False):
        q = query.to(key.dtype).reshape(b, hk, h // hk, d)  # the heads sharing a key/value head stacked as rows
        scores = torch.matmul(q, key.transpose(-1, -2)).float()  # [B, Hk, g, L]
        scores = scores * (scaling if scaling is not None else d**-0.5)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
        probs = torch.softmax(scores, dim=-1).to(value.dtype)
        out = torch.matmul(probs, value)  # [B, Hk, g, Dv]
    return out.reshape(b, 1, h, value.shape[-1])


def _attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    single = (
        query.shape[2] == 1
        and not torch.is_grad_enabled()
        and not dropout
        and query.shape[1] % key.shape[1] == 0
        and not any(kwargs.get(k) is not None for k in _UNSUPPORTED)
        and not kwargs.get("output_attentions", False)
    )
    if not single:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    return single_query_attention(query, key, value, attention_mask, scaling), None


ALL_ATTENTION_FUNCTIONS.register(NAME, _attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)  # the masks sdpa gets, so the fallback reads them too


def _configs(model: torch.nn.Module) -> list[Any]:
    """Every distinct config object the model's modules read their attention from."""
    seen: dict[int, Any] = {}
    for module in model.modules():
        cfg = getattr(module, "config", None)
        if cfg is not None and hasattr(cfg, "_attn_implementation"):
            seen.setdefault(id(cfg), cfg)
    return list(seen.values())


@contextlib.contextmanager
def decode_attention(model: torch.nn.Module) -> Iterator[bool]:
    """Within the block, a model using `sdpa` attends single queries with
    `single_query_attention`; yields whether it was switched (False for other
    implementations: eager, flash, flex, a model's own). Restored on exit, also on error."""
    configs = [c for c in _configs(model) if c._attn_implementation == "sdpa"]
    for cfg in configs:
        cfg._attn_implementation = NAME
    try:
        yield bool(configs)
    finally:
        for cfg in configs:
            cfg._attn_implementation = "sdpa"
