"""Format compliance: does the reply follow the declared output rules?

Each declared rule is checked; the value is the share of rules satisfied (1.0 when every
rule holds; 1.0 too when none is declared). Rules: a fenced code block; required
`<tag>...</tag>` pairs; a regular expression the reply must match; JSON output (taken
from the `<answer>` tag, else the first code block, else the whole reply) valid under a
JSON Schema.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rlvr.rewards.base import RewardComponent

_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class FormatRules:
    code_block: bool = False
    required_tags: tuple[str, ...] = ()
    regex: str | None = None
    json_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.regex is not None:
            re.compile(self.regex)
        if self.json_schema is not None:
            import jsonschema  # imported when a schema is used: ~35 ms off every CLI start

            jsonschema.Draft202012Validator.check_schema(self.json_schema)


def _tag(reply: str, tag: str) -> str | None:
    m = re.search(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", reply, re.DOTALL)
    return m.group(1) if m else None


def extract_answer(reply: str) -> str:
    """The `<answer>` content, else the first fenced block, else the reply."""
    tagged = _tag(reply, "answer")
    if tagged is not None:
        return tagged.strip()
    m = _FENCE.search(reply)
    return (m.group(1) if m else reply).strip()


def format_reward(reply: str, rules: FormatRules) -> RewardComponent:
    checks: dict[str, bool] = {}
    notes: dict[str, str] = {}
    if rules.code_block:
        checks["code_block"] = bool(_FENCE.search(reply))
    for tag in rules.required_tags:
        checks[f"tag:{tag}"] = _tag(reply, tag) is not None
    if rules.regex is not None:
        checks["regex"] = re.search(rules.regex, reply, re.DOTALL) is not None
    if rules.json_schema is not None:
        import jsonschema

        try:
            jsonschema.validate(json.loads(extract_answer(reply)), rules.json_schema)
            checks["json_schema"] = True
        except json.JSONDecodeError as e:
            checks["json_schema"], notes["json_schema"] = False, f"not JSON: {e.msg}"
        except jsonschema.ValidationError as e:
            checks["json_schema"], notes["json_schema"] = False, f"schema: {e.message}"[:300]
    value = sum(checks.values()) / len(checks) if checks else 1.0
    return RewardComponent(value, {"checks": checks, "notes": notes})
