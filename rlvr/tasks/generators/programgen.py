"""Generator of the bundled C++ and JavaScript program tasks (`data/programs_cpp.jsonl`,
`data/programs_javascript.jsonl`).

Each problem is written once (`rlvr/tasks/problems/catalogue.py`): a statement with its
input and output format, a seeded input generator (edge cases first), a Python solver that
computes the expected output, and a reference program in each language. The same problem becomes one task per
language (domains `cpp` and `javascript`, tests in the `stdio` format, the first case
shown in the prompt as an example; three held-out cases from another run of the
generator, `tests.held_out`, never shown). Every reference program is run through the sandbox
against its task's tests when the file is written, so a bundled task is known to be
solvable. `python -m rlvr.tasks.generators.programgen` rewrites both files byte for byte.

Difficulty: 1 = one pass over the input, 2 = a small algorithm or formatting rule,
3 = a classic algorithm (dynamic programming, graph search, a stack).
"""

from __future__ import annotations

import random

from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.tasks.problems.catalogue import PROBLEMS
from rlvr.tasks.problems.stdio import Problem
from rlvr.types import Task

DATA = BUNDLED_DIR
LANGS = {"cpp": "C++17", "javascript": "JavaScript (Node.js)"}


def _prompt(p: Problem, lang: str, example_in: str, example_out: str) -> str:
    return (
        f"Write a complete {LANGS[lang]} program that reads from standard input and writes to standard output.\n\n"
        f"{p.statement}\n\nExample input:\n{example_in.rstrip()}\n\nExample output:\n{example_out.rstrip()}\n\n"
        f"Answer with the whole program in one ```{'cpp' if lang == 'cpp' else 'javascript'} code block."
    )


HELD_OUT = 3  # held-out cases per task: more of the generator's inputs, not among the visible ones


def build(lang: str, seed: int = 7) -> list[Task]:
    tasks = []
    for p in PROBLEMS:
        r = random.Random(f"{seed}:{p.name}")
        inputs = p.gen(r)
        cases = [{"stdin": s, "stdout": p.solve(s).rstrip() + "\n"} for s in inputs]
        more = [s for s in p.gen(random.Random(f"{seed}:{p.name}:held_out")) if s not in inputs]
        held = [{"stdin": s, "stdout": p.solve(s).rstrip() + "\n"} for s in dict.fromkeys(more)][:HELD_OUT]
        if len(held) < 2:
            raise RuntimeError(f"{p.name}: its generator gave {len(held)} new inputs for held-out tests")
        tasks.append(
            Task(
                id=f"{lang}/{p.name}",
                domain=lang,
                prompt=_prompt(p, lang, cases[0]["stdin"], cases[0]["stdout"]),
                tests={"format": "stdio", "cases": cases, "held_out": held},
                reference=p.cpp if lang == "cpp" else p.js,
                difficulty=p.difficulty,
                metadata={"language": lang, "draw": f"stdio_problem:{p.name}"},
            )
        )
    return tasks


def verify(tasks: list[Task]) -> None:
    """Run every reference program through the sandbox; raise on any that fails."""
    from rlvr.sandbox import execute

    for t in tasks:
        result = execute(str(t.reference), t.tests, language=str(t.metadata["language"]))
        if result.passed != result.total:
            failing = [f"{x.name}: {x.message}" for x in result.tests if x.status.value != "PASSED"][:3]
            raise AssertionError(f"{t.id}: reference fails {result.status.value} {failing} {result.error[-500:]}")


def main() -> None:
    for lang in LANGS:
        tasks = build(lang)
        verify(tasks)
        write_tasks(tasks, DATA / f"programs_{lang}.jsonl")
        print(f"{lang}: {len(tasks)} tasks")


if __name__ == "__main__":
    main()
