"""Math word problems: the reply's final answer (`<answer>`, the last `\\boxed{}`, or the
last line) is checked against the task's answer by `math-verify`. A right answer that
hedges (`\\boxed{542 \\text{ or } 543}`, two boxes, a list holding the answer:
`rlvr.rewards.commitment`) earns 0, with the reason in the details: math-verify accepts
an answer when any of the candidates it parses matches. So does a decimal that only
rounds to the expected fraction (`9.263158` for 176/19) unless the prompt asks for a
rounding or an approximation (`unasked_rounding`). Single turn; no code runs.
Task tests: `{"format": "answer", "answer": "115/28"}`."""

from __future__ import annotations

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.commitment import bound, hedge, unasked_percent, unasked_rounding, unasked_scale
from rlvr.rewards.extract import extract_final_answer
from rlvr.types import RewardBreakdown, Task


@register_env("math")
class MathAnswerEnv:
    components: tuple[str, ...] = ()  # only the verdict ('completion')

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    @staticmethod
    def check_task(task: Task) -> None:
        if task.tests.get("format") != "answer" or "answer" not in task.tests:
            raise ValueError(f"task {task.id}: field 'tests': math tasks need {{'format': 'answer', 'answer': ...}}")

    @staticmethod
    def reference_reply(task: Task) -> str | None:
        """The expected answer, boxed (the task's own reference when it has one, which may
        show its working)."""
        return task.reference or f"The answer is \\boxed{{{task.tests['answer']}}}."

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        from rlvr.rewards.math import math_reward  # math-verify is slow to import

        answer = extract_final_answer(reply)
        expected = str(self.task.tests["answer"])
        verdict = math_reward(answer, expected)
        details = {"answer": answer[:200], **verdict.details}
        value = verdict.value
        unit, prompt = None, self.task.prompt
        if value:
            unit = (
                unasked_percent(answer, expected, prompt)
                or unasked_scale(answer, expected, prompt)
                or unasked_rounding(answer, expected, prompt)
            )
        if unit:  # a unit game, not a hedge
            value, details["unit"] = 0.0, unit
        if value:
            reason = hedge(reply, answer, expected, lambda c: math_reward(c, expected).value >= 1.0)
            reason = reason or bound(answer, expected)
            if reason:
                value, details["hedged"] = 0.0, reason
        return StepResult([], RewardBreakdown(value, {"completion": value}, details), done=True)
