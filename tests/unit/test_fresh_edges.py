"""rlvr.tasks.problems.fresh's edge inputs: the statement's largest sizes and extreme
values, drawn first by the stdio_problem drawer; and the one-pass pair counter that lets
the solver answer them."""

from __future__ import annotations

import random
import re

from rlvr.tasks.problems.catalogue import BY_NAME, draw
from rlvr.tasks.problems.fresh import EDGE, SPECIAL_WORDS, _word
from rlvr.tasks.problems.stdio import _pairs
from rlvr.types import Task


def test_number_edges_hold_the_largest_n_within_the_statements_bounds() -> None:
    bounds = {"longest_increasing": (-(10**6), 10**6), "max_subarray": (-(10**4), 10**4), "pair_count": (-1000, 1000),
              "max_min": (-(10**9), 10**9)}  # fmt: skip
    for name, (lo, hi) in bounds.items():
        for make in EDGE[name][:3]:  # longest_increasing's fourth: values past a word (below)
            head, body = make(random.Random(0)).split("\n")[:2]
            values = [int(x) for x in body.split()]
            assert int(head.split()[0]) == len(values) == (1000 if name == "max_min" else 10**5), name
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
    assert [len(c["stdin"]) > 100_000 for c in cases[:4]] == [True, True, True, False]
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


def _lis_window(a: list[int], window: int) -> int:
    """A longest-increasing DP that looks back only `window` positions (a shortcut)."""
    best = [1] * len(a)
    for i in range(len(a)):
        for j in range(max(0, i - window), i):
            if a[j] < a[i]:
                best[i] = max(best[i], best[j] + 1)
    return max(best)


