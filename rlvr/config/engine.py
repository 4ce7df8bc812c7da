"""The `engine` section: what generates rollouts.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rlvr.config.base import _Section


class EngineConfig(_Section):
    kind: Literal["hf", "vllm", "openai"] = "hf"
    """What generates rollouts and evaluations (docs/engines.md): hf (transformers, in
    process, the default), vllm (in-process vLLM, needs rlvr[vllm] and a GPU), openai (any
    server speaking the OpenAI completions API with token ids and log-probs)."""
    base_url: str | None = None
    """openai: the server's base URL, e.g. http://127.0.0.1:8000/v1."""
    served_model: str | None = None
    """openai: the model name the server knows; null: model.name_or_path."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: environment variable holding the API key (unset: no key sent)."""
    concurrency: int = Field(8, ge=1)
    """openai: requests in flight at once."""
    timeout_s: float = Field(120.0, gt=0)
    """openai: seconds a request may take before it is retried."""
    max_retries: int = Field(2, ge=0)
    """openai: retries of a request that failed to connect, timed out or got a 5xx."""
    reload: Literal["none", "vllm"] = "none"
    """openai: how the server adopts each new policy version when training: none (it
    cannot: evaluation of a served model only), vllm (a vLLM server started with
    VLLM_SERVER_DEV_MODE=1: each version is written to engine.weights_uri and the server
    reloads it in place through POST /collective_rpc reload_weights, then resets its prefix
    cache; docs/engines.md)."""
    weights_uri: str | None = None
    """openai with reload vllm: where each policy version is written (safetensors, one
    directory per version, older ones removed): a path or an fsspec URL (s3://...) that
    the server can read as engine.server_weights_path; null: <run directory>/weights."""
    server_weights_path: str | None = None
    """openai with reload vllm: engine.weights_uri as the server sees it (a shared mount
    elsewhere on its machine); null: engine.weights_uri itself."""
    gpu_memory_utilization: float = Field(0.4, gt=0, le=1)
    """vllm: share of the GPU's memory vLLM may take (the learner needs the rest)."""

    @model_validator(mode="after")
    def _needs_url(self) -> EngineConfig:
        if self.kind == "openai" and not self.base_url:
            raise ValueError("engine.kind openai needs engine.base_url (the server, e.g. http://127.0.0.1:8000/v1)")
        return self
