"""Generator of the bundled code-repair tasks (`data/code_repair.jsonl`).

Each task starts from a bundled Python function task: its reference solution gets one
seeded mutation (an operator swapped, a comparison loosened, a constant off by one,
`and`/`or` exchanged) and is kept only if the sandbox confirms that the buggy version
still runs but fails some of the visible tests. The prompt says what the function should
do (its source task's statement: the sign or range of inputs it must handle), and shows
the buggy code and what the failing tests observed; the model must return the corrected function, which is
judged by the same tests and the source task's held-out ones. Mutations are run and
quoted against the visible tests only (rlvr.sandbox.spec.visible_spec), so a held-out
test never appears in a prompt and the held-out lists do not change which mutation is
chosen. `python -m rlvr.tasks.generators.repairgen` rewrites the file (it runs the sandbox, so it
needs a machine where the sandbox works).
"""

from __future__ import annotations

import ast
import random
import re

from rlvr.sandbox import execute_many
from rlvr.sandbox.api import Tests
from rlvr.sandbox.spec import visible_spec
from rlvr.tasks import pyparse
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks, write_tasks
from rlvr.types import ExecutionResult, RunStatus, Task, TestStatus

DATA = BUNDLED_DIR / "code_repair.jsonl"
_BINOPS: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Mod: ast.FloorDiv}
_CMPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
}  # fmt: skip


def _sites(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    out: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            out.append((node, "binop"))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPS:
            out.append((node, "compare"))
        elif isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool):
            out.append((node, "constant"))
        elif isinstance(node, ast.BoolOp):
            out.append((node, "boolop"))
    return out


def mutate(code: str, site: int) -> tuple[str, str] | None:
    """The code with mutation number `site` applied, and a description; None if no such site."""
    tree = pyparse.parse(code)
    sites = _sites(tree)
    if site >= len(sites):
        return None
    node, _kind = sites[site]
    if isinstance(node, ast.BinOp):
        op_name = type(node.op).__name__
        node.op = _BINOPS[type(node.op)]()
        what = f"{op_name} -> {type(node.op).__name__}"
    elif isinstance(node, ast.Compare):
        cmp_name = type(node.ops[0]).__name__
        node.ops = [_CMPS[type(node.ops[0])]()]
        what = f"{cmp_name} -> {type(node.ops[0]).__name__}"
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        what = f"{node.value} -> {node.value + 1}"
        node.value = node.value + 1
    else:
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        what = "and <-> or"
    return ast.unparse(tree) + "\n", what


def _partial_failure(r: ExecutionResult) -> bool:
    return r.status is RunStatus.OK and 0 < r.passed < r.total


def _prompt(buggy: str, result: ExecutionResult, source_prompt: str = "") -> str:
    failing = [t for t in result.tests if t.status is not TestStatus.PASSED][:3]
    lines = "\n".join(f"- {t.name}  ({t.message})" for t in failing)
    return (
        f"This Python function has a bug.{_intent(source_prompt)} These tests fail:\n"
        f"{lines}\n\n```python\n{buggy}```\n\n"
        "Return the corrected function, complete, in one Python code block."
    )


def _intent(source_prompt: str) -> str:
    """What the function should do, from its source task's statement ("Write a Python
    function `gcd(a, b)` that returns ..."): the inputs it must handle are the statement's
    (a sign or a range it states, or none), not only those its buggy code shows."""
    m = re.match(r"Write a Python function (`[^`]+`) that (.*)", source_prompt, re.S)
    return f" What it should do: {m.group(1)} {m.group(2).strip()}" if m else ""


def build_tasks(seed: int = 11) -> list[Task]:
    rng = random.Random(seed)
    sources = load_tasks("bundled:python_functions")
    candidates: list[tuple[Task, list[tuple[str, str]]]] = []
    for t in sources:
        assert t.reference is not None
        n = len(_sites(pyparse.parse(t.reference)))
        order = rng.sample(range(n), min(n, 6))
        muts = [m for m in (mutate(t.reference, i) for i in order) if m is not None]
        candidates.append((t, muts))
    jobs: list[tuple[str, Tests]] = [(code, visible_spec(t.tests)) for t, muts in candidates for code, _ in muts]
    results = iter(execute_many(jobs, workers=4))
    tasks: list[Task] = []
    for t, muts in candidates:
        runs = [(code, what, next(results)) for code, what in muts]
        chosen = next(((c, w, r) for c, w, r in runs if _partial_failure(r)), None)
        if chosen is None:
            continue
        code, what, result = chosen
        tasks.append(
            Task(
                id=t.id.replace("py/", "repair/", 1),
                domain="repair",
                prompt=_prompt(code, result, t.prompt),
                tests=t.tests,  # with the held-out tests
                entry_point=t.entry_point,
                difficulty=t.difficulty,
                reference=t.reference,
                metadata={"family": t.metadata.get("family"), "mutation": what, "buggy": code}
                | ({"arg_ranges": t.metadata["arg_ranges"]} if "arg_ranges" in t.metadata else {}),
            )
        )
    return tasks


def main() -> None:
    print(f"wrote {write_tasks(build_tasks(), DATA)} tasks to {DATA}")


if __name__ == "__main__":
    main()
