"""JSON output: the reply's JSON object (from `<answer>`, a code block, or the whole
reply) is compared field by field with the task's expected object. Completion is the
share of expected top-level fields whose value is exactly right (strings compared after
trimming spaces; nested objects and lists must match entirely); a reply that is not a
JSON object scores 0. The task's JSON Schema is what the format component checks.
A reply that offers several answers earns 0: two `<answer>` tags holding different
objects, or keys the schema forbids (`additionalProperties: false`), such as the same
field both nested and flattened, which lets a field-by-field comparison pick whichever
structure is right; or an object holding one key twice at any depth (`"city": "Pune",
"city": "Mumbai"`, also spelled with a `\\u` escape): a decoder keeps one of the two, so
both answers are offered and one is graded.
Task tests: `{"format": "json", "schema": {...}, "expected": {...}}`."""

from __future__ import annotations

import json
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.extract import answer_tags
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

    @staticmethod
    def reference_reply(task: Task) -> str | None:
        """The expected object in `<answer>` tags, as the prompts ask (the task's own
        reference when it has one)."""
        return task.reference or f"<answer>{json.dumps(task.tests['expected'], ensure_ascii=False)}</answer>"

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        expected: dict[str, Any] = self.task.tests["expected"]
        text = extract_answer(reply)
        try:
            answer = json.loads(text)
        except json.JSONDecodeError as e:
            return StepResult([], RewardBreakdown(0.0, {"completion": 0.0}, {"error": f"not JSON: {e.msg}"}), True)
        if not isinstance(answer, dict):
            why = f"expected a JSON object, got {type(answer).__name__}"
            return StepResult([], RewardBreakdown(0.0, {"completion": 0.0}, {"error": why}), True)
        matches = field_matches(answer, expected)
        value = sum(matches.values()) / max(len(matches), 1)
        details: dict[str, Any] = {"fields": matches}
        several = distinct_answers(reply)
        extra = forbidden_keys(answer, self.task.tests.get("schema") or {})
        twice = duplicate_keys(text)
        if value and several > 1:
            value, details["hedged"] = 0.0, f"{several} different answers in <answer> tags"
        elif value and twice:
            value, details["hedged"] = 0.0, f"a key given twice: {', '.join(twice[:5])}"
        elif value and extra:
            value, details["hedged"] = 0.0, f"keys the schema forbids: {', '.join(extra[:5])}"
        return StepResult([], RewardBreakdown(value, {"completion": value}, details), done=True)


def distinct_answers(reply: str) -> int:
    """How many different JSON values the reply's `<answer>` tags hold (text that is not
    JSON counts as itself)."""
    seen = set()
    for tag in answer_tags(reply):
        text = tag.strip()
        try:
            seen.add(json.dumps(json.loads(text), sort_keys=True))
        except json.JSONDecodeError:
            seen.add(text)
    return len(seen)


def duplicate_keys(text: str) -> list[str]:
    """The keys some object of the JSON `text` holds more than once (after decoding, so a
    `\\u` spelling counts), in order; [] for text that is not JSON."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        found.extend(k for i, k in enumerate(keys) if k in keys[:i] and k not in found)
        return dict(items)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError:
        return []
    return found


def forbidden_keys(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Keys of `value` that `schema` forbids (`additionalProperties: false`), at any depth
    of objects and array items, as dotted paths."""
    out: list[str] = []
    if isinstance(value, dict) and isinstance(schema, dict):
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            out += [f"{path}{k}" for k in value if k not in props]
        for k, v in value.items():
            if k in props:
                out += forbidden_keys(v, props[k], f"{path}{k}.")
    elif isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            out += forbidden_keys(v, schema["items"], f"{path}{i}.")
    return out
