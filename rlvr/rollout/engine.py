"""The generation-engine protocol shared by the HF, vLLM and OpenAI back ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

Report = Callable[[int], None]
"""An engine's progress callback: how many of the call's sequences are finished."""


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    greedy: bool = False
    seed: int | None = None


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
    def generate(
        self, prompts: list[list[int]], params: SamplingParams, progress: Report | None = None
    ) -> list[Completion]:
        """Completions for prompt token ids, in the order given. `progress`, when given, is
        called with the number of finished sequences as they finish (for the display)."""
        ...

    def load_weights(self, state_dict: dict[str, object]) -> None:
        """Adopt new policy weights (a no-op when the engine shares the learner's model)."""
        ...
