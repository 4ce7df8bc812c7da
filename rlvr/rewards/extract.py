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


def boxed_all(text: str) -> list[str]:
    """The content of every \\boxed{...} in `text`, in order, braces balanced (an unclosed
    box is left out)."""
    out: list[str] = []
    for m in _BOXED.finditer(text):
        depth = 1
        for j in range(m.end(), len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    out.append(text[m.end() : j])
                    break
    return out


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
