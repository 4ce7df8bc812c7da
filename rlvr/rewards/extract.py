"""Pulling the code or the answer out of a model's reply (shared by environments and rewards)."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+#-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
# the info strings a fenced block of each language may carry (an untagged block counts too)
FENCE_TAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "py", "python3"}),
    "cpp": frozenset({"cpp", "c++", "cc", "cxx", "hpp"}),
    "c": frozenset({"c", "h"}),
    "javascript": frozenset({"javascript", "js", "node", "nodejs", "mjs"}),
}
_BOXED = re.compile(r"\\boxed\{")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def extract_code(reply: str, language: str = "python") -> str:
    """The first fenced code block (closed or not) tagged for `language` or untagged; the
    whole reply when there is no such block. Blocks of other languages (a shell command,
    sample output tagged `text`) are skipped."""
    tags = FENCE_TAGS.get(language, frozenset({language}))
    for m in _FENCE.finditer(reply):
        if not m.group(1) or m.group(1).lower() in tags:
            return m.group(2)
    return reply


def _box_content(text: str, start: int) -> str | None:
    """The content of the box whose `{` ends at `start`, braces balanced; None if unclosed."""
    depth = 1
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[start:j]
    return None


def boxed_all(text: str) -> list[str]:
    """The content of every \\boxed{...} in `text`, in order (an unclosed box is left out)."""
    found = (_box_content(text, m.end()) for m in _BOXED.finditer(text))
    return [b for b in found if b is not None]


def _boxed(reply: str) -> str | None:
    """The content of the last \\boxed{...}, braces balanced."""
    starts = [m.end() for m in _BOXED.finditer(reply)]
    return _box_content(reply, starts[-1]) if starts else None


def answer_tags(reply: str) -> list[str]:
    """The content of every `<answer>` tag, in order (not stripped)."""
    return [str(t) for t in _ANSWER_TAG.findall(reply)]


def without_answer_tags(reply: str) -> str:
    """The reply with every `<answer>` tag blanked out."""
    return _ANSWER_TAG.sub(" ", reply)


def extract_final_answer(reply: str) -> str:
    """A reply's final answer: the `<answer>` tag, else the last \\boxed{}, else the text
    after the last 'answer is'/'Answer:', else the last line. Returned stripped."""
    tags = answer_tags(reply)
    if tags:
        return tags[-1].strip()
    boxed = _boxed(reply)
    if boxed is not None:
        return boxed.strip()
    m = list(re.finditer(r"(?:answer is|answer:)\s*(.+)", reply, re.IGNORECASE))
    if m:
        return m[-1].group(1).strip().rstrip(".")
    lines = [ln for ln in reply.strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""
