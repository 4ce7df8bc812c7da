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

A rung is the text of an argument list, with long strings and lists written as products
(`'(' * 4096 + '(]' + ')' * 4096`), so that a test stays short to send and to read. Pure
functions of `(examples, random.Random)`: the same seed gives the same ladders.
"""

from __future__ import annotations

import random
from typing import Any

LENGTHS = (1 << 10, 1 << 12, 1 << 14)  # elements of a grown string or list
BITS = (1 << 10, 1 << 12, 1 << 13)  # bits of a grown integer
SMOOTH = 2 * 3 * 5 * 7 * 11 * 13  # a bits_multiple integer is a multiple of it
NESTED = 12  # string examples nested, per argument (a fault deep inside shows only on some)
_PARTNER = {"(": ")", "[": "]", "{": "}", "<": ">", ")": "(", "]": "[", "}": "{", ">": "<"}

_OPENERS = "([{<"
Ladder = tuple[str, list[str]]  # (how it grows, the rungs' argument texts, ascending)


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
    width = len(examples[0])
    for i in range(width):
        strings = list(dict.fromkeys(e[i] for e in examples if type(e[i]) is str and e[i]))
        for s in rng.sample(strings, min(NESTED, len(strings))):
            base = next(e for e in examples if e[i] == s)
            out.append(("nest", [_args(base, {i: _nested(s, n // 2)}) for n in LENGTHS]))
    sized = [e for e in examples if any(_growable(a) for a in e)]
    if sized:
        base = rng.choice(sized)
        longest = max(len(a) for a in base if _growable(a))
        out.append(
            (
                "repeat",
                [
                    _args(base, {j: _repeated(a, n, longest) for j, a in enumerate(base) if _growable(a)})
                    for n in LENGTHS
                ],
            )
        )
    ints = [i for i in range(width) if _int_column(examples, i) and not (i < len(fixed) and fixed[i])]
    if exact and ints:
        base = rng.choice(examples)
        for kind in ("bits", "bits_multiple", "bits_edge"):
            out.append((kind, [_args(base, _grown_ints(kind, bits, ints, nonneg, rng)) for bits in BITS]))
    return out


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


def _nested(s: str, k: int) -> str:
    c = next((x for x in s if x in _OPENERS), s[0])
    return f"{c!r} * {k} + {s!r} + {_PARTNER.get(c, c)!r} * {k}"


def _repeated(a: Any, n: int, longest: int) -> str:
    times = max(1, n // max(1, longest))
    return f"{a!r} * {times}"


def _growable(a: Any) -> bool:
    return type(a) in (str, list) and len(a) > 0


def _int_column(examples: list[tuple[Any, ...]], i: int) -> bool:
    return all(type(e[i]) is int for e in examples)
