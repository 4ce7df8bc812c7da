"""Generator of the bundled data-analysis tasks (`data/data_analysis.jsonl`).

Each task is a small sales table (CSV) and a question. The program reads the CSV from
standard input (e.g. `pandas.read_csv(sys.stdin)`) and prints only the answer; it is
judged by the sandbox's numeric checker (the stdout's numbers within 1e-6, words
exactly), so `42`, `42.0` and `4.2e1` all pass. Two held-out tables ask the same
question of other rows (`tests.held_out`): a program that prints the answer it worked
out from the prompt's first rows, instead of computing it, fails them. Answers are computed here with plain
Python from the same rows, rounded as the question asks. Seeded;
`python -m rlvr.tasks.generators.datagen` rewrites the file byte for byte.

Difficulty: 1 = one filter or aggregate, 2 = a derived column and a group, 3 = a
comparison across groups or periods.
"""

from __future__ import annotations

import random
from typing import Any

from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.tasks.problems.sales import QUESTIONS, Question, table, to_csv
from rlvr.types import Task

DATA = BUNDLED_DIR / "data_analysis.jsonl"
_INTRO = (
    "A CSV table with columns month, region, product, units, price is given on standard input "
    "(one row per order; revenue of an order = units * price).\n"
)
_OUTRO = "\nWrite a Python program (pandas is available) that reads the table from stdin and prints only the answer."


PER_QUESTION = 12
HELD_OUT = 2  # held-out tables per task: the same question, other rows


def _held_out(q: Question, state: Any, text: str, r: random.Random, n: int = HELD_OUT) -> list[dict[str, str]]:
    """`n` more tables asked the same question (the question's own choices replayed from
    `state`), with their answers: a program that prints the shown table's answer fails."""
    cases: list[dict[str, str]] = []
    for _ in range(50 * n):
        if len(cases) == n:
            return cases
        rows = table(r)
        replay = random.Random()
        replay.setstate(state)
        qa = q(replay, rows)
        if qa is not None and qa[0] == text:  # the same question (its choices did not depend on the rows)
            cases.append({"stdin": to_csv(rows), "stdout": qa[1]})
    raise RuntimeError(f"no {n} held-out tables for the question {text!r}")


def build_tasks(seed: int = 5) -> list[Task]:
    r = random.Random(seed)
    tasks: list[Task] = []
    for difficulty, questions in QUESTIONS.items():
        for q in questions:
            made = 0
            while made < PER_QUESTION:
                rows = table(r)
                state = r.getstate()
                qa = q(r, rows)
                if qa is None:
                    continue
                text, answer = qa
                csv = to_csv(rows)
                task_id = f"data/{q.__name__.lstrip('_')}/{made}"
                held = _held_out(q, state, text, random.Random(f"{seed}:{task_id}:held_out"))
                tasks.append(
                    Task(
                        id=task_id,
                        domain="data",
                        prompt=_INTRO + "First rows:\n" + "\n".join(csv.splitlines()[:4]) + "\n...\n\n" + text + _OUTRO,
                        tests={
                            "format": "stdio",
                            "checker": "float",
                            "cases": [{"stdin": csv, "stdout": answer}],
                            "held_out": held,
                        },
                        difficulty=difficulty,
                        metadata={"question": text, "draw": f"data_question:{q.__name__.lstrip('_')}"},
                    )
                )
                made += 1
    return tasks


def main() -> None:
    print(f"wrote {write_tasks(build_tasks(), DATA)} tasks to {DATA}")


if __name__ == "__main__":
    main()
