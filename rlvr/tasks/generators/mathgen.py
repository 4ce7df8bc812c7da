"""Generator of the bundled math word problems (`data/math_word.jsonl`).

Procedural, seeded, and checked by construction: each template draws numbers, states the
problem in words and computes the exact answer (integers or reduced fractions) with
Python's `fractions`. Answers are checked by `math-verify`, so `3/4`, `0.75` and
`\\frac{3}{4}` all count. `python -m rlvr.tasks.generators.mathgen` rewrites the file byte for byte.

Difficulty: 1 = one operation, 2 = two or three steps, 3 = a small equation or
rates/fractions with several steps.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "math_word.jsonl"
_NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kai", "Lena"]
_ITEMS = ["apples", "books", "marbles", "stamps", "pencils", "cards", "shells", "coins"]


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _d1_sum(r: random.Random) -> tuple[str, Fraction]:
    n, it = r.choice(_NAMES), r.choice(_ITEMS)
    a, b = r.randint(12, 480), r.randint(12, 480)
    return f"{n} has {a} {it} and is given {b} more. How many {it} does {n} have now?", Fraction(a + b)


def _d1_product(r: random.Random) -> tuple[str, Fraction]:
    a, b, it = r.randint(3, 24), r.randint(4, 36), r.choice(_ITEMS)
    return f"There are {a} boxes with {b} {it} in each box. How many {it} are there in all?", Fraction(a * b)


def _d1_share(r: random.Random) -> tuple[str, Fraction]:
    k, q, it = r.randint(3, 12), r.randint(4, 40), r.choice(_ITEMS)
    return f"{k * q} {it} are shared equally among {k} children. How many {it} does each child get?", Fraction(q)


def _d2_shop(r: random.Random) -> tuple[str, Fraction]:
    n, p, q, paid = r.choice(_NAMES), r.randint(2, 15), r.randint(2, 9), 0
    paid = p * q + r.randint(1, 40)
    text = f"{n} buys {q} notebooks at {p} dollars each and pays with {paid} dollars. How much change does {n} get?"
    return text, Fraction(paid - p * q)


def _d2_percent(r: random.Random) -> tuple[str, Fraction]:
    price, pct = r.randint(2, 40) * 10, r.choice([10, 15, 20, 25, 30, 40, 50])
    return f"A jacket costs {price} dollars and is sold at {pct}% off. What is the sale price in dollars?", Fraction(
        price * (100 - pct), 100
    )


def _d2_remaining(r: random.Random) -> tuple[str, Fraction]:
    total, a, b = r.randint(60, 300), r.randint(5, 25), r.randint(5, 25)
    n, it = r.choice(_NAMES), r.choice(_ITEMS)
    text = f"{n} had {total} {it}, gave away {a}, then lost {b} and then doubled what was left. How many {it} now?"
    return text, Fraction(2 * (total - a - b))


def _d3_linear(r: random.Random) -> tuple[str, Fraction]:
    a, x, b = r.randint(2, 12), r.randint(-20, 20), r.randint(-30, 30)
    c = a * x + b
    sign = "+" if b >= 0 else "-"
    return f"Solve for x: {a}x {sign} {abs(b)} = {c}. Give x.", Fraction(x)


def _d3_fraction(r: random.Random) -> tuple[str, Fraction]:
    n, d = r.randint(1, 5), r.randint(6, 9)
    m, e = r.randint(1, 4), r.randint(5, 8)
    text = (
        f"A tank is {n}/{d} full. Then {m}/{e} of the tank's capacity is added. "
        "What fraction of the tank is full now? Give a reduced fraction."
    )
    ans = Fraction(n, d) + Fraction(m, e)
    return (text, ans) if ans <= 1 else _d3_fraction(r)


def _d3_rate(r: random.Random) -> tuple[str, Fraction]:
    a, b = r.sample(range(2, 25), 2)
    text = (
        f"One pipe fills a pool in {a} hours and another fills it in {b} hours. "
        "Working together, how many hours do they take to fill it?"
    )
    return text, 1 / (Fraction(1, a) + Fraction(1, b))


TEMPLATES: dict[int, list[Callable[[random.Random], tuple[str, Fraction]]]] = {
    1: [_d1_sum, _d1_product, _d1_share],
    2: [_d2_shop, _d2_percent, _d2_remaining],
    3: [_d3_linear, _d3_fraction, _d3_rate],
}
PER_TEMPLATE = 20
PROMPT_SUFFIX = "\n\nThink step by step, then give the final answer as \\boxed{ANSWER}."


def build_tasks(seed: int = 2026) -> list[Task]:
    r = random.Random(seed)
    tasks: list[Task] = []
    seen: set[str] = set()
    for difficulty, templates in TEMPLATES.items():
        for tpl in templates:
            made = tries = 0
            while made < PER_TEMPLATE:
                tries += 1
                if tries > 100 * PER_TEMPLATE:
                    raise RuntimeError(f"{tpl.__name__} cannot make {PER_TEMPLATE} distinct problems")
                text, ans = tpl(r)
                if text in seen:
                    continue
                seen.add(text)
                tasks.append(
                    Task(
                        id=f"math/{tpl.__name__.lstrip('_')}/{made}",
                        domain="math",
                        prompt=text + PROMPT_SUFFIX,
                        tests={"format": "answer", "answer": _fmt(ans)},
                        difficulty=difficulty,
                    )
                )
                made += 1
    return tasks


def main() -> None:
    print(f"wrote {write_tasks(build_tasks(), DATA)} tasks to {DATA}")


if __name__ == "__main__":
    main()
