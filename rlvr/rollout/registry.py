"""Generation engines by name: `engine.kind` is looked up here.

    @register_engine("myserver")
    def build(cfg, model, tokenizer, *, own_weights, version, for_training) -> Engine: ...

A builder takes the run config (a plugin engine reads `cfg.engine.options`), the policy
model (None where the engine serves its own weights) and tokenizer, and returns an object
keeping the `Engine` protocol (rlvr.rollout.engine; tests/integration/test_engine_contract.py
holds every engine to it). `own_weights`: the engine must not share the learner's model
object (async rollouts); `version`: the policy version it starts with; `for_training`
False (evaluation) lets an engine that cannot report sampled token ids be used.
The built-in engines (hf, vllm, openai) register in rlvr.rollout.factory, importing their
heavy modules only when built; this module imports nothing heavy, so the CLI checks a
kind before torch is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rlvr.config import RunConfig
    from rlvr.rollout.engine import Engine


class EngineBuilder(Protocol):
    def __call__(
        self, cfg: RunConfig, model: Any, tokenizer: Any, *, own_weights: bool, version: int, for_training: bool
    ) -> Engine: ...


ENGINES: dict[str, EngineBuilder] = {}


def register_engine(name: str) -> Callable[[EngineBuilder], EngineBuilder]:
    """Register `build` as the engine `name` (a decorator); a name is taken once."""

    def deco(build: EngineBuilder) -> EngineBuilder:
        if not name.isidentifier():
            raise ValueError(f"engine name {name!r} is not an identifier")
        if name in ENGINES:
            raise ValueError(f"engine {name!r} is already registered")
        ENGINES[name] = build
        return build

    return deco


def check_engine_kind(cfg: RunConfig) -> None:
    """ConfigError naming `engine.kind` when no engine of that name is registered."""
    from rlvr.config import ConfigError

    names = engine_names()
    if cfg.engine.kind not in names:
        raise ConfigError(f"engine.kind: no engine '{cfg.engine.kind}'; valid: {', '.join(names)}")


def engine_names() -> list[str]:
    """Every registered engine, the built-in ones first."""
    import rlvr.rollout.factory  # noqa: F401  (the built-in engines register themselves)

    return list(ENGINES)
