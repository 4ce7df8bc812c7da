"""bench/docstring_feedback.py: the rule's feedback and the warm start's examples, on
hand-made tasks."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from docstring_feedback import chat_examples, documented, has_docstring, records

TASK = {"id": "add_two", "prompt": "Write a Python function `add_two(x)` that returns x plus 2.",
        "reference": "def add_two(x):\n    return x + 2\n"}  # fmt: skip


def test_documented_puts_the_description_as_the_function_s_docstring() -> None:
    code = documented(TASK)
    fn = ast.parse(code).body[0]
    assert isinstance(fn, ast.FunctionDef) and ast.get_docstring(fn) == "Return x plus 2."
    assert code == 'def add_two(x):\n    """Return x plus 2."""\n    return x + 2\n'


def test_chat_examples_answer_the_run_s_conversation_with_the_documented_reference() -> None:
    no_def = {"id": "answer", "prompt": "What is 2 + 2?", "reference": "4"}
    (ex,) = chat_examples([TASK, no_def, {**TASK, "reference": None}], system="SYS")
    roles = [m["role"] for m in ex["messages"]]
    assert roles == ["system", "user", "assistant"] and ex["messages"][0]["content"] == "SYS"
    reply = ex["messages"][2]["content"]
    assert reply.startswith("```python\n") and reply.endswith("```")  # the run's fenced reply form
    assert has_docstring(reply) is True


def test_records_prefer_the_documented_side_whatever_its_position() -> None:
    (rec,) = records([TASK])
    chosen = rec["output"] if rec["preferred"] == "a" else rec["output_b"]
    other = rec["output_b"] if rec["preferred"] == "a" else rec["output"]
    assert has_docstring(chosen) is True and has_docstring(other) is False
    assert documented(TASK) in chosen


def test_chat_examples_document_the_share_asked_for_the_same_tasks_every_time() -> None:
    tasks = [{**TASK, "id": f"t{i}"} for i in range(200)]

    def documented_ids(share: float) -> set[str]:
        rows = chat_examples(tasks, system="SYS", share=share)
        assert len(rows) == len(tasks)
        return {t["id"] for t, r in zip(tasks, rows, strict=True) if has_docstring(r["messages"][2]["content"])}

    assert documented_ids(0.0) == set() and len(documented_ids(1.0)) == 200
    half = documented_ids(0.5)
    assert 70 <= len(half) <= 130 and half == documented_ids(0.5)  # by a hash of the id: stable
    assert half <= documented_ids(0.75)  # a larger share keeps the smaller one's tasks
