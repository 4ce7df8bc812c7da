"""rlvr.tasks.problems.fresh's edge inputs: the statement's largest sizes and extreme
values, drawn first by the stdio_problem drawer; and the one-pass pair counter that lets
the solver answer them."""

from __future__ import annotations

import random

from rlvr.tasks.problems.catalogue import BY_NAME, draw
from rlvr.tasks.problems.fresh import EDGE, SPECIAL_WORDS, _word
from rlvr.tasks.problems.stdio import _pairs
from rlvr.types import Task


def test_number_edges_hold_the_largest_n_within_the_statements_bounds() -> None:
    bounds = {"longest_increasing": (-(10**6), 10**6), "max_subarray": (-(10**4), 10**4), "pair_count": (-1000, 1000)}
    for name, (lo, hi) in bounds.items():
        for make in EDGE[name]:
            head, body = make(random.Random(0)).split("\n")[:2]
            values = [int(x) for x in body.split()]
            assert int(head.split()[0]) == len(values) == 10**5, name
            assert all(lo <= v <= hi for v in values), name
        extreme = EDGE[name][1](random.Random(0))
        assert len(set(extreme.split("\n")[1].split())) == 1  # every value at its bound
    assert BY_NAME["pair_count"].solve(EDGE["pair_count"][1](random.Random(0))).strip() == str(10**5 * (10**5 - 1) // 2)


def test_grid_edges_are_fifty_by_fifty_and_the_open_maze_needs_the_longest_path() -> None:
    for name in ("count_islands", "maze_steps"):
        for make in EDGE[name]:
            lines = make(random.Random(2)).strip("\n").split("\n")
            assert lines[0] == "50 50" and len(lines) == 51 and all(len(row) == 50 for row in lines[1:]), name
    assert BY_NAME["maze_steps"].solve(EDGE["maze_steps"][1](random.Random(0))).strip() == "98"
    assert BY_NAME["count_islands"].solve(EDGE["count_islands"][1](random.Random(0))).strip() == "50"


def test_the_drawer_puts_the_edges_first() -> None:
    task = Task(id="cpp/pair_count", domain="cpp", prompt="p", tests={"format": "stdio", "cases": []})
    cases = draw(task, "pair_count", random.Random(5), 20)
    assert [len(c["stdin"]) > 100_000 for c in cases[:3]] == [True, True, False]
    assert cases[1]["stdout"] == f"{10**5 * (10**5 - 1) // 2}\n"


def test_pairs_are_counted_in_one_pass_as_the_quadratic_count_does() -> None:
    r = random.Random(0)
    for _ in range(200):
        a = [r.randint(-4, 4) for _ in range(r.randint(0, 25))]
        k = r.randint(-6, 6)
        assert _pairs(a, k) == sum(1 for i in range(len(a)) for j in range(i + 1, len(a)) if a[i] + a[j] == k)


def test_words_include_special_names_and_lengths_past_the_usual() -> None:
    r = random.Random(1)
    words = [_word(r, 1, 9) for _ in range(2000)]
    assert set(SPECIAL_WORDS) & set(words) and max(len(w) for w in words) > 9
    assert all(w.isalpha() and w.islower() for w in words)
