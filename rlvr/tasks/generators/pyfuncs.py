"""Generator of the bundled Python function-writing tasks.

Each family is a described function with a reference solution, parameterised by
constants (so one family yields several distinct tasks: `add_7`, `add_12`, ...) and a
list of test inputs. Expected outputs are computed by running the reference solution
here, at generation time; the resulting asserts are what the sandbox checks. Every family
also has held-out inputs, none of them visible, turned into asserts the same way and
written to `tests["held_out"]`: never shown in a prompt or feedback, rewarded apart
(rlvr.sandbox.spec). The output is deterministic: `python -m rlvr.tasks.generators.pyfuncs`
rewrites `data/python_functions.jsonl` byte for byte the same.

Difficulty: 1 = a one-line function, 2 = a short loop or a standard algorithm,
3 = several cases or a less common algorithm.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.tasks.generators.families_easy import EASY
from rlvr.tasks.generators.families_hard import HARD
from rlvr.tasks.generators.families_medium import MEDIUM
from rlvr.tasks.generators.pyfamily import Family
from rlvr.tasks.loader import BUNDLED_DIR
from rlvr.types import Task

DATA = BUNDLED_DIR / "python_functions.jsonl"
FAMILIES: tuple[Family, ...] = EASY + MEDIUM + HARD


def _call(fn_name: str, args: tuple[Any, ...]) -> str:
    return f"{fn_name}({', '.join(repr(a) for a in args)})"


def _asserts(fam: Family, name: str, fn: Any, inputs: tuple[tuple[Any, ...], ...]) -> list[tuple[str, str]]:
    """(assert line, repr of the expected value) for each input."""
    out = []
    for args in inputs:
        try:
            expected = fn(*[json.loads(json.dumps(a)) for a in args])
        except Exception as e:
            raise RuntimeError(f"family {fam.name}: the reference {_call(name, args)} raises {e!r}") from e
        out.append((f"assert {_call(name, args)} == {expected!r}", repr(expected)))
    return out


def _no_constant_passes(
    name: str, visible: list[tuple[str, str]], held: list[tuple[str, str]]
) -> tuple[list[str], list[str]]:
    """Visible tests that all expect one value reward a function returning it (`return
    0` passes `count_char_r` on three words without an r): the first held-out test
    expecting something else joins the visible ones. The held-out tests left must still
    break that constant."""
    values = {v for _, v in visible}
    if len(values) == 1:
        i = next((i for i, (_, v) in enumerate(held) if v not in values), None)
        if i is None:
            raise RuntimeError(f"{name}: every visible and held-out test expects {values.pop()}")
        visible, held = [*visible, held[i]], held[:i] + held[i + 1 :]
        if all(v in values for _, v in held):
            raise RuntimeError(f"{name}: a constant would pass every held-out test left")
    return [a for a, _ in visible], [a for a, _ in held]


def build_tasks() -> list[Task]:
    tasks: list[Task] = []
    for fam in FAMILIES:
        if not fam.held_out:
            raise RuntimeError(f"family {fam.name} has no held-out inputs")
        for k in fam.params:
            fmt = {"k": k} if k is not None else {}
            name = fam.name.format(**fmt)
            doc = fam.doc.format(**fmt)
            body = fam.ref.format(**fmt)
            reference = f"def {name}({fam.args}):\n    {body}\n"
            namespace: dict[str, Any] = {}
            exec(reference, namespace)  # trusted: our own reference solutions
            asserts, held = _no_constant_passes(
                name,
                _asserts(fam, name, namespace[name], fam.inputs),
                _asserts(fam, name, namespace[name], fam.held_out),
            )
            repeated = [a for i, a in enumerate(held) if a in asserts or a in held[:i]]
            if repeated:
                raise RuntimeError(f"family {fam.name}: held-out tests repeat visible or held-out ones: {repeated}")
            prompt = f"Write a Python function `{name}({fam.args})` that {doc}."
            tasks.append(
                Task(
                    id=f"py/{name}",
                    domain="python",
                    prompt=prompt,
                    tests={"format": "assert", "tests": asserts, "held_out": held},
                    entry_point=name,
                    difficulty=fam.difficulty,
                    reference=reference,
                    metadata={"family": fam.name}
                    | ({"arg_ranges": [list(r) if r else None for r in fam.arg_ranges]} if fam.arg_ranges else {})
                    | ({"integer_exact": fam.integer_exact} if fam.integer_exact is not None else {}),
                )
            )
    ids = [t.id for t in tasks]
    if len(ids) != len(set(ids)):
        raise RuntimeError("duplicate task ids in the generator")
    return tasks


def write(path: Path = DATA) -> int:
    tasks = build_tasks()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for t in tasks:
            f.write(json.dumps(t.to_dict(), sort_keys=True) + "\n")
    return len(tasks)


if __name__ == "__main__":
    print(f"wrote {write()} tasks to {DATA}")
