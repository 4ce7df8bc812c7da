"""The `engine` section: what generates rollouts, and each built-in engine's own settings.

An engine is looked up by `engine.kind` in rlvr.rollout.registry (hf, vllm, openai, and
any a plugin registers); the kind is checked against it when the run starts. Each
built-in engine's settings are a sub-section named after it (`engine.openai.base_url`,
`engine.vllm.gpu_memory_utilization`): a sub-section set for an engine the run does not
use is an error. A plugin engine reads `engine.options`.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from rlvr.config.base import _Section


def _resolved(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("resolved"))


class OpenAIEngineConfig(_Section):
    base_url: str | None = None
    """The server's base URL, e.g. http://127.0.0.1:8000/v1 (required with engine.kind openai)."""
    served_model: str | None = None
    """The model name the server knows; null: model.name_or_path."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (unset: no key sent)."""
    concurrency: int = Field(8, ge=1)
    """Requests in flight at once."""
    timeout_s: float = Field(120.0, gt=0)
    """Seconds a request may take before it is retried."""
    max_retries: int = Field(2, ge=0)
    """Retries of a request that failed to connect, timed out or got a 5xx."""
    reload: Literal["none", "vllm"] = "none"
    """How the server adopts each new policy version when training: none (it cannot:
    evaluation of a served model only), vllm (a vLLM server started with
    VLLM_SERVER_DEV_MODE=1: each version is written to engine.openai.weights_uri and the
    server reloads it in place through POST /collective_rpc reload_weights, then resets its
    prefix cache; docs/engines.md)."""
    weights_uri: str | None = None
    """With reload vllm: where each policy version is written (safetensors, one directory
    per version, older ones removed): a path or an fsspec URL (s3://...) that the server
    can read as engine.openai.server_weights_path; null: <run directory>/weights."""
    server_weights_path: str | None = None
    """With reload vllm: engine.openai.weights_uri as the server sees it (a shared mount
    elsewhere on its machine); null: engine.openai.weights_uri itself."""

    @model_validator(mode="after")
    def _reload_settings(self, info: ValidationInfo) -> OpenAIEngineConfig:
        if _resolved(info):  # a run's own config.yaml lists every key
            return self
        if self.reload == "none":
            unused = [n for n in ("weights_uri", "server_weights_path") if n in self.model_fields_set]
            if unused:
                raise ValueError("\n".join(f"{n}: set, but used only with engine.openai.reload 'vllm'" for n in unused))
        return self


class VLLMEngineConfig(_Section):
    gpu_memory_utilization: float = Field(0.4, gt=0, le=1)
    """Share of the GPU's memory vLLM may take (the learner needs the rest)."""


BUILTIN_SETTINGS = ("openai", "vllm")
"""The built-in engines that have a sub-section of their own (hf reads generation.* and model.*)."""


class EngineConfig(_Section):
    kind: str = "hf"
    """What generates rollouts and evaluations (docs/engines.md): hf (transformers, in
    process, the default), vllm (in-process vLLM, needs rlvr[vllm] and a GPU), openai (any
    server speaking the OpenAI completions API with token ids and log-probs), or an engine
    a plugin registers (rlvr.rollout.registry.register_engine)."""
    openai: OpenAIEngineConfig = Field(default_factory=OpenAIEngineConfig)
    """engine.kind openai: the server and how to talk to it."""
    vllm: VLLMEngineConfig = Field(default_factory=VLLMEngineConfig)
    """engine.kind vllm: the in-process vLLM engine's settings."""
    options: dict[str, Any] = Field(default_factory=dict)
    """A plugin engine's own settings, passed to its builder as they are."""

    @field_validator("kind")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"'{value}' is not an engine name (hf, vllm, openai, or a registered one)")
        return value

    @model_validator(mode="after")
    def _settings_of_the_chosen_engine(self, info: ValidationInfo) -> EngineConfig:
        if self.kind == "openai" and not self.openai.base_url:
            raise ValueError(
                "engine.kind openai needs engine.openai.base_url (the server, e.g. http://127.0.0.1:8000/v1)"
            )
        if _resolved(info):  # a run's own config.yaml lists every key
            return self
        wrong = [n for n in BUILTIN_SETTINGS if n in self.model_fields_set and n != self.kind]
        if "options" in self.model_fields_set and self.kind in ("hf", *BUILTIN_SETTINGS):
            wrong.append("options")
        if wrong:
            raise ValueError(
                "\n".join(
                    f"{n}: set, but engine.kind is '{self.kind}' (each engine reads its own settings)" for n in wrong
                )
            )
        return self
