"""A key/value cache for sampling that never copies what it already holds.

transformers' dynamic cache appends each new token by concatenation, copying the whole
cache of every layer at every decoding step (about a tenth of a step's time on a CPU).
This layer writes into a buffer allocated for the longest sequence the batch can reach
and hands attention views of the filled part; rows dropped from the batch are removed
by one gather, as before. Values are bit-for-bit those of the dynamic cache.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """One decoder layer's keys and values, [B, H, capacity, D] buffers filled left to right."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        cap = max(self.capacity, key_states.shape[-2])
        self._k = key_states.new_empty((*key_states.shape[:2], cap, key_states.shape[-1]))
        self._v = value_states.new_empty((*value_states.shape[:2], cap, value_states.shape[-1]))
        self.length = 0
        self.is_initialized = True

    def _views(self) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = self._k[:, :, : self.length], self._v[:, :, : self.length]
        self.keys, self.values = keys, values
        return keys, values

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, add = self.length, key_states.shape[-2]
        if n + add > self._k.shape[-2]:  # past the planned length: grow (amortised doubling)
            cap = max(2 * self._k.shape[-2], n + add)
            for name in ("_k", "_v"):
                old = getattr(self, name)
                new = old.new_empty((*old.shape[:2], cap, old.shape[-1]))
                new[:, :, :n] = old[:, :, :n]
                setattr(self, name, new)
        self._k[:, :, n : n + add] = key_states
        self._v[:, :, n : n + add] = value_states
        self.length = n + add
        return self._views()

    def get_seq_length(self) -> int:
        return self.length if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes the number of tokens to remove as a negative integer")
        if self.is_initialized and tokens_to_remove:
            self.length = max(0, self.length + tokens_to_remove)
            self._views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.get_seq_length() > 0:
            self._k = self._k.repeat_interleave(repeats, dim=0)
            self._v = self._v.repeat_interleave(repeats, dim=0)
            self._views()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.get_seq_length() > 0:
            self._k = self._k[indices]
            self._v = self._v[indices]
            self._views()

    def reset(self) -> None:
        self.length = 0
        self.is_initialized = False


def preallocated_cache(num_layers: int, capacity: int) -> DynamicCache:
    """A DynamicCache whose layers hold room for `capacity` positions from the start."""
    cache = DynamicCache()
    cache.layers = [PreallocatedLayer(capacity) for _ in range(num_layers)]
    return cache


RowKV = list[tuple[torch.Tensor, torch.Tensor]]
"""One row's keys and values per layer, each [H, T, D]: what an episode's context holds."""


def row_kv(cache: DynamicCache, row: int, start: int) -> RowKV:
    """Row `row`'s keys and values from position `start` (after its left padding) to the
    cache's current length, copied out of the batch."""
    out: RowKV = []
    for layer in cache.layers:
        assert isinstance(layer, PreallocatedLayer)
        out.append((layer._k[row, :, start : layer.length].clone(), layer._v[row, :, start : layer.length].clone()))
    return out


def kv_bytes(kv: RowKV) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)


def cache_from_rows(rows: list[RowKV], capacity: int) -> tuple[DynamicCache, list[int]]:
    """A batch cache holding `rows`, each right-aligned at the longest row's length (its
    left padding zeros, masked by the caller's attention mask), with room for `capacity`
    positions; and each row's padding. Zeros, not empty memory: a masked position gets
    weight 0, and 0 times a garbage infinity would still be NaN."""
    lengths = [r[0][0].shape[1] for r in rows]
    T = max(lengths)
    cache = DynamicCache()
    layers: list[Any] = []
    for li in range(len(rows[0])):
        k0, v0 = rows[0][li]
        layer = PreallocatedLayer(capacity)
        layer.dtype, layer.device = k0.dtype, k0.device
        layer._k = k0.new_zeros((len(rows), k0.shape[0], max(capacity, T), k0.shape[2]))
        layer._v = v0.new_zeros((len(rows), v0.shape[0], max(capacity, T), v0.shape[2]))
        for i, r in enumerate(rows):
            k, v = r[li]
            layer._k[i, :, T - lengths[i] : T] = k
            layer._v[i, :, T - lengths[i] : T] = v
        layer.length = T
        layer.is_initialized = True
        layer._views()
        layers.append(layer)
    cache.layers = layers
    return cache, [T - n for n in lengths]