def test_the_far_edge_plants_a_rising_run_farther_apart_than_a_short_look_back() -> None:
    far = EDGE["longest_increasing"][2]
    text = far(random.Random(4))
    values = [int(x) for x in text.split("\n")[1].split()]
    right = int(BY_NAME["longest_increasing"].solve(text))
    assert right >= 11  # the planted run (10 to 25 long) and one filler value after it
    short = values[:: max(1, len(values) // 4000)]  # the same layout at 1/25 the size, for a quick window DP
    whole = int(BY_NAME["longest_increasing"].solve(f"{len(short)}\n{' '.join(map(str, short))}\n"))
    assert _lis_window(short, 60) < whole


def test_scattered_islands_are_single_cells_a_narrow_row_stride_merges() -> None:
    text = EDGE["count_islands"][2](random.Random(3))
    rows = text.strip("\n").split("\n")[1:]
    cells = [(i, j) for i, row in enumerate(rows) for j, c in enumerate(row) if c == "#"]
    assert int(BY_NAME["count_islands"].solve(text)) == len(cells) > 300  # no two cells touch
    keys = {i * 32 + j for i, j in cells}  # a row stride of 32 on a 50-wide grid
    merged = sum(1 for i, j in cells for di, dj in ((0, 1), (1, 0)) if (i + di) * 32 + (j + dj) in keys)
    assert merged > 0  # cells the stride makes neighbours: such a program counts fewer islands


def _peel(line: str, passes: int) -> str:
    """A shortcut: remove adjacent matched pairs a fixed number of times, then call the
    line balanced if nothing is left (right only up to that nesting depth)."""
    s = "".join(c for c in line if c in "()[]{}")
    for _ in range(passes):
        for pair in ("()", "[]", "{}"):
            s = s.replace(pair, "")
    return "YES" if not s else "NO"


def test_the_bracket_edge_nests_past_the_random_draws_and_a_fixed_peel_fails_it() -> None:
    text = EDGE["balanced_brackets"][0](random.Random(3))
    head, *lines = text.rstrip("\n").split("\n")
    assert int(head) == len(lines) <= 20  # within the statement's t <= 20
    right = BY_NAME["balanced_brackets"].solve(text).split()
    assert {"YES", "NO"} <= set(right)  # balanced lines and broken ones
    assert min(len(ln) for ln in lines) >= 2 * 5 - 1  # nested five deep at least
    assert max(len(ln) for ln in lines) > 2 * 64  # past a fixed stack of 64
    assert max(len(ln) for ln in lines) > 2 * 12000 - 2  # past a JavaScript engine's call stack
    assert [_peel(ln, 4) for ln in lines] != right
    assert [_peel(ln, 1100) for ln in lines] != right
    per_kind = ["YES" if all(ln.count(o) == ln.count(c) for o, c in ("()", "[]", "{}")) else "NO" for ln in lines]
    assert per_kind != right  # counts balance on a line whose closers were swapped
    assert [_peel(ln, 30000) for ln in lines] == right


def test_the_serpentine_maze_needs_over_a_thousand_steps_and_long_runs_pass_three_digits() -> None:
    """Blind set 4: a distance kept in a byte (maze), a run count printed in two digits, a
    vowel rule that folds accents: each met only past what the random draws reach."""
    for seed in range(4):
        maze = EDGE["maze_steps"][2](random.Random(seed))
        assert int(BY_NAME["maze_steps"].solve(maze)) > 1000
    word = EDGE["run_length"][0](random.Random(1)).strip()
    encoded = BY_NAME["run_length"].solve(word + "\n").strip()
    assert {"1000", "999", "256", "100"} <= set(re.findall(r"\d+", encoded)) and word.isalpha() and word.islower()
    line = EDGE["count_vowels"][0](random.Random(2))
    assert not line.isascii()
    assert int(BY_NAME["count_vowels"].solve(line)) == sum(c in "aeiouAEIOU" for c in line)


def test_the_sort_edge_has_words_of_one_length_in_either_case() -> None:
    """Blind set 4 (27): the statement orders words of equal length by character code, so
    capitals first; a case-blind or locale collation orders this edge line otherwise."""
    assert "character codes" in BY_NAME["sort_by_length"].statement
    line = EDGE["sort_by_length"][2](random.Random(0))
    right = BY_NAME["sort_by_length"].solve(line).split()
    assert right != sorted(line.split(), key=lambda w: (len(w), w.lower()))
    assert any(w.isupper() for w in right) and any(w.islower() for w in right)


def test_longest_increasing_meets_values_past_a_32_bit_word_a_double_still_holds() -> None:
    text = EDGE["longest_increasing"][3](random.Random(2))
    head, body = text.split("\n")[:2]
    values = [int(x) for x in body.split()]
    assert int(head) == len(values) and max(map(abs, values)) <= 10**15
    assert sum(abs(v) >= 2**31 for v in values) >= 3
    wrapped = [(v + 2**31) % 2**32 - 2**31 for v in values]  # what an int keeps
    solve = BY_NAME["longest_increasing"].solve
    assert int(solve(f"{len(values)}\n{' '.join(map(str, wrapped))}\n")) > int(solve(text))  # the runs join


def test_palindrome_edges_are_thue_morse_lines_a_64_bit_hash_calls_palindromes() -> None:
    text = EDGE["palindromes"][0](random.Random(4))
    lines = text.split("\n")[1:-1]
    assert int(text.split("\n")[0]) == len(lines) == 8
    verdicts = BY_NAME["palindromes"].solve(text).split("\n")
    assert sorted(verdicts) == ["NO"] * 4 + ["YES"] * 4

    def hashed(s: str) -> int:
        h = 0
        for c in s.lower():
            h = (h * 131 + ord(c)) % 2**64
        return h

    for line, verdict in zip(lines, verdicts, strict=True):
        if verdict == "NO" and len(line) == 2048:
            assert hashed(line) == hashed(line[::-1])  # the anti-hash word: equal, though not a palindrome


def test_primes_up_to_meets_the_square_of_a_prime_where_an_early_stopping_sieve_leaves_n_unstruck() -> None:
    def sieve_stopping_early(n: int) -> list[int]:  # the outer loop runs while i * i < n, not <= n
        composite = [False] * (n + 1)
        i = 2
        while i * i < n:
            if not composite[i]:
                for j in range(i * i, n + 1, i):
                    composite[j] = True
            i += 1
        return [k for k in range(2, n + 1) if not composite[k]]

    squares = {int(EDGE["primes_up_to"][0](random.Random(s))) for s in range(40)}
    assert len(squares) > 10 and max(squares) <= 10000
    for n in squares:
        want = BY_NAME["primes_up_to"].solve(f"{n}\n").split()
        assert str(n) not in want and [str(k) for k in sieve_stopping_early(n)] != want
