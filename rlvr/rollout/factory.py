"""The built-in engines' builders (registered in rlvr.rollout.registry) and `make_engine`,
the one place that builds an engine from the config, for rollouts (sync or async),
evaluation and scoring alike."""

from __future__ import annotations

import os
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.rollout.engine import Engine
from rlvr.rollout.registry import ENGINES, register_engine


def make_engine(
    cfg: RunConfig,
    model: Any,
    tokenizer: Any,
    *,
    own_weights: bool = False,
    version: int = 0,
    for_training: bool = True,
) -> Engine:
    """The engine `cfg.engine.kind` names. `model` is the policy (None is allowed for a
    remote server that serves its own); `own_weights`: the engine must not share the
    learner's model object (async rollouts) — engines that always hold their own weights
    (vllm, openai) ignore it. `for_training` False (evaluation) lets a server that reports
    sampled tokens only as text be used: its completions are scored, never trained on."""
    build = ENGINES.get(cfg.engine.kind)
    if build is None:
        raise ConfigError(f"engine.kind: no engine '{cfg.engine.kind}'; valid: {', '.join(ENGINES)}")
    return build(cfg, model, tokenizer, own_weights=own_weights, version=version, for_training=for_training)


@register_engine("hf")
def _hf(cfg: RunConfig, model: Any, tokenizer: Any, *, own_weights: bool, version: int, for_training: bool) -> Engine:
    from rlvr.rollout.hf import HFEngine

    if model is None:
        raise ConfigError("engine.kind hf generates with the policy model: none was loaded")
    return HFEngine(
        model,
        tokenizer,
        batch_size=cfg.generation.batch_size,
        compute_dtype=cfg.generation.compute_dtype or cfg.model.compute_dtype,
        packed_weights=cfg.generation.packed_weights,
        fast_attention=cfg.generation.single_query_attention,
        own_weights=own_weights,
        version=version,
    )


@register_engine("vllm")
def _vllm(cfg: RunConfig, model: Any, tokenizer: Any, *, own_weights: bool, version: int, for_training: bool) -> Engine:
    try:
        from rlvr.rollout.vllm import VLLMEngine
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "vllm":
            raise ConfigError("engine.kind vllm needs vLLM: pip install 'rlvr[vllm]' (a CUDA machine)") from None
        raise
    return VLLMEngine(cfg, model, tokenizer, version=version)


@register_engine("openai")
def _openai(
    cfg: RunConfig, model: Any, tokenizer: Any, *, own_weights: bool, version: int, for_training: bool
) -> Engine:
    from rlvr.rollout.openai import OpenAIEngine

    o = cfg.engine.openai
    assert o.base_url is not None  # the config's validator requires it
    return OpenAIEngine(
        o.base_url,
        o.served_model or cfg.model.name_or_path,
        tokenizer,
        api_key=os.environ.get(o.api_key_env),
        concurrency=o.concurrency,
        timeout_s=o.timeout_s,
        max_retries=o.max_retries,
        require_token_ids=for_training,
        version=version,
        reload=o.reload,
        weights_uri=o.weights_uri or (str(cfg.run_dir / "weights") if o.reload != "none" else None),
        server_weights_path=o.server_weights_path,
    )
