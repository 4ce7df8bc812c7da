"""Feedback produced by a stated rule, so nothing is hand-labelled: "a reviewer prefers a
Python function that has a docstring". Tests do not check this property, which is what
a learned reward term is for (issue 35's demonstration and bench/rm_vs_trl.py).

For each bundled python_functions task, one preference record: the task's reference
with a docstring (the task's own description) against the same reference with that text
as a `#` comment instead. Length must not give the answer away: for half of the tasks
(chosen by a hash of the task id) the comment version carries one more comment line, so
it is the longer one; otherwise the docstring version is (its quotes). A length-only
rule is then near chance, and only a model that reads the code's structure beats it.

    .venv/bin/python bench/docstring_feedback.py --out fb.jsonl     # write the records
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
from pathlib import Path

TIME = "2026-12-01T00:00:00Z"
RULE = "rule:docstring"


def _describe(prompt: str) -> str:
    """The task's description as a sentence: 'Write a Python function `f(x)` that returns
    x plus 2.' -> 'Return x plus 2.'"""
    m = re.search(r"that (\w+)(.*)", prompt, flags=re.S)
    text = f"{m.group(1)}{m.group(2)}" if m else prompt
    text = " ".join(text.split())
    verb, _, rest = text.partition(" ")
    verb = verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb  # returns -> Return
    out = f"{verb[:1].upper()}{verb[1:]} {rest}".strip()
    return out if out.endswith(".") else out + "."


def _with(reference: str, line: str) -> str:
    """The reference with `line` (already indented text) after its first def line."""
    lines = reference.rstrip("\n").split("\n")
    at = next((i for i, x in enumerate(lines) if x.lstrip().startswith("def ")), 0)
    indent = re.match(r"\s*", lines[at]).group(0) + "    "  # type: ignore[union-attr]
    return "\n".join([*lines[: at + 1], *(indent + x for x in line.split("\n")), *lines[at + 1 :]]) + "\n"


def _fenced(code: str) -> str:
    return f"```python\n{code}```"


def has_docstring(reply: str) -> bool | None:
    """The rule's property on a policy's reply: some function in its code has a docstring
    (None: no function parses)."""
    code = reply.split("```python\n", 1)[-1].split("```")[0]
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    fns = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not fns:
        return None
    return any(ast.get_docstring(f) for f in fns)


def documented(task: dict) -> str:
    """The task's reference with the rule's one-line docstring (the task's description):
    the chosen side of its preference record, and a warm start's target reply."""
    return _with(task["reference"], f'"""{_describe(task["prompt"])}"""')


def chat_examples(tasks: list[dict], system: str, share: float = 1.0) -> list[dict]:
    """SFT examples (chat records): the conversation a run opens with, answered by the
    task's reference in the fenced form a run's replies take; for `share` of the tasks
    (chosen by a hash of the task id) the documented reference, for the others the bare
    one (no reference carries a docstring of its own)."""
    out = []
    for t in tasks:
        if not t.get("reference") or "def " not in t["reference"]:
            continue
        reply = _fenced(documented(t) if _hashed(t["id"], "/warm") < share else t["reference"])
        turns = [("system", system), ("user", t["prompt"]), ("assistant", reply)]
        out.append({"messages": [{"role": r, "content": c} for r, c in turns]})
    return out


def _hashed(key: str, salt: str) -> float:
    """A number in [0, 1) fixed by `key` and `salt`."""
    return int(hashlib.sha256((key + salt).encode()).hexdigest()[:8], 16) / 16**8


def records(tasks: list[dict], system: str | None = None) -> list[dict]:
    """One preference record per task with a reference (docs/feedback.md's schema); with
    `system`, the prompt is the conversation a run opens with (that system message, then
    the task), so a reward model sees what the learned term will show it."""
    out = []
    for t in tasks:
        ref = t.get("reference")
        if not ref or "def " not in ref:
            continue
        text = _describe(t["prompt"])
        good = documented(t)
        longer = int(hashlib.sha256(t["id"].encode()).hexdigest()[:8], 16) % 2 == 0
        bad = _with(ref, f"# {text}" + ("\n# See the task for details." if longer else ""))
        flip = int(hashlib.sha256((t["id"] + "/side").encode()).hexdigest()[:8], 16) % 2 == 0
        a, b = (bad, good) if flip else (good, bad)
        out.append(
            {
                "kind": "preference",
                "prompt": [{"role": "system", "content": system}, {"role": "user", "content": t["prompt"]}]
                if system
                else t["prompt"],
                "output": _fenced(a),
                "output_b": _fenced(b),
                "preferred": "b" if flip else "a",
                "source": "bench",
                "time": TIME,
                "who": RULE,
                "task_id": t["id"],
                "family": (t.get("metadata") or {}).get("family", t["id"]),
            }
        )
    return out


def bundled_python() -> list[dict]:
    import rlvr

    path = Path(rlvr.__file__).parent / "tasks" / "data" / "python_functions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = records(bundled_python())
    Path(a.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} records to {a.out}")


if __name__ == "__main__":
    main()
