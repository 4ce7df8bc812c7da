"""Procedural reasoning tasks from the `reasoning-gym` package, scored by its own scorers.

A task carries the generator's entry (question, answer, metadata) in its tests, so that
the dataset's `score_answer` judges the reply exactly as reasoning-gym intends (partial
credit included). Some scorers give a token amount to any answer at all (0.01 for a
well-formed wrong fraction, a letter-overlap share for "I don't know." when spelling
backwards): the value is normalised so that a non-answer earns 0 and a correct one
still 1, `(v - floor) / (1 - floor)` clipped at 0, where `floor` is the most the
dataset's scorer gives this entry for any of `NON_ANSWERS`; an empty final answer
scores 0 outright, and partial credit needs a declared answer (an `<answer>` tag, a
`\\boxed{}`, "answer is"/"Answer:"): a reply whose last line is taken as its answer
scores 1 when that line is right and 0 otherwise, since prose matched letter by letter
earns some scorers' partial credit. The raw score and the floor are in the details. The reply's
final answer is taken like the math domain's: the `<answer>` tag, the last `\\boxed{}`,
the text after "answer is", else the last line. A scorer that raises on a malformed
answer scores 0, with the error in the details. Single turn.

Task tests: `{"format": "reasoning_gym", "dataset": NAME, "entry": {...}}`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.extract import extract_final_answer
from rlvr.types import RewardBreakdown, Task

NON_ANSWERS = ("", "I don't know.", "I do not know", "unknown", "none", "n/a", "?", "0", "no answer")
"""Replies that answer nothing; what a scorer gives them is the floor taken off every score."""


@functools.cache
def scorer(dataset: str) -> Callable[[str, dict[str, Any]], float]:
    import reasoning_gym  # slow to import (~1.5 s): only when a task of this domain runs

    fn: Callable[[str, dict[str, Any]], float] = reasoning_gym.get_score_answer_fn(dataset)
    return fn


@register_env("reasoning")
class ReasoningGymEnv:
    components: tuple[str, ...] = ()  # only the verdict ('completion')

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
        score = scorer(str(self.task.tests["dataset"]))
        entry = self.task.tests["entry"]
        try:
            raw = float(score(answer, entry)) if answer.strip() else 0.0
        except Exception as e:  # a scorer that cannot read a malformed answer
            raw = 0.0
            details["scorer_error"] = f"{type(e).__name__}: {e}"[:200]
        raw = max(0.0, min(1.0, raw))
        if raw < 1.0 and not declares_answer(reply):
            details["undeclared_answer"] = True
            raw = 0.0
        floor = non_answer_floor(score, entry)
        value = max(0.0, (raw - floor) / (1.0 - floor)) if floor < 1.0 else 0.0
        if floor > 0:
            details.update(raw_score=raw, non_answer_floor=floor)
        return StepResult([], RewardBreakdown(value, {"completion": value}, details), done=True)


def non_answer_floor(score: Callable[[str, dict[str, Any]], float], entry: dict[str, Any]) -> float:
    """The most `score` gives this entry for a reply that answers nothing (0 when the
    scorer raises on all of them)."""
    best = 0.0
    for text in NON_ANSWERS:
        try:
            v = float(score(text, entry))
        except Exception:
            continue
        if text and text.strip().lower() == str(entry.get("answer", "")).strip().lower():
            continue  # the answer really is "0" / "none": not a non-answer for this entry
        best = max(best, min(1.0, v))
    return best


def declares_answer(reply: str) -> bool:
    """The reply states its answer (a tag, a box, "answer is"/"Answer:") rather than
    leaving the last line to be read as one."""
    return bool(re.search(r"<answer>.*?</answer>|\\boxed\{|answer is|answer:", reply, re.IGNORECASE | re.DOTALL))
