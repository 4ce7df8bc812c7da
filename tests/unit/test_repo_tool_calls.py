"""The repository agent's calls in either shape (its own JSON, or the function-call shape
chat templates teach), and its tool schemas handed to a template that renders tools."""

from __future__ import annotations

import json

from rlvr.repos.agent import SYSTEM, TOOL_NAMES, TOOL_SCHEMAS, tool_calls
from rlvr.rollout.models import load_tokenizer
from rlvr.rollout.runner import render


def test_both_call_shapes_become_the_same_call() -> None:
    own = tool_calls('I will look first. {"tool": "read", "path": "a.py", "start": 3}')
    assert own == ([{"tool": "read", "path": "a.py", "start": 3}], [])
    templated = tool_calls('<tool_call>\n{"name": "read", "arguments": {"path": "a.py", "start": 3}}\n</tool_call>')
    assert templated == ([{"path": "a.py", "start": 3, "tool": "read"}], [])
    as_text = tool_calls(json.dumps({"name": "search", "arguments": json.dumps({"pattern": "def f"})}))
    assert as_text[0] == [{"pattern": "def f", "tool": "search"}]
    bad = tool_calls('{"name": "edit", "arguments": "not json"}')
    assert bad == ([], ["the arguments of 'edit' are not a JSON object"])
    assert tool_calls("no call at all") == ([], [])


def test_the_schemas_name_every_tool_and_reach_a_template_that_renders_tools() -> None:
    assert [t["function"]["name"] for t in TOOL_SCHEMAS] == list(TOOL_NAMES)
    assert all(f'"tool": "{name}"' in SYSTEM for name in TOOL_NAMES)  # the hand-written format names them all
    tok = load_tokenizer("tiny-random")
    messages = [{"role": "user", "content": "fix it"}]
    plain = render(tok, messages, "", TOOL_SCHEMAS)
    assert '"run_tests"' not in plain  # a template without tools never sees them
    tok.chat_template = (
        "{% if tools %}TOOLS {% for t in tools %}{{ t.function.name }} {% endfor %}{% endif %}"
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    assert render(tok, messages, "", TOOL_SCHEMAS).startswith(
        "TOOLS list read search edit run_tests submit <user>fix it"
    )
    assert render(tok, messages, "") == "<user>fix it\n<assistant>"
