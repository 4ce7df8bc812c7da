"""Python function writing: the model writes a function, its tests run in the sandbox.

Single turn: the reply's code (the first fenced block, or the whole reply if there is
none) is executed against the task's assert tests; the reward is the completion reward.
"""

from __future__ import annotations

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards import completion_reward
from rlvr.rewards.extract import extract_code
from rlvr.types import RewardBreakdown, Task


@register_env("python")
class PythonFunctionEnv:
    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    def reset(self, task: Task) -> list[dict[str, str]]:
        if task.tests.get("format") not in ("assert", "call", "stdio", "script"):
            raise ValueError(f"task {task.id}: tests need a 'format' of assert, call, stdio or script")
        self.task = task
        return opening_messages(task, self.settings)

    def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        code = extract_code(reply)
        result = self.settings.execute(code, self.task.tests)
        value = completion_reward(result, self.settings.timeout_penalty)
        reward = RewardBreakdown(
            total=value,
            components={"completion": value},
            details={"passed": result.passed, "total": result.total, "status": result.status.value},
        )
        return StepResult(messages=[], reward=reward, done=True, execution=result)
