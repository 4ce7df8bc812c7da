"""JSON output: the reply's JSON object (from `<answer>`, a code block, or the whole
reply) is compared field by field with the task's expected object. Completion is the
share of expected top-level fields whose value is exactly right (strings compared after
trimming spaces; nested objects and lists must match entirely); a reply that is not a
JSON object scores 0. The task's JSON Schema is what the format component checks.
Task tests: `{"format": "json", "schema": {...}, "expected": {...}}`."""

from __future__ import annotations

import json
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.format import extract_answer
from rlvr.types import RewardBreakdown, Task


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    return type(a) is type(b) and a == b


def field_matches(answer: dict[str, Any], expected: dict[str, Any]) -> dict[str, bool]:
    return {k: k in answer and _same(answer[k], v) for k, v in expected.items()}


@register_env("json")
class JsonOutputEnv:
    components: tuple[str, ...] = ()  # only the verdict ('completion')

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    @staticmethod
    def check_task(task: Task) -> None:
        if task.tests.get("format") != "json" or not isinstance(task.tests.get("expected"), dict):
            need = "{'format': 'json', 'expected': {...}}"
            raise ValueError(f"task {task.id}: field 'tests': json tasks need {need}")

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        expected: dict[str, Any] = self.task.tests["expected"]
        try:
            answer = json.loads(extract_answer(reply))
        except json.JSONDecodeError as e:
            return StepResult([], RewardBreakdown(0.0, {"completion": 0.0}, {"error": f"not JSON: {e.msg}"}), True)
        if not isinstance(answer, dict):
            why = f"expected a JSON object, got {type(answer).__name__}"
            return StepResult([], RewardBreakdown(0.0, {"completion": 0.0}, {"error": why}), True)
        matches = field_matches(answer, expected)
        value = sum(matches.values()) / max(len(matches), 1)
        return StepResult([], RewardBreakdown(value, {"completion": value}, {"fields": matches}), done=True)
