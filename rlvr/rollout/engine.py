"""The generation-engine protocol shared by the HF, vLLM and OpenAI back ends.

An engine owns the weights it generates with. The learner never reaches into it: after
each update it publishes a policy version, and the engine adopts it through
`load_version(version, weights)`. An engine that shares the learner's model object (the
HF engine in sync rollouts: `shares_weights` true) is handed no weights and only records
the version; any other engine is handed the new tensors and loads them its own way (a
copied model, vLLM's weight loader, a server's reload call). Engines are built from the
config by `rlvr.rollout.factory.make_engine` (`engine.kind: hf | vllm | openai`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

Report = Callable[[int], None]
"""An engine's progress callback: how many of the call's sequences are finished."""


class EngineError(RuntimeError):
    """The generation engine failed or cannot be used (a server that refuses or is gone,
    vLLM that cannot start). `retryable`: whether calling again may help; an engine that
    retries on its own raises only what retrying did not fix."""

    retryable = True


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    greedy: bool = False
    seed: int | None = None

    @classmethod
    def sampling(cls, generation: Any, seed: int) -> SamplingParams:
        """A run's sampling from its `generation` config section (max_new_tokens,
        temperature, top_p, stop) with this seed: the producer, rejection sampling and
        calibration draw their replies alike."""
        return cls(
            max_new_tokens=generation.max_new_tokens,
            temperature=generation.temperature,
            top_p=generation.top_p,
            stop=tuple(generation.stop),
            seed=seed,
        )


@dataclass
class Completion:
    """One sampled continuation: token ids [L], their behaviour log-probs [L] under the
    temperature-scaled policy, the decoded text, and why it ended ("eos", "stop", "length")."""

    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str
    timings: dict[str, float] = field(default_factory=dict)


class Engine(Protocol):
    version: int  # the policy version it generates with now
    shares_weights: bool  # True: it generates with the learner's own model object (updates are seen as made)

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, progress: Report | None = None
    ) -> list[Completion]:
        """Completions for prompt token ids, in the order given. `progress`, when given, is
        called with the number of finished sequences as they finish (for the display)."""
        ...

    def load_version(self, version: int, weights: Mapping[str, Any] | None) -> None:
        """Adopt policy `version`: `weights` are its tensors by name (the engine copies what
        it keeps: the caller may update them afterwards), or None for an engine that shares
        the learner's model (or evaluates a fixed model). The next `generate` uses it."""
        ...


def check_prompts(prompts: list[list[int]]) -> bool:
    """Whether there is anything to generate; raises ValueError on an empty prompt (every
    engine refuses one the same way: a model cannot continue nothing)."""
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    return bool(prompts)
