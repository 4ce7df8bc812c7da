"""Ladders of ever larger inputs grown from a task's examples: the sizes a fixed draw
stops at are where a reply that is right only on small inputs hides (a table of powers
of ten up to 10^110, a loop capped at 20,000 steps, a stack of 4,096 entries that counts
what spills). Each ladder is one way of growing an example, its rungs in ascending size;
`rlvr.rewards.reached` walks a ladder through the reference inside the sandbox and keeps
the largest rung the reference answers within a budget of trace events, so how far the
hidden tests reach is the reference's own reach, the same on every machine.

The ways of growing (each ladder grows one example's arguments of one kind):

- `nest`: a string argument wrapped in k copies of its first opening bracket (its first
  character where it has none) and k of that character's partner (the closing bracket;
  any other character is its own), k up to ~8,000: a balanced example stays balanced
  and deeper, one with a crossed or missing closer keeps its fault deep inside (one
  that only opens late, `)(`, may come out balanced: the reference says which), a
  palindrome stays one; a ladder for each of the examples' strings (up to NESTED);
- `repeat`: every string and list argument repeated to ~1,000, ~4,000 and ~16,000
  elements by one factor (two anagrams stay anagrams);
- `bits`: every integer argument replaced by a random one of 1,024, 4,096 and 8,192 bits
  (non-negative where `nonneg` says so, else either sign), only where the reference is exact
  past 2**52 and the task declares no range for it; 8,192 bits stay below Python's limit
  on converting integers to text (4,300 digits), which an honest `str(n)` would hit;
  beside it `bits_multiple`, the same sizes rounded down to a multiple of SMOOTH (every
  prime to 13 divides it: a divisibility test that is exact only below some width says
  no where the answer is yes), and `bits_edge`, 2**bits - 1 or + 1 (all ones, or a lone
  top bit and a one: where a fixed-width mask or carry gives way).

Past the fixed rungs, `repeat` and the `bits` ladders each get one rung more, `beyond`,
whose size is drawn afresh each step: a length log-uniform in (2**14, BEYOND_LENGTH], a
width uniform in (8,192, BEYOND_BITS) bits (below the 4,000 digits the wire carries back
and Python's 4,300-digit limit on `str(n)`). A fixed reach is a published number, and a
reply that is right only below it passes every test (blind set 7: seven replies wrong
only past 2**15 elements or 10,000 bits); a drawn one has no single size to hide under.
It is walked only where the reference answered the fixed top rung (`rlvr.rewards.reached`),
and it is drawn after every fixed rung, so the fixed rungs are what they were.

A rung is the text of an argument list, with long strings and lists written as products
(`'(' * 4096 + '(]' + ')' * 4096`), so that a test stays short to send and to read. Pure
functions of `(examples, random.Random)`: the same seed gives the same ladders.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

LENGTHS = (1 << 10, 1 << 12, 1 << 14)  # elements of a grown string or list
BITS = (1 << 10, 1 << 12, 1 << 13)  # bits of a grown integer
BEYOND_LENGTH = 1 << 16  # the longest drawn rung past LENGTHS (a test's text is capped by the walk's caller)
BEYOND_BITS = 13_000  # the widest drawn rung past BITS: 3,914 digits, inside the wire's 4,000
SMOOTH = 2 * 3 * 5 * 7 * 11 * 13  # a bits_multiple integer is a multiple of it
NESTED = 12  # string examples nested, per argument (a fault deep inside shows only on some)
_PARTNER = {"(": ")", "[": "]", "{": "}", "<": ">", ")": "(", "]": "[", "}": "{", ">": "<"}

_OPENERS = "([{<"


class Ladder(NamedTuple):
    kind: str  # how it grows
    rungs: list[str]  # the fixed rungs' argument texts, ascending
    beyond: str | None = None  # one rung past them, its size drawn each step (repeat and bits)


def ladders(
    examples: list[tuple[Any, ...]],
    rng: random.Random,
    nonneg: tuple[bool, ...] = (),
    exact: bool = False,
    fixed: tuple[bool, ...] = (),
) -> list[Ladder]:
    """The ladders grown from `examples` (argument tuples of one arity). `nonneg[i]`: argument
    i's integers stay at 0 or above; `exact`: the reference is exact on integers past
    2**52; `fixed[i]`: argument i has a declared range (never grown)."""
    if not examples:
        return []
    out: list[Ladder] = []
    later: list[tuple[int, tuple[Any, ...]]] = []  # (a ladder, its base example): its beyond is drawn last
    width = len(examples[0])
    for i in range(width):
        strings = list(dict.fromkeys(e[i] for e in examples if type(e[i]) is str and e[i]))
        for s in rng.sample(strings, min(NESTED, len(strings))):
            base = next(e for e in examples if e[i] == s)
            out.append(Ladder("nest", [_args(base, {i: _nested(s, n // 2)}) for n in LENGTHS]))
    sized = [e for e in examples if any(_growable(a) for a in e)]
    if sized:
        base = rng.choice(sized)
        out.append(Ladder("repeat", [_repeat_args(base, n) for n in LENGTHS]))
        later.append((len(out) - 1, base))
    ints = [i for i in range(width) if _int_column(examples, i) and not (i < len(fixed) and fixed[i])]
    if exact and ints:
        base = rng.choice(examples)
        for kind in ("bits", "bits_multiple", "bits_edge"):
            out.append(Ladder(kind, [_args(base, _grown_ints(kind, bits, ints, nonneg, rng)) for bits in BITS]))
            later.append((len(out) - 1, base))
    for at, base in later:
        kind = out[at].kind
        if kind == "repeat":
            text = _repeat_args(base, beyond_length(rng), past=LENGTHS[-1])
        else:
            text = _args(base, _grown_ints(kind, beyond_bits(rng), ints, nonneg, rng))
        out[at] = out[at]._replace(beyond=text)
    return out


def beyond_length(rng: random.Random) -> int:
    """A length past LENGTHS' top, log-uniform up to BEYOND_LENGTH."""
    top = LENGTHS[-1].bit_length() - 1
    return max(LENGTHS[-1] + 1, int(2 ** rng.uniform(top, BEYOND_LENGTH.bit_length() - 1)))


