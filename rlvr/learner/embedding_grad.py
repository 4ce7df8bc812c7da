"""The input embedding's gradient as a sparse update when the embedding is tied to the
output head.

A micro-batch's backward through `nn.Embedding` builds a dense vocabulary x hidden
gradient (49152 x 576 floats for SmolLM2-135M: a 113 MB zero-fill and scatter, ~70-270 ms
on a 2-core CPU) for the few hundred rows its tokens touch, then adds it to the weight's
gradient. With the weight tied to the output head, that gradient is already dense (the
head's), so the embedding's share can arrive sparse (`nn.Embedding.sparse`: the rows
touched, added in place, ~2 ms) and the weight's gradient stays dense. The sum is the
same up to the order of additions. Untied embeddings keep the dense gradient (a sparse
one would reach the optimizer as is).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


def _tied_embedding(model: torch.nn.Module) -> torch.nn.Embedding | None:
    get_in = getattr(model, "get_input_embeddings", None)
    get_out = getattr(model, "get_output_embeddings", None)
    if get_in is None or get_out is None:
        return None
    emb, head = get_in(), get_out()
    if not isinstance(emb, torch.nn.Embedding) or head is None or getattr(head, "weight", None) is not emb.weight:
        return None
    if not emb.weight.requires_grad or emb.sparse:
        return None
    return emb


@contextlib.contextmanager
def sparse_tied_embedding_grads(model: torch.nn.Module) -> Iterator[bool]:
    """Within the block, a tied input embedding sends its gradient sparse; yields whether
    it applies. On exit the weight's gradient is dense (made so if only sparse parts
    arrived) and the embedding is as it was."""
    emb = _tied_embedding(model)
    if emb is None:
        yield False
        return
    emb.sparse = True
    try:
        yield True
    finally:
        emb.sparse = False
        grad = emb.weight.grad
        if grad is not None and grad.is_sparse:
            emb.weight.grad = grad.to_dense()
