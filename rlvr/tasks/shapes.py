"""Inputs of a known shape for hidden tests (issue 33: input adequacy): the structures
that random draws and edits of the examples almost never produce, though a rule fitted
to the examples is wrong on exactly them.

Drawn by the kind of an argument, never by the task's name or family:

- integers: perfect squares (and their neighbours) of every magnitude up to 2**52, half
  of them squares of a prime (the one input where a trial-division loop bounded by
  `i * i < n` instead of `<=` is wrong: a composite root has a smaller factor that the
  loop still finds), and powers of two and of ten (and +-1) across widths. Nothing past
  2**52: honest code that goes through a float is exact there, and a drawn test should
  not judge float precision (nor does rlvr.rewards.strategies, whose widest draws have
  12 digits);
- two integer arguments: a pair with a common factor and cofactors past 50;
- strings (over the examples' characters): a run of 10 or more of one character, a
  near-palindrome (length 8 or more, one mismatch inside the outer three pairs, half the
  time a mismatch in case alone) and, where the examples hold brackets of two kinds or
  more, a depth-balanced string with one closer of another kind away from its opener;
  and an example with one character of a class its examples never show (a space, a
  newline, punctuation, a digit, a non-ASCII letter, one past Latin-1, a letter whose
  case does not map one to one such as `ß` or titlecase `ǅ`, the other case of its
  letters): a rule fitted to the characters the examples use (`\\w` runs, `islower()`, a
  case-blind compare) is wrong on exactly these;
- two string arguments: an anagram pair, and "checksum twins": equal length, equal set of
  characters and equal sum of codes, different counts;
- lists of integers: every small length with distinct values, and one element nested a
  level deeper where the examples nest; lists of integers or strings: a few of the
  examples' own values repeated (a rule counting distinct values where pairs are meant).

`shaped(examples, rng, nonneg)` gives one argument tuple: an example with one argument
(or a pair) replaced by a shaped value. `shapes(args, examples)` names the shapes an
argument tuple has, whatever drew it: the hidden-test selection keeps one input of each
shape it can (rlvr.rewards.selection). Pure functions of their arguments and the
generator; the caller seeds it.
"""

from __future__ import annotations

import math
import random
import unicodedata
from typing import Any

_BIG = 2**52  # squares stay below it: an honest int(n ** 0.5) is exact there
_OPEN, _CLOSE = "([{<", ")]}>"


def _int_value(rng: random.Random) -> int:
    kind = rng.random()
    if kind < 0.4:  # a square of 3 to 16 digits, or one off it; half the time of a prime
        e = rng.randint(1, 7)
        k = rng.randint(10**e, min(10 ** (e + 1), math.isqrt(_BIG)))
        if rng.random() < 0.5:
            k = _prime_at_most(k)
        return k * k + rng.choice((0, 0, 0, 1, -1))
    if kind < 0.7:  # a power of ten of 3 to 16 digits, or one off it (a digit count's edges),
        # most often the widest, 10**15: a shortcut through floats (log10) breaks at the top
        return 10 ** rng.choice((rng.randint(2, 15), 15, 15)) + rng.choice((0, 1, -1, -1))
    return 2 ** rng.randint(4, 48) + rng.choice((0, 1, -1))  # a power of two, or one off it


