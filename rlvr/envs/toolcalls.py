"""Pulling tool calls and shell commands out of a model's reply (shared by the tool-use
and operations environments)."""

from __future__ import annotations

import json
import re
from typing import Any

_DECODER = json.JSONDecoder()
_SHELL_FENCE = re.compile(r"```[ \t]*(?:bash|sh|shell|console|zsh)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


class ToolCallError(ValueError):
    """A reply's tool call that cannot be understood; the message says what is wrong."""


def parse_tool_calls(reply: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every JSON object in the reply (a list of objects counts as several), in order, with
    the problems found: text that starts like a call but is not valid JSON, or objects
    without a string `tool` field. Objects are taken wherever they appear (in a fenced
    block or inline), so a reply may think aloud before calling."""
    calls: list[dict[str, Any]] = []
    problems: list[str] = []
    i = 0
    while True:
        start = _next_start(reply, i)
        if start < 0:
            break
        try:
            value, end = _DECODER.raw_decode(reply, start)
        except json.JSONDecodeError as e:
            if reply[start] == "{" and '"tool"' in reply[start : start + 200]:
                problems.append(f"invalid JSON at character {start}: {e.msg}")
            i = start + 1
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("tool"), str):
                calls.append(item)
            elif isinstance(item, dict):
                problems.append(f"a JSON object without a 'tool' field: {json.dumps(item)[:120]}")
        i = end
    return calls, problems


def _next_start(text: str, i: int) -> int:
    positions = [p for p in (text.find("{", i), text.find("[{", i)) if p >= 0]
    return min(positions) if positions else -1


def parse_commands(reply: str) -> list[str]:
    """Shell commands of a reply: the lines of its shell code blocks (```bash, ```sh or
    untagged), else the lines that start with `$ `. Comments and blank lines are dropped;
    `a && b` and `a; b` become separate commands."""
    blocks = _SHELL_FENCE.findall(reply)
    lines = [ln for b in blocks for ln in b.splitlines()] if blocks else []
    if not blocks:
        lines = [ln.strip()[2:] for ln in reply.splitlines() if ln.strip().startswith("$ ")]
    out: list[str] = []
    for ln in lines:
        ln = ln.strip()
        if ln.startswith("$ "):
            ln = ln[2:]
        if not ln or ln.startswith("#"):
            continue
        out += _split_chain(ln)
    return out


def _split_chain(line: str) -> list[str]:
    """`a && b; c` -> [a, b, c], leaving separators inside quotes alone."""
    parts, cur, quote, i = [], "", "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ";" or line.startswith("&&", i):
            parts.append(cur)
            cur = ""
            i += 2 if ch == "&" else 1
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def tool_calls(reply: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The reply's calls: `{"tool": NAME, ...arguments}` objects, or where there are none,
    the function-call shape chat templates teach (`{"name": NAME, "arguments": {...}}`,
    arguments possibly a JSON string, inside <tool_call> tags or not), made the same."""
    calls, problems = parse_tool_calls(reply)
    if calls:
        return calls, problems
    found: list[dict[str, Any]] = []
    shaped: list[str] = []  # problems with calls of the function shape
    decoder = json.JSONDecoder()
    i = reply.find("{")
    while i >= 0:
        try:
            value, end = decoder.raw_decode(reply, i)
        except json.JSONDecodeError:
            i = reply.find("{", i + 1)
            continue
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            args = value.get("arguments", value.get("parameters", {}))
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError:
                    args = None
            if isinstance(args, dict):
                found.append({**args, "tool": value["name"]})
            else:
                shaped.append(f"the arguments of {value['name']!r} are not a JSON object")
        i = reply.find("{", end)
    return (found, shaped) if found or shaped else ([], problems)
