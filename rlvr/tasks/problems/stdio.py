"""The pieces the bundled stdin/stdout problems are made of (`catalogue.py`):
the `Problem` record, seeded input generators (edge cases first) and the Python solvers
that compute each case's expected output."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    name: str
    difficulty: int
    statement: str
    gen: Callable[[random.Random], list[str]]  # the stdin of each test case
    solve: Callable[[str], str]
    cpp: str
    js: str


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split()]


def _nums_input(edge: list[list[int]], lo: int, hi: int, n_max: int) -> Callable[[random.Random], list[str]]:
    def gen(r: random.Random) -> list[str]:
        cases = edge + [[r.randint(lo, hi) for _ in range(r.randint(1, n_max))] for _ in range(4)]
        return [f"{len(c)}\n{' '.join(map(str, c))}\n" for c in cases]

    return gen


def _lis(a: list[int]) -> int:
    best: list[int] = []
    for x in a:
        lo, hi = 0, len(best)
        while lo < hi:
            mid = (lo + hi) // 2
            if best[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        best[lo : lo + 1] = [x]
    return len(best)


def _kadane(a: list[int]) -> int:
    best = cur = a[0]
    for x in a[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best


def _balanced(s: str) -> bool:
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for ch in s:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack


def _grid_lines(s: str) -> list[str]:
    lines = s.split("\n")
    r = int(lines[0].split()[0])
    return lines[1 : 1 + r]


def _islands(s: str) -> int:
    g = [list(row) for row in _grid_lines(s)]
    count = 0
    for i in range(len(g)):
        for j in range(len(g[0])):
            if g[i][j] == "#":
                count += 1
                stack = [(i, j)]
                g[i][j] = "."
                while stack:
                    y, x = stack.pop()
                    for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                        ny, nx = y + dy, x + dx
                        if 0 <= ny < len(g) and 0 <= nx < len(g[0]) and g[ny][nx] == "#":
                            g[ny][nx] = "."
                            stack.append((ny, nx))
    return count


def _maze_steps(s: str) -> int:
    g = _grid_lines(s)
    start = next((i, row.index("S")) for i, row in enumerate(g) if "S" in row)
    dist = {start: 0}
    queue = [start]
    for y, x in queue:
        if g[y][x] == "E":
            return dist[(y, x)]
        for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            ny, nx = y + dy, x + dx
            if 0 <= ny < len(g) and 0 <= nx < len(g[0]) and g[ny][nx] != "#" and (ny, nx) not in dist:
                dist[(ny, nx)] = dist[(y, x)] + 1
                queue.append((ny, nx))
    return -1


def _grid_gen(kind: str) -> Callable[[random.Random], list[str]]:
    def one(r: random.Random, rows: int, cols: int, density: float) -> str:
        g = [["#" if r.random() < density else "." for _ in range(cols)] for _ in range(rows)]
        if kind == "maze":
            cells = [(i, j) for i in range(rows) for j in range(cols)]
            (sy, sx), (ey, ex) = r.sample(cells, 2)
            g[sy][sx], g[ey][ex] = "S", "E"
        return f"{rows} {cols}\n" + "\n".join("".join(row) for row in g) + "\n"

    def gen(r: random.Random) -> list[str]:
        edge = ["1 2\nSE\n" if kind == "maze" else "1 1\n#\n", "2 3\nS#.\n##E\n" if kind == "maze" else "2 2\n..\n..\n"]
        return edge + [one(r, r.randint(3, 8), r.randint(3, 10), r.choice([0.2, 0.35, 0.5])) for _ in range(4)]

    return gen


def _lines_gen(pool: list[str], count: int) -> Callable[[random.Random], list[str]]:
    def gen(r: random.Random) -> list[str]:
        out = []
        for _ in range(count):
            items = r.sample(pool, r.randint(1, min(6, len(pool))))
            out.append(f"{len(items)}\n" + "\n".join(items) + "\n")
        return out

    return gen


def _words_gen(words: list[str], count: int, max_len: int) -> Callable[[random.Random], list[str]]:
    def gen(r: random.Random) -> list[str]:
        return [" ".join(r.choice(words) for _ in range(r.randint(1, max_len))) + "\n" for _ in range(count)]

    return gen


_WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime", "date", "grape", "melon", "berry"]
_PHRASES = [
    "racecar",
    "A man, a plan, a canal: Panama",
    "hello",
    "No lemon, no melon",
    "ab",
    "x",
    "Step on no pets",
    "abca",
]
_BRACKETS = ["()", "([]{})", "(]", "((())", "{[()()]}", "", "}{", "[(])", "x(y)z", "((a)[b]{c})"]


def _fizz(n: int) -> str:
    return "\n".join(
        "FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i)
        for i in range(1, n + 1)
    )


def _primes(n: int) -> list[int]:
    return [p for p in range(2, n + 1) if all(p % d for d in range(2, int(p**0.5) + 1))]


def _rle(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{s[i]}{j - i}")
        i = j
    return "".join(out)


def _pairs(a: list[int], k: int) -> int:
    """Pairs i < j with a[i] + a[j] == k, counted in one pass (n reaches 10^5)."""
    seen: dict[int, int] = {}
    pairs = 0
    for x in a:
        pairs += seen.get(k - x, 0)
        seen[x] = seen.get(x, 0) + 1
    return pairs


def _transpose(s: str) -> str:
    m = [ln.split() for ln in s.strip().split("\n")[1:]]
    return "\n".join(" ".join(row[j] for row in m) for j in range(len(m[0])))


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