def beyond_bits(rng: random.Random) -> int:
    """A width past BITS' top, uniform below BEYOND_BITS (`bits_edge`'s 2**w + 1 has one bit more)."""
    return rng.randint(BITS[-1] + 1, BEYOND_BITS - 1)


def _grown_ints(kind: str, bits: int, ints: list[int], nonneg: tuple[bool, ...], rng: random.Random) -> dict[int, str]:
    """The texts of the integer arguments `ints` grown to about `bits` bits, of `kind` (see
    the module's docstring); a random sign where `nonneg` does not keep it at 0 or above."""
    grown = {}
    for i in ints:
        v = rng.getrandbits(bits) | (1 << (bits - 1))
        if kind == "bits_multiple":
            v -= v % SMOOTH
        elif kind == "bits_edge":
            v = (1 << bits) + rng.choice((-1, 1))
        negative = not (i < len(nonneg) and nonneg[i]) and rng.random() < 0.5
        grown[i] = repr(-v if negative else v)
    return grown


def _args(base: tuple[Any, ...], grown: dict[int, str]) -> str:
    return ", ".join(grown[j] if j in grown else repr(a) for j, a in enumerate(base))


def _repeat_args(base: tuple[Any, ...], n: int, past: int = 0) -> str:
    """`base` with every string and list argument repeated to about `n` elements by one
    factor; with `past`, a factor above the one `past` elements take (a longer input than
    that rung's, whatever the example's length)."""
    longest = max(len(a) for a in base if _growable(a))
    times = max(1, n // longest, past // longest + 1 if past else 0)
    return _args(base, {j: f"{a!r} * {times}" for j, a in enumerate(base) if _growable(a)})


def _nested(s: str, k: int) -> str:
    c = next((x for x in s if x in _OPENERS), s[0])
    return f"{c!r} * {k} + {s!r} + {_PARTNER.get(c, c)!r} * {k}"


def _growable(a: Any) -> bool:
    return type(a) in (str, list) and len(a) > 0


def _int_column(examples: list[tuple[Any, ...]], i: int) -> bool:
    return all(type(e[i]) is int for e in examples)
