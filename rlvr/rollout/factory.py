"""One place that builds generation engines from the config (`engine.kind`), for
rollouts (sync or async), evaluation and scoring alike."""

from __future__ import annotations

import os
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.rollout.engine import Engine


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
    e = cfg.engine
    if e.kind == "hf":
        from rlvr.rollout.hf import HFEngine

        if model is None:
            raise ConfigError("engine.kind hf generates with the policy model: none was loaded")
        return HFEngine(
            model,
            tokenizer,
            batch_size=cfg.generation.batch_size,
            compute_dtype=cfg.model.compute_dtype,
            packed_weights=cfg.generation.packed_weights,
            own_weights=own_weights,
            version=version,
        )
    if e.kind == "openai":
        from rlvr.rollout.openai import OpenAIEngine

        assert e.base_url is not None  # the config's validator requires it
        return OpenAIEngine(
            e.base_url,
            e.served_model or cfg.model.name_or_path,
            tokenizer,
            api_key=os.environ.get(e.api_key_env),
            concurrency=e.concurrency,
            timeout_s=e.timeout_s,
            max_retries=e.max_retries,
            require_token_ids=for_training,
            version=version,
            reload=e.reload,
            weights_uri=e.weights_uri or (str(cfg.run_dir / "weights") if e.reload != "none" else None),
            server_weights_path=e.server_weights_path,
        )
    try:
        from rlvr.rollout.vllm import VLLMEngine
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] == "vllm":
            raise ConfigError("engine.kind vllm needs vLLM: pip install 'rlvr[vllm]' (a CUDA machine)") from None
        raise
    return VLLMEngine(cfg, model, tokenizer, version=version)
