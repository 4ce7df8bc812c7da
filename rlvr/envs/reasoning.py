"""Procedural reasoning tasks from the `reasoning-gym` package, scored by its own scorers.

A task carries the generator's entry (question, answer, metadata) in its tests, so that
the dataset's `score_answer` judges the reply exactly as reasoning-gym intends (partial
credit included: some scorers give 0.01-0.05 for a well-formed wrong answer). The reply's
final answer is taken like the math domain's: the `<answer>` tag, the last `\\boxed{}`,
the text after "answer is", else the last line. A scorer that raises on a malformed
answer scores 0, with the error in the details. Single turn.

Task tests: `{"format": "reasoning_gym", "dataset": NAME, "entry": {...}}`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.extract import extract_final_answer
from rlvr.types import RewardBreakdown, Task


@functools.cache
def scorer(dataset: str) -> Callable[[str, dict[str, Any]], float]:
    import reasoning_gym  # slow to import (~1.5 s): only when a task of this domain runs

    fn: Callable[[str, dict[str, Any]], float] = reasoning_gym.get_score_answer_fn(dataset)
    return fn


@register_env("reasoning")
class ReasoningGymEnv:
    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    @staticmethod
    def check_task(task: Task) -> None:
        t = task.tests
        if t.get("format") != "reasoning_gym" or not isinstance(t.get("entry"), dict) or "dataset" not in t:
            raise ValueError(
                f"task {task.id}: field 'tests': need {{'format': 'reasoning_gym', 'dataset': NAME, 'entry': {{...}}}}"
            )
        if "answer" not in t["entry"]:
            raise ValueError(f"task {task.id}: field 'tests.entry' has no 'answer'")

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        answer = extract_final_answer(reply)
        details: dict[str, Any] = {"answer": answer[:200], "dataset": self.task.tests["dataset"]}
        try:
            value = float(scorer(str(self.task.tests["dataset"]))(answer, self.task.tests["entry"]))
        except Exception as e:  # a scorer that cannot read a malformed answer
            value = 0.0
            details["scorer_error"] = f"{type(e).__name__}: {e}"[:200]
        value = max(0.0, min(1.0, value))
        return StepResult([], RewardBreakdown(value, {"completion": value}, details), done=True)
