"""The bundled data-analysis questions: a seeded sales table (month, region, product,
units, price) and the questions asked of it, each computing its answer from the rows with
plain Python, rounded as it asks. `rlvr/tasks/generators/datagen.py` builds the task file
from them; at run time the `data_question` drawer (registered here) draws a task's hidden
tests: new tables asked the task's question (`metadata.question`), answers from their rows.
"""

from __future__ import annotations

import itertools
import random
import statistics
import threading
from collections import defaultdict
from collections.abc import Callable

from rlvr.tasks.draws import NoDrawer, register_drawer
from rlvr.types import Task

REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["widget", "gadget", "gizmo", "doohickey"]
MONTHS = ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06"]
Row = dict[str, object]


def table(r: random.Random) -> list[Row]:
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


def to_csv(rows: list[Row]) -> str:
    lines = ["month,region,product,units,price"]
    lines += [f"{x['month']},{x['region']},{x['product']},{x['units']},{x['price']:.2f}" for x in rows]
    return "\n".join(lines) + "\n"


def _rev(x: Row) -> float:
    return float(x["units"]) * float(x["price"])  # type: ignore[arg-type]


class _Ties(threading.local):
    seen = False  # a value rounded here lay within float noise of a rounding boundary


_TIES = _Ties()


def _fmt(v: float, places: int = 2) -> str:
    """`v` rounded to `places` decimals; a value that lies within float noise of the halfway
    point between two roundings is marked (`_TIES`): honest code computing the same value
    another way (pandas' mean, a sum in another order) may land on the other side, so
    the drawer does not ask it (the bundled files, built before this mark, are unchanged)."""
    scaled = abs(v) * 10**places
    if abs(scaled - int(scaled) - 0.5) < 1e-6:
        _TIES.seen = True
    return f"{v:.{places}f}"


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
        _fmt(100 * part / total, 1)
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


BY_NAME = {q.__name__.lstrip("_"): q for qs in QUESTIONS.values() for q in qs}


@register_drawer("data_question")
def draw(task: Task, name: str, rng: random.Random, n: int) -> list[dict[str, str]]:
    """Hidden tests (`metadata.draw: data_question:NAME`): new tables asked the task's
    question (`metadata.question`), answers computed from their rows."""
    text = task.metadata.get("question")
    if name not in BY_NAME or not isinstance(text, str):
        raise NoDrawer(f"task {task.id}: field 'metadata.draw': no bundled question '{name}' (or no metadata.question)")
    q, cases = BY_NAME[name], []
    for _ in range(4 * n):
        rows = table(rng)
        for k in range(64):  # the question's own choices (a region, a product), replayed until they match
            _TIES.seen = False
            qa = q(random.Random(k), rows)
            if qa is not None and qa[0] == text:
                if _TIES.seen:  # an answer on a rounding boundary: not a fair test
                    break
                cases.append({"stdin": to_csv(rows), "stdout": qa[1]})
                break
        if len(cases) == 2 * n:
            break
    return cases
