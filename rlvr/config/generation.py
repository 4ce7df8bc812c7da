"""The `generation` section: how rollouts are sampled.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlvr.config.base import _Section


class GenerationConfig(_Section):
    max_new_tokens: int = Field(128, ge=1)
    """Largest number of tokens generated for one completion."""
    temperature: float = Field(1.0, gt=0.0)
    """Sampling temperature for training rollouts (evaluation is greedy)."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass. Behaviour log-probs are those of the temperature-scaled
    distribution before truncation, which the learner recomputes exactly when top_p = 1."""
    stop: list[str] = Field(default_factory=list)
    """Strings that end a completion (kept in it), besides the end-of-sequence token."""
    batch_size: int = Field(16, ge=1)
    """Most sequences generated together in one batch."""
    packed_weights: bool = True
    """On a CPU, decode with a copy of the weights pre-packed for oneDNN, made at each
    generate call and released after it (about 2x faster decoding; the same float32
    products up to summation order). See rlvr.rollout.packed."""
    single_query_attention: bool = True
    """Decoding steps attend their one query per row with two batched matrix products
    instead of PyTorch's flash kernel (models using sdpa attention; about a fifth of a
    float32 step saved on a CPU; equal up to summation order). See rlvr.rollout.attention."""
    compute_dtype: Literal["float32", "bfloat16"] | None = None
    """Precision of the products while generating; null: model.compute_dtype. bfloat16
    with float32 training generates from bfloat16 products (half the bytes read a step, on
    GPUs and CPUs with AVX-512 BF16 or AMX) while the learner computes its own float32
    log-probs, so the update stays exact; behaviour log-probs then differ from the
    learner's (logged as logprob_mismatch; see algo.importance)."""
