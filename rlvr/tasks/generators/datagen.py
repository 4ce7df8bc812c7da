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

import itertools
import random
import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from rlvr.tasks.draws import NoDrawer, register_drawer
from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "data_analysis.jsonl"
REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["widget", "gadget", "gizmo", "doohickey"]
MONTHS = ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06"]
Row = dict[str, object]
_INTRO = (
    "A CSV table with columns month, region, product, units, price is given on standard input "
    "(one row per order; revenue of an order = units * price).\n"
)
_OUTRO = "\nWrite a Python program (pandas is available) that reads the table from stdin and prints only the answer."


def _table(r: random.Random) -> list[Row]:
    rows: list[Row] = []
    for _ in range(r.randint(18, 30)):
        rows.append(
            {
                "month": r.choice(MONTHS),
                "region": r.choice(REGIONS),
                "product": r.choice(PRODUCTS),
                "units": r.randint(1, 40),
                "price": round(r.uniform(2, 60), 2),
            }
        )
    return rows


def _csv(rows: list[Row]) -> str:
    lines = ["month,region,product,units,price"]
    lines += [f"{x['month']},{x['region']},{x['product']},{x['units']},{x['price']:.2f}" for x in rows]
    return "\n".join(lines) + "\n"


def _rev(x: Row) -> float:
    return float(x["units"]) * float(x["price"])  # type: ignore[arg-type]


def _fmt(v: float) -> str:
    return f"{v:.2f}"


Question = Callable[[random.Random, list[Row]], tuple[str, str] | None]


def _q_units_region(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    g = r.choice(REGIONS)
    return f"What is the total number of units sold in the {g} region?", str(
        sum(int(x["units"]) for x in rows if x["region"] == g)  # type: ignore[call-overload]
    )


def _q_count_price(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    p = r.choice([10, 20, 30, 40])
    return f"How many orders have a price above {p}?", str(sum(float(x["price"]) > p for x in rows))  # type: ignore[arg-type]


def _q_mean_price(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    prod = r.choice(PRODUCTS)
    prices = [float(x["price"]) for x in rows if x["product"] == prod]  # type: ignore[arg-type]
    if not prices:
        return None
    return f"What is the mean price of {prod} orders, rounded to 2 decimal places?", _fmt(statistics.mean(prices))


def _q_revenue_pair(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    g, prod = r.choice(REGIONS), r.choice(PRODUCTS)
    rev = sum(_rev(x) for x in rows if x["region"] == g and x["product"] == prod)
    return f"What is the total revenue of {prod} orders in the {g} region, rounded to 2 decimal places?", _fmt(rev)


def _q_top_region(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    totals: dict[str, float] = defaultdict(float)
    for x in rows:
        totals[str(x["region"])] += _rev(x)
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    if len(ranked) > 1 and abs(ranked[0][1] - ranked[1][1]) < 0.01:
        return None
    return "Which region has the highest total revenue? Print its name.", ranked[0][0]


def _q_mean_units_product(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    prod = r.choice(PRODUCTS)
    units = [int(x["units"]) for x in rows if x["product"] == prod]  # type: ignore[call-overload]
    if not units:
        return None
    return f"What is the average number of units per {prod} order, rounded to 2 decimal places?", _fmt(
        statistics.mean(units)
    )


def _q_growth_month(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    by_month: dict[str, float] = defaultdict(float)
    for x in rows:
        by_month[str(x["month"])] += _rev(x)
    months = [m for m in MONTHS if m in by_month]
    growth = [(by_month[b] - by_month[a], b) for a, b in itertools.pairwise(months)]
    if len(growth) < 2:
        return None
    growth.sort(reverse=True)
    if growth[0][0] - growth[1][0] < 0.01:
        return None
    q = (
        "Among the months present, which month's total revenue grew the most over the "
        "previous month present? Print it as YYYY-MM."
    )
    return q, growth[0][1]


def _q_share_region(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    g = r.choice(REGIONS)
    total = sum(_rev(x) for x in rows)
    part = sum(_rev(x) for x in rows if x["region"] == g)
    return f"What percentage of total revenue comes from the {g} region, rounded to 1 decimal place?", (
        f"{100 * part / total:.1f}"
    )


def _q_median_revenue(r: random.Random, rows: list[Row]) -> tuple[str, str] | None:
    g = r.choice(REGIONS)
    revs = [_rev(x) for x in rows if x["region"] == g]
    if not revs:
        return None
    return f"What is the median revenue per order in the {g} region, rounded to 2 decimal places?", _fmt(
        statistics.median(revs)
    )


QUESTIONS: dict[int, list[Question]] = {
    1: [_q_units_region, _q_count_price, _q_mean_price],
    2: [_q_revenue_pair, _q_top_region, _q_mean_units_product],
    3: [_q_growth_month, _q_share_region, _q_median_revenue],
}
PER_QUESTION = 12
HELD_OUT = 2  # held-out tables per task: the same question, other rows


def _held_out(q: Question, state: Any, text: str, r: random.Random, n: int = HELD_OUT) -> list[dict[str, str]]:
    """`n` more tables asked the same question (the question's own choices replayed from
    `state`), with their answers: a program that prints the shown table's answer fails."""
    cases: list[dict[str, str]] = []
    for _ in range(50 * n):
        if len(cases) == n:
            return cases
        rows = _table(r)
        replay = random.Random()
        replay.setstate(state)
        qa = q(replay, rows)
        if qa is not None and qa[0] == text:  # the same question (its choices did not depend on the rows)
            cases.append({"stdin": _csv(rows), "stdout": qa[1]})
    raise RuntimeError(f"no {n} held-out tables for the question {text!r}")


BY_NAME = {q.__name__.lstrip("_"): q for qs in QUESTIONS.values() for q in qs}


@register_drawer("data_question")
def draw(task: Task, rng: random.Random, n: int) -> list[dict[str, str]]:
    """Hidden tests (`metadata.draw: data_question:NAME`): new tables asked the task's
    question (`metadata.question`), answers computed from their rows."""
    _, _, name = str(task.metadata.get("draw", "")).partition(":")
    text = task.metadata.get("question")
    if name not in BY_NAME or not isinstance(text, str):
        raise NoDrawer(f"task {task.id}: field 'metadata.draw': no bundled question '{name}' (or no metadata.question)")
    q, cases = BY_NAME[name], []
    for _ in range(4 * n):
        rows = _table(rng)
        for k in range(64):  # the question's own choices (a region, a product), replayed until they match
            qa = q(random.Random(k), rows)
            if qa is not None and qa[0] == text:
                cases.append({"stdin": _csv(rows), "stdout": qa[1]})
                break
        if len(cases) == 2 * n:
            break
    return cases


def build_tasks(seed: int = 5) -> list[Task]:
    r = random.Random(seed)
    tasks: list[Task] = []
    for difficulty, questions in QUESTIONS.items():
        for q in questions:
            made = 0
            while made < PER_QUESTION:
                rows = _table(r)
                state = r.getstate()
                qa = q(r, rows)
                if qa is None:
                    continue
                text, answer = qa
                csv = _csv(rows)
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
