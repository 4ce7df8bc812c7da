"""Pulling the code or the answer out of a model's reply (shared by environments and rewards)."""

from __future__ import annotations

import re

_CODE_FENCE = re.compile(r"```[ \t]*(?:python|py|Python|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_BOXED = re.compile(r"\\boxed\{")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def extract_code(reply: str) -> str:
    """The first fenced code block (closed or not); the whole reply when there is no fence."""
    m = _CODE_FENCE.search(reply)
    return m.group(1) if m else reply


def _boxed(reply: str) -> str | None:
    """The content of the last \\boxed{...}, braces balanced."""
    starts = [m.end() for m in _BOXED.finditer(reply)]
    if not starts:
        return None
    i = starts[-1]
    depth = 1
    for j in range(i, len(reply)):
        if reply[j] == "{":
            depth += 1
        elif reply[j] == "}":
            depth -= 1
            if depth == 0:
                return reply[i:j]
    return None


def extract_final_answer(reply: str) -> str:
    """A reply's final answer: the `<answer>` tag, else the last \\boxed{}, else the text
    after the last 'answer is'/'Answer:', else the last line. Returned stripped."""
    tags = _ANSWER_TAG.findall(reply)
    if tags:
        return str(tags[-1]).strip()
    boxed = _boxed(reply)
    if boxed is not None:
        return boxed.strip()
    m = list(re.finditer(r"(?:answer is|answer:)\s*(.+)", reply, re.IGNORECASE))
    if m:
        return m[-1].group(1).strip().rstrip(".")
    lines = [ln for ln in reply.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""