def _is_prime(n: int) -> bool:
    """Miller-Rabin with the first twelve prime bases: exact for every n below 3.3e24."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in bases:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime_at_most(k: int) -> int:
    while not _is_prime(k):
        k -= 1
    return k


def _prime_square(b: int) -> bool:
    root = math.isqrt(b)
    return root * root == b and _is_prime(root)


def _power_of_ten(b: int) -> bool:
    return b > 0 and str(b).rstrip("0") == "1"


def _common_factor_pair(rng: random.Random) -> tuple[int, int]:
    g = rng.randint(2, 60)
    while True:
        p, q = rng.randint(51, 400), rng.randint(51, 400)
        if p != q and math.gcd(p, q) == 1:
            return g * p, g * q


def _alphabet(values: list[Any]) -> list[str]:
    return sorted({c for v in values if isinstance(v, str) for c in v})


# a character of each class a string's examples may lack (the class's name, the character)
_FOREIGN = (
    ("space", " "),
    ("punctuation", "-"),
    ("punctuation", "!"),
    ("digit", "7"),
    ("non_ascii", "é"),
    ("newline", "\n"),
    ("non_latin1", "Ж"),
    ("non_latin1", "ā"),
    ("special_case", "ß"),
    ("special_case", "ǅ"),
)


def _char_class(c: str) -> str:
    """The class of a character, as `_FOREIGN` names them. Past ASCII: a letter whose case
    does not map one to one (`ß`.upper() is `SS`; `ǅ` is titlecase), one past Latin-1
    (encodings and one-character caches stop there), else non_ascii."""
    if not c.isascii():
        if len(c.upper()) != 1 or len(c.lower()) != 1 or unicodedata.category(c) == "Lt":
            return "special_case"
        return "non_latin1" if ord(c) > 0xFF else "non_ascii"
    if c in "\n\r\t\v\f":
        return "newline"
    if c.isspace():
        return "space"
    if c.isdigit():
        return "digit"
    if c.isalpha():
        return "upper" if c.isupper() else "lower"
    return "punctuation"


def _foreign(chars: list[str]) -> list[tuple[str, str]]:
    """(class, character) for each class of character the examples' alphabet lacks: a
    space, punctuation, a digit, a non-ASCII letter, and the other case of its letters."""
    have = {_char_class(c) for c in chars}
    out = [(k, c) for k, c in _FOREIGN if k not in have]
    for case, other in (("lower", "upper"), ("upper", "lower")):
        if case in have and other not in have:
            out += [(other, c.swapcase()) for c in chars if _char_class(c) == case][:3]
    return out


def _str_value(values: list[Any], rng: random.Random) -> str | None:
    chars = _alphabet(values)
    if not chars:
        return None
    kinds = ["run"] + (["palindrome"] if len(chars) >= 2 else [])
    if len({c for c in chars if c in _OPEN + _CLOSE} & set(_OPEN)) >= 2:
        kinds.append("brackets")
    words = [v for v in values if isinstance(v, str) and v]
    if words and _foreign(chars):
        kinds.append("foreign")
    kind = rng.choice(kinds)
    if kind == "foreign":  # an example with one character of a class it never shows
        w = list(rng.choice(words))
        w[rng.randrange(len(w))] = rng.choice(_foreign(chars))[1]
        return "".join(w)
    if kind == "run":
        c = rng.choice(chars)
        others = [x for x in chars if x != c]
        tail = rng.choice(others) if others and rng.random() < 0.5 else ""
        return c * rng.randint(10, 14) + tail
    if kind == "palindrome":
        half = [rng.choice(chars) for _ in range(rng.randint(4, 6))]
        s = half + half[::-1]
        i = rng.randint(3, len(half) - 1)  # inside the outer three pairs
        if s[i].isalpha() and s[i].swapcase() != s[i] and rng.random() < 0.5:
            s[i] = s[i].swapcase()  # a mismatch in case alone
        else:
            s[i] = rng.choice([c for c in chars if c != s[i]])
        return "".join(s)
    return _crossed_brackets([c for c in _OPEN if c in chars], rng)


def _crossed_brackets(kinds: list[str], rng: random.Random) -> str:
    """A string balanced by depth, nested two deep or more, with one closer of another
    kind whose opener is not right before it: `(()]`, `[(())}`."""
    depth = rng.randint(2, 4)
    opens = [rng.choice(kinds) for _ in range(depth)]
    closes = [_CLOSE[_OPEN.index(o)] for o in reversed(opens)]
    j = rng.randint(1, depth - 1)  # not the innermost closer: its opener is right before it
    wrong = [_CLOSE[_OPEN.index(k)] for k in kinds if _CLOSE[_OPEN.index(k)] != closes[j]]
    closes[j] = rng.choice(wrong)
    return "".join(opens) + "".join(closes)


def _str_pair(values_a: list[Any], values_b: list[Any], rng: random.Random) -> tuple[str, str] | None:
    chars = sorted(set(_alphabet(values_a)) | set(_alphabet(values_b)))
    if len(chars) < 3:
        return None
    s = [rng.choice(chars) for _ in range(rng.randint(5, 9))]
    if rng.random() < 0.5:
        t = list(s)
        rng.shuffle(t)
        return "".join(s), "".join(t)
    # checksum twins: with y the midpoint of x and z, x z x z y and x z y y y have the same
    # length, set of characters and sum of codes (5y), and different counts
    pairs = [(x, z) for x in chars for z in chars if x < z and (ord(x) + ord(z)) % 2 == 0
             and chr((ord(x) + ord(z)) // 2) in chars]  # fmt: skip
    if not pairs:
        return None
    x, z = rng.choice(pairs)
    y = chr((ord(x) + ord(z)) // 2)
    base, twin = [*s[:3], x, z, x, z, y], [*s[:3], x, z, y, y, y]
    rng.shuffle(base)
    rng.shuffle(twin)
    return "".join(base), "".join(twin)


def _list_value(values: list[Any], rng: random.Random, nonneg: bool) -> list[Any] | None:
    lists = [v for v in values if isinstance(v, list)]
    if not lists:
        return None
    nested = [v for v in lists if any(isinstance(x, list) for x in v)]
    flat_ints = all(type(x) is int for v in lists for x in v)
    if nested and (rng.random() < 0.5 or not flat_ints):
        v = [list(x) if isinstance(x, list) else x for x in rng.choice(nested)]
        i = rng.randrange(len(v))
        v[i] = [v[i]]
        return v
    ints = [x for v in lists for x in v if type(x) is int]
    items = sorted({x for v in lists for x in v if type(x) in (int, str)}, key=repr)
    if items and rng.random() < 0.25 and all(type(x) in (int, str) for v in lists for x in v):
        # a few of the examples' own values, repeated: a rule that counts distinct values
        # (a set where pairs are meant) is wrong on exactly these
        pool = rng.sample(items, min(len(items), rng.randint(2, 3)))
        return [rng.choice(pool) for _ in range(rng.randint(len(pool) + 1, 8))]
    if not ints or not flat_ints:
        return None
    lo, hi = min(ints) - 5, max(ints) + 5
    lo = max(lo, 0) if nonneg else lo
    n = rng.randint(0, 5)
    return rng.sample(range(lo, max(hi, lo + n) + 1), n)


def shaped(args: tuple[Any, ...], examples: list[tuple[Any, ...]], rng: random.Random,
           nonneg: tuple[bool, ...] = ()) -> tuple[Any, ...]:  # fmt: skip
    """`args` (an example) with one argument, or a pair of them, replaced by a shaped value
    of its kind (see the module docstring); `args` unchanged where no argument has one."""
    width = len(args)
    column = [[e[i] for e in examples if len(e) == width] for i in range(width)]
    ints = [i for i in range(width) if column[i] and all(type(v) is int for v in column[i])]
    strs = [i for i in range(width) if column[i] and all(isinstance(v, str) for v in column[i])]
    out = list(args)
    if len(ints) >= 2 and rng.random() < 0.3:
        i, j = rng.sample(ints, 2)
        out[i], out[j] = _common_factor_pair(rng)
        return tuple(out)
    if len(strs) >= 2 and rng.random() < 0.5:
        i, j = rng.sample(strs, 2)
        pair = _str_pair(column[i], column[j], rng)
        if pair is not None:
            out[i], out[j] = pair
            return tuple(out)
    order = list(range(width))
    rng.shuffle(order)
    for i in order:
        keep = nonneg[i] if i < len(nonneg) else False
        value: Any = None
        if i in ints:
            value = _int_value(rng)
        elif i in strs:
            value = _str_value(column[i], rng)
        else:
            value = _list_value(column[i], rng, keep)
        if value is not None:
            out[i] = value
            return tuple(out)
    return tuple(out)


def _depth(v: Any) -> int:
    return 1 + max((_depth(x) for x in v), default=0) if isinstance(v, list | tuple) else 0


def _longest_run(s: str) -> int:
    best = run = 0
    for k, c in enumerate(s):
        run = run + 1 if k and s[k - 1] == c else 1
        best = max(best, run)
    return best


def _crossed(s: str) -> bool:
    """Balanced by depth, every bracket kind counted alike, with some closer of another
    kind than its opener, none of them right after it."""
    stack: list[tuple[str, int]] = []
    crossed = False
    for k, c in enumerate(s):
        if c in _OPEN:
            stack.append((c, k))
        elif c in _CLOSE:
            if not stack:
                return False
            o, at = stack.pop()
            if _OPEN.index(o) != _CLOSE.index(c):
                if at == k - 1:
                    return False
                crossed = True
    return crossed and not stack


def shapes(args: tuple[Any, ...], examples: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    """The shapes `args` has (see the module docstring), as selection features."""
    out: set[tuple[Any, ...]] = set()
    ints = [(i, a) for i, a in enumerate(args) if type(a) is int]
    for i, a in ints:
        scale = len(str(a)) // 4  # kept at every magnitude: a shortcut can be exact up to one
        for kind, test in (
            ("square", lambda b: math.isqrt(b) ** 2 == b),
            ("prime_square", _prime_square),
            ("power_of_two", lambda b: b & (b - 1) == 0),
            ("power_of_ten", _power_of_ten),
        ):
            if a >= 15 and test(a):
                out.add(("shape", i, kind, scale))
            elif a >= 15 and kind != "prime_square" and (test(a - 1) or test(a + 1)):
                out.add(("shape", i, kind + "_neighbour", scale))  # one off it
    for (i, a), (j, b) in ((p, q) for p in ints for q in ints if p[0] < q[0]):
        g = math.gcd(a, b)
        if g >= 2 and min(abs(a), abs(b)) // g > 50:
            out.add(("shape", (i, j), "common_factor"))
    strs = [(i, a) for i, a in enumerate(args) if isinstance(a, str)]
    for i, s in strs:
        if _longest_run(s) >= 10:
            out.add(("shape", i, "run"))
        if len(s) >= 8 and sum(s[k] != s[-1 - k] for k in range(len(s) // 2)) == 1 and s[:3] == s[::-1][:3]:
            case_only = s.lower() == s[::-1].lower()
            out.add(("shape", i, "near_palindrome_case" if case_only else "near_palindrome"))
        seen = _alphabet([e[i] for e in examples if i < len(e)])
        for kind in {k for k, _ in _foreign(seen)} & {_char_class(c) for c in s}:
            out.add(("shape", i, "foreign", kind))
        if _crossed(s):
            out.add(("shape", i, "crossed_brackets"))
    for (i, u), (j, w) in ((p, q) for p in strs for q in strs if p[0] < q[0]):
        if u != w and sorted(u) == sorted(w):
            out.add(("shape", (i, j), "anagram"))
        elif len(u) == len(w) and set(u) == set(w) and sum(map(ord, u)) == sum(map(ord, w)) and sorted(u) != sorted(w):
            out.add(("shape", (i, j), "checksum_twin"))
    deepest = max((_depth(e[i]) for e in examples for i in range(len(e)) if isinstance(e[i], list)), default=0)
    for i, a in enumerate(args):
        if isinstance(a, list):
            if len(a) <= 5 and all(type(x) is int for x in a) and len(set(a)) == len(a):
                out.add(("shape", i, "distinct", len(a)))
            if len(a) >= 3 and all(type(x) in (int, str) for x in a) and len(set(a)) < len(a):
                out.add(("shape", i, "repeats"))
            if deepest >= 2 and _depth(a) > deepest:
                out.add(("shape", i, "deeper"))
    return out
