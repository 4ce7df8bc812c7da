"""Fresh inputs for the bundled stdin/stdout problems' hidden tests, over each problem's
documented input range rather than the build's small pools (`stdio`: a word
list of ten, eight phrases, ten bracket strings). A program fitted to the inputs a task
shows (a verdict per known line, a rank per known word, a shortcut for small sizes)
meets inputs here that it has never seen: random words, constructed palindromes and
near-misses, nested brackets with one kind swapped, grids and arrays up to the sizes the
statement allows (kept to a few thousand numbers where it allows 10^5, so that a run of
twenty cases stays within a test's time), plus `EDGE` inputs at the statement's
largest sizes and extreme values (n = 10^5, a 50 x 50 grid, every value at its bound:
an accumulator too narrow, a window or a search budget too small, a fixed-stride index
shows only there). The statement's sizes are what it promises, so a solution too slow
for them fails an edge input as it would on a judge.

`FRESH[name](rng)` is one input; the drawer (`catalogue`) asks for as many as it needs.
Pure Python, no imports beyond the standard library: it runs at training time.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

from rlvr.tasks.twins import thue_morse

Fresh = Callable[[random.Random], str]


def _size(r: random.Random, hi: int) -> int:
    """1..hi, small sizes as likely as large ones (log-uniform)."""
    return max(1, min(hi, round(hi ** r.random())))


# lowercase words that name something in a language's objects or literals: a program that
# keys a plain object or dict by the word meets a property it did not put there
SPECIAL_WORDS = ("constructor", "prototype", "length", "none", "null", "undefined", "true", "false", "nan", "self")


def _word(r: random.Random, lo: int = 1, hi: int = 9) -> str:
    """Lowercase letters, lo..hi of them; one word in twenty is a SPECIAL_WORDS one and one in
    ten runs to three times hi (the statements bound no word's length)."""
    roll = r.random()
    if roll < 0.05:
        return r.choice(SPECIAL_WORDS)
    top = 3 * hi if roll < 0.15 else hi
    return "".join(r.choice(string.ascii_lowercase) for _ in range(r.randint(lo, top)))


def _nums(n_hi: int, lo: int, hi: int, header: Callable[[random.Random, list[int]], str] | None = None) -> Fresh:
    def one(r: random.Random) -> str:
        n = _size(r, n_hi)
        span = r.choice([hi, max(1, hi // 100), 10])  # narrow spans repeat values
        a = [r.randint(max(lo, -span), min(hi, span)) if lo < 0 else r.randint(lo, min(hi, span)) for _ in range(n)]
        head = header(r, a) if header else str(n)
        return f"{head}\n{' '.join(map(str, a))}\n"

    return one


def _reverse_words(r: random.Random) -> str:
    return " ".join(_word(r) for _ in range(_size(r, 30))) + "\n"


def _count_vowels(r: random.Random) -> str:
    alphabet = string.ascii_letters + "aeiouAEIOU" + "   ,.:;!?'-0123456789"
    line = "".join(r.choice(alphabet) for _ in range(_size(r, 80))).strip()
    return (line or "x") + "\n"


def _fizzbuzz(r: random.Random) -> str:
    return f"{r.randint(1, 100)}\n"


def _run_length(r: random.Random) -> str:
    runs = [r.choice(string.ascii_lowercase[: r.choice([2, 5, 26])]) * _size(r, 12) for _ in range(_size(r, 10))]
    return "".join(runs) + "\n"


def _gcd_lcm(r: random.Random) -> str:
    g = _size(r, 1000)
    a, b = (min(10**6, g * _size(r, 10**6 // g)) for _ in range(2))
    return f"{a} {b}\n"


def _primes_up_to(r: random.Random) -> str:
    return f"{_size(r, 10000)}\n"


def _phrase(r: random.Random) -> str:
    """A palindrome once punctuation and case are dropped, or a near-miss: one letter
    changed, its letters shuffled (the same letter counts: a parity test says yes), or
    random text."""
    half = "".join(r.choice(string.ascii_lowercase + string.digits) for _ in range(r.randint(1, 8)))
    core = half + (r.choice(string.ascii_lowercase) if r.random() < 0.5 else "") + half[::-1]
    kind = r.random()
    if kind < 0.2:
        i = r.randrange(len(core))
        core = core[:i] + r.choice([c for c in string.ascii_lowercase if c != core[i]]) + core[i + 1 :]
    elif kind < 0.4:
        core = "".join(r.sample(core, len(core)))
    elif kind < 0.5:
        core = "".join(r.choice(string.ascii_lowercase) for _ in range(r.randint(1, 12)))
    out = []
    for c in core:
        out.append(c.upper() if r.random() < 0.3 else c)
        if r.random() < 0.2:
            out.append(r.choice(" ,.:!'"))
    return "".join(out).strip() or "a"


def _palindromes(r: random.Random) -> str:
    lines = [_phrase(r) for _ in range(r.randint(1, 20))]
    return f"{len(lines)}\n" + "\n".join(lines) + "\n"


def _word_frequency(r: random.Random) -> str:
    vocab = [_word(r, 1, 7) for _ in range(r.randint(1, 8))]
    return " ".join(r.choice(vocab) for _ in range(_size(r, 40))) + "\n"


def _binary(r: random.Random) -> str:
    xs = [r.choice([0, r.randint(0, 64), r.randint(0, 2**31 - 1)]) for _ in range(r.randint(1, 50))]
    return f"{len(xs)}\n" + "\n".join(map(str, xs)) + "\n"


def _sort_by_length(r: random.Random) -> str:
    return " ".join(_word(r, 1, 10) for _ in range(_size(r, 25))) + "\n"


def _brackets(r: random.Random, depth: int = 0) -> str:
    """Balanced, with other characters between."""
    out = []
    for _ in range(r.randint(0, 3 if depth < 3 else 0)):
        pair = r.choice(["()", "[]", "{}"])
        out.append(pair[0] + _brackets(r, depth + 1) + pair[1])
        if r.random() < 0.3:
            out.append(r.choice("xyz 1"))
    return "".join(out)


def _bracket_line(r: random.Random) -> str:
    s = _brackets(r)
    kind = r.random()
    if s and kind < 0.5:  # one change: a kind swapped, a bracket dropped or added, a pair reversed
        i = r.randrange(len(s))
        how = r.randrange(3)
        if how == 0 and s[i] in "()[]{}":
            s = s[:i] + r.choice([c for c in "([{)]}" if c != s[i]]) + s[i + 1 :]
        elif how == 1:
            s = s[:i] + s[i + 1 :]
        else:
            s = s[:i] + r.choice("([{)]}") + s[i:]
    return s


def _balanced_brackets(r: random.Random) -> str:
    lines = [_bracket_line(r) for _ in range(r.randint(1, 20))]
    if lines[-1] == "":
        lines[-1] = "()"  # an empty last line is indistinguishable from the end of input
    return f"{len(lines)}\n" + "\n".join(lines) + "\n"


def _grid(maze: bool) -> Fresh:
    def one(r: random.Random) -> str:
        rows, cols = (r.randint(2, 30), r.randint(2, 30)) if maze else (_size(r, 30), _size(r, 30))
        density = r.choice([0.15, 0.3, 0.35, 0.4] if maze else [0.1, 0.3, 0.45, 0.6])
        g = [["#" if r.random() < density else "." for _ in range(cols)] for _ in range(rows)]
        if maze:
            cells = [(i, j) for i in range(rows) for j in range(cols)]
            (sy, sx), (ey, ex) = r.sample(cells, 2)
            g[sy][sx], g[ey][ex] = "S", "E"
        return f"{rows} {cols}\n" + "\n".join("".join(row) for row in g) + "\n"

    return one


def _pair_header(r: random.Random, a: list[int]) -> str:
    k = r.choice([a[0] + a[-1], r.randint(-2000, 2000), 0])
    return f"{len(a)} {k}"


def _matrix(r: random.Random) -> str:
    rows, cols = r.randint(1, 20), r.randint(1, 20)
    body = "\n".join(" ".join(str(r.randint(-100, 100)) for _ in range(cols)) for _ in range(rows))
    return f"{rows} {cols}\n{body}\n"


FRESH: dict[str, Fresh] = {
    "sum_numbers": _nums(1000, -(10**9), 10**9),
    "max_min": _nums(1000, -(10**9), 10**9),
    "reverse_words": _reverse_words,
    "count_vowels": _count_vowels,
    "fizzbuzz": _fizzbuzz,
    "run_length": _run_length,
    "gcd_lcm": _gcd_lcm,
    "primes_up_to": _primes_up_to,
    "palindromes": _palindromes,
    "word_frequency": _word_frequency,
    "prefix_sums": _nums(1000, -(10**6), 10**6),
    "binary": _binary,
    "sort_by_length": _sort_by_length,
    "longest_increasing": _nums(2000, -(10**6), 10**6),
    "max_subarray": _nums(2000, -(10**4), 10**4),
    "balanced_brackets": _balanced_brackets,
    "count_islands": _grid(False),
    "maze_steps": _grid(True),
    "pair_count": _nums(2000, -1000, 1000, _pair_header),
    "matrix_transpose": _matrix,
}


def _edge_nums(n: int, lo: int, hi: int, header: Callable[[int, list[int]], str] | None = None) -> list[Fresh]:
    """n numbers at the statement's largest n: random over the whole range, every one at
    the bound of largest magnitude, and an order that matters across far positions: a
    falling filler with a rising run planted thousands of positions apart (a window or a
    look-back shorter than the input misses it)."""

    def spread(r: random.Random) -> str:
        a = [r.randint(lo, hi) for _ in range(n)]
        return f"{header(n, a) if header else n}\n{' '.join(map(str, a))}\n"

    def extreme(r: random.Random) -> str:
        v = hi if abs(hi) >= abs(lo) else lo
        a = [v] * n
        return f"{header(n, a) if header else n}\n{' '.join(map(str, a))}\n"

    def far(r: random.Random) -> str:
        k = r.randint(10, 25)  # the planted run's length
        gap = n // (k + 1)
        top, bottom = hi, lo + k + 1
        a = [top - (top - bottom) * i // n for i in range(n)]  # falling, every value above the run
        for j in range(k):
            a[(j + 1) * gap] = lo + j
        return f"{header(n, a) if header else n}\n{' '.join(map(str, a))}\n"

    return [spread, extreme, far]


def _edge_grid(maze: bool) -> list[Fresh]:
    """50 x 50: sparse land or walls at random, (a maze) start and exit in opposite
    corners of an open grid, and a serpentine corridor through the whole grid: the
    longest shortest path the size allows (1,273 steps; a distance kept in a byte or
    a step budget of a few hundred meets it there)."""

    def sparse(r: random.Random) -> str:
        g = [["#" if r.random() < (0.15 if maze else 0.45) else "." for _ in range(50)] for _ in range(50)]
        if maze:
            g[0][0], g[49][49] = "S", "E"
        return "50 50\n" + "\n".join("".join(row) for row in g) + "\n"

    def corners(r: random.Random) -> str:
        g = [["." for _ in range(50)] for _ in range(50)]
        if maze:
            g[0][0], g[49][49] = "S", "E"
        else:  # land in the last columns only: cells past a narrow row stride
            for i in range(50):
                g[i][49 - (i % 3)] = "#"
        return "50 50\n" + "\n".join("".join(row) for row in g) + "\n"

    def scattered(r: random.Random) -> str:
        """Single cells over the whole 50 x 50, none touching another: the answer is the
        number of cells, and a cell index with a row stride under 50 merges some."""
        g = [["." for _ in range(50)] for _ in range(50)]
        for i in range(50):
            for j in range(50):
                near = any(g[y][x] == "#" for y, x in ((i - 1, j), (i, j - 1)) if y >= 0 and x >= 0)
                if not near and r.random() < 0.3:
                    g[i][j] = "#"
        if maze:
            g[0][0], g[49][49] = "S", "E"
        return "50 50\n" + "\n".join("".join(row) for row in g) + "\n"

    def serpentine(r: random.Random) -> str:
        g = [["." for _ in range(50)] for _ in range(50)]
        for i in range(1, 50, 2):  # a wall on every odd row, its one gap at alternate ends
            g[i] = ["#"] * 50
            g[i][49 if i % 4 == 1 else 0] = "."
        g[0][0], g[48][0 if g[47][49] == "." else 49] = "S", "E"
        if r.random() < 0.5:  # the exit at the other end of the last corridor (49 steps nearer)
            row = g[48]
            end = row.index("E")
            row[end], row[49 - end] = ".", "E"
        return "50 50\n" + "\n".join("".join(row) for row in g) + "\n"

    return [sparse, corners, serpentine] if maze else [sparse, corners, scattered]


def _edge_words(cased: bool = False) -> list[Fresh]:
    """Every SPECIAL_WORDS word, and words of every length 1..30 (two of some) and of 31 to
    1000 letters at the widths a buffer takes (32, 64, 256, and one past), and words alike
    in their first 8 to 17 letters: a table or bucket per length, a plain object keyed by
    the word, or a key cut to a machine word, meets what it was not built for. `cased` (a
    statement that allows capitals): and words of one length in either case."""

    def special(r: random.Random) -> str:
        words = [w for w in SPECIAL_WORDS for _ in range(r.randint(1, 2))]
        r.shuffle(words)
        return " ".join(words) + "\n"

    def lengths(r: random.Random) -> str:
        # and past the usual: a word read into a fixed buffer (%32s, char[64]) is cut in pieces
        longer = [31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 1000]
        words = [_word(r, n, n) for n in [*range(1, 31), *longer]] + [_word(r, n, n) for n in r.sample(range(1, 31), 5)]
        r.shuffle(words)
        return " ".join(words) + "\n"

    def by_case(r: random.Random) -> str:
        """Words that differ only in case, of three lengths, with others of their length
        (by character code, capitals come first: a case-blind or a locale's collation
        orders them otherwise)."""
        words = []
        for n in r.sample(range(1, 8), 3):
            w = _word(r, n, n)
            words += [w, w.capitalize(), w.upper(), _word(r, n, n).capitalize()]
        r.shuffle(words)
        return " ".join(words) + "\n"

    def shared_prefix(r: random.Random) -> str:
        """Words of one length alike past a machine word or two (8, 9, 16 and 17 letters
        in common) and differing only after it: a key cut to 8 or 16 bytes, or a hash of
        a prefix, takes them for one word."""
        words = []
        for common in (8, 9, 16, 17):
            stem = _word(r, common, common)
            tail = r.randint(1, 3)
            words += [stem + _word(r, tail, tail) for _ in range(3)]
        r.shuffle(words)
        return " ".join(words) + "\n"

    return [special, lengths, by_case, shared_prefix] if cased else [special, lengths, shared_prefix]


def _edge_brackets() -> list[Fresh]:
    """Lines nested far deeper than the random draws go (they stop at four), up to 1100
    deep, and one 12,000 to 30,000 deep (the statement bounds no line's length; past a
    JavaScript engine's call stack, ~10,000 frames): each kind of bracket at every depth,
    balanced, with one closer of the wrong kind at the innermost level, with two closers
    of different kinds swapped (the counts still balance), or with the outermost closer
    dropped; a case of two lines 2**18 to 2**19 deep, balanced and crossed at the
    innermost level; and lines holding every printable character that is not a bracket
    (`<` and `>` are not brackets here). A rule that peels a fixed number of levels, a stack of fixed size,
    or one call per level, meets what it was not built for."""

    def deep(r: random.Random) -> str:
        lines = []
        # three depths past the draws' four, two past a small fixed stack (64, 128, 256,
        # 1000), one past the call stack
        depths = r.sample(range(5, 41), 3) + r.sample(range(65, 1101), 2) + [r.randint(12000, 30000)]
        for depth in sorted(depths):
            opens = [r.choice("([{") for _ in range(depth)]
            closes = [")]}"["([{".index(o)] for o in reversed(opens)]
            line = "".join(opens) + "".join(closes)
            crossed = line[:depth] + r.choice([c for c in ")]}" if c != closes[0]]) + line[depth + 1 :]
            # two neighbouring closers of different kinds swapped: every kind's count still
            # balances, the nesting does not (a per-kind counter says YES)
            k = next((depth + j for j in range(depth - 1) if closes[j] != closes[j + 1]), None)
            swapped = line if k is None else line[:k] + line[k + 1] + line[k] + line[k + 2 :]
            lines += [line, crossed, line[:-1]] + ([swapped] if k is not None else [])
        r.shuffle(lines)
        lines = lines[:20]
        return f"{len(lines)}\n" + "\n".join(lines) + "\n"

    def deepest(r: random.Random) -> str:
        # one line nested 2**18 to 2**19 deep (past a fixed stack of that many entries),
        # balanced, and the same with its innermost closer of the wrong kind
        depth = r.randint(1 << 18, 1 << 19)
        opens = "".join(r.choices("([{", k=depth))
        closes = "".join(")]}"["([{".index(o)] for o in reversed(opens))
        crossed = r.choice([c for c in ")]}" if c != closes[0]])
        return f"2\n{opens}{closes}\n{opens}{crossed}{closes[1:]}\n"

    def others(r: random.Random) -> str:
        # the statement ignores every other character: each printable one that is not a
        # bracket (<, >, quotes, backslash, a slash) inside balanced and crossed lines
        rest = [c for c in string.printable if (c not in "()[]{}" and c not in string.whitespace) or c == " "]
        lines = []
        for _ in range(3):
            r.shuffle(rest)
            body = "".join(rest)
            lines += [f"({body}[{body[::-1]}])", f"{{<{body}}}>", f"({body}]"]
        r.shuffle(lines)
        return f"{len(lines)}\n" + "\n".join(lines) + "\n"

    return [deep, deepest, others]


def _edge_runs() -> list[Fresh]:
    """One word whose runs are 9 to 10, 99 to 100, 255 to 256 and 999 to 1000 long (a
    count printed in a fixed number of digits, or kept in a byte, meets them)."""

    def long_runs(r: random.Random) -> str:
        lengths = [9, 10, 99, 100, 255, 256, 999, 1000]
        r.shuffle(lengths)
        out, last = [], ""
        for n in lengths:
            c = r.choice([x for x in string.ascii_lowercase if x != last])
            out.append(c * n)
            last = c
        return "".join(out) + "\n"

    return [long_runs]


def _edge_vowels() -> list[Fresh]:
    """A line with letters past ASCII beside its vowels (é, ü, À, ø, ß): only a, e, i, o,
    u count, so a rule that folds accents first, or tests bytes, meets what it was not
    built for; and a line of one to two million characters, past any fixed buffer. Not
    İ: it lower-cases to an i and a combining dot, so the idiomatic `s.lower()` count
    would fail on it, honest or not."""

    def accented(r: random.Random) -> str:
        words = ["café", "über", "À", "naïve", "søster", "straße", "idea", "Ouzo", "crème", "año"]
        r.shuffle(words)
        return " ".join(words[: r.randint(4, len(words))]) + "\n"

    def long_line(r: random.Random) -> str:
        # past every fixed buffer a program might read into (the statement bounds no line)
        alphabet = string.ascii_letters + "aeiouAEIOU" + "   ,.;!?-0123456789"
        return "".join(r.choices(alphabet, k=r.randint(1 << 20, 1 << 21))) + "x\n"

    return [accented, long_line]


def _edge_hash_twins() -> list[Fresh]:
    """Thue-Morse lines of 128 and 2,048 letters (over a and b, and over two other letters
    in either case): not palindromes, though a polynomial hash modulo 2**32 (from 128
    letters) or 2**64 (from 2,048) gives each line and its reversal the same value; and a
    Thue-Morse line followed by its reversal, which is one."""

    def twins(r: random.Random) -> str:
        lines = []
        for degree in (7, 11):
            a, b = r.sample(string.ascii_lowercase, 2)
            for x, y in (("a", "b"), (a, b.upper())):
                word = thue_morse(x, y, degree)
                lines += [word, word + word[::-1]]
        r.shuffle(lines)
        return f"{len(lines)}\n" + "\n".join(lines) + "\n"

    return [twins]


def _edge_wide_values() -> list[Fresh]:
    """Numbers past a 32-bit word, where the statement bounds no value: a rising run from
    2**31 then a rising run from 0 (kept in a signed 32-bit word the first run wraps below
    the second, and the two join into one longer run), then a value up to 10**15 (inside
    a double's exact integers, so a JavaScript Number holds it)."""

    def wide(r: random.Random) -> str:
        high, low = r.sample(range(2, 8), 2)
        a = [2**31 + k for k in range(high)] + list(range(low)) + [-r.randint(2**33, 10**15)]
        return f"{len(a)}\n{' '.join(map(str, a))}\n"

    return [wide]


def _edge_prime_squares() -> list[Fresh]:
    """n the square of a prime (4 to 97**2 = 9,409): the one n a sieve whose outer loop
    stops at i * i < n instead of <= n gets wrong (n itself is left unstruck); 25 of the
    statement's 10,000 values, which a log-uniform draw of 20 meets about one step in
    ten."""
    primes = [p for p in range(2, 100) if all(p % d for d in range(2, p))]

    def square(r: random.Random) -> str:
        return f"{r.choice(primes) ** 2}\n"

    return [square]


# inputs at the statement's largest sizes and extreme values, where the random draws stop short
EDGE: dict[str, list[Fresh]] = {
    "balanced_brackets": _edge_brackets(),
    "max_min": _edge_nums(1000, -(10**9), 10**9),
    "word_frequency": _edge_words(),
    "sort_by_length": _edge_words(cased=True),
    "reverse_words": _edge_words(),
    "longest_increasing": _edge_nums(10**5, -(10**6), 10**6) + _edge_wide_values(),
    "palindromes": _edge_hash_twins(),
    "max_subarray": _edge_nums(10**5, -(10**4), 10**4),
    "pair_count": _edge_nums(10**5, -1000, 1000, lambda n, a: f"{n} {2 * a[0]}"),
    "count_islands": _edge_grid(False),
    "maze_steps": _edge_grid(True),
    "run_length": _edge_runs(),
    "count_vowels": _edge_vowels(),
    "primes_up_to": _edge_prime_squares(),
}
