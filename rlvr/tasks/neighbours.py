"""Inputs near a task's examples: one or two small edits of an example call's arguments
(hidden tests, `rlvr.rewards.hidden_tests`).

Random inputs over the examples' range rarely have the examples' structure: a random
string over "()[]" is almost never balanced, a random pair of integers rarely shares a
factor of 17. An edit of an example keeps most of its structure and moves it across the
boundary a rule fitted to the examples draws: two brackets swapped ("([])" -> "([)]"), a
letter replaced by another of its case ('w' -> 't'), a number moved by one, both numbers
of a pair scaled by a common factor (a small one, or a prime past 19), a string or list
shuffled, reordered or grown, an element of a list of lists nested one level deeper. Pure functions of
`(arguments, random.Random)`: the caller derives the generator's seed, so the same seed
gives the same neighbours.
"""

from __future__ import annotations

import random
import re
import string
import unicodedata
from typing import Any

# a common factor past the small primes a trial-division shortcut stops at
# the kinds a category peer may come from beyond the string itself: brackets of each side
_CATEGORY_PEERS = {"Ps": "([{", "Pe": ")]}"}
_LARGER_PRIMES = (23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)


def nonnegative(examples: list[tuple[Any, ...]]) -> tuple[bool, ...]:
    """For each argument position: whether every integer the examples hold there, at any
    depth of a list or tuple, is 0 or above (an argument with no integer counts as one).
    Drawn values stay at 0 or above where this is true; a list whose examples hold a
    negative number gets negative values too (a sentinel below every word is one)."""

    def ok(v: Any) -> bool:
        if type(v) is int:
            return v >= 0
        return all(ok(x) for x in v) if isinstance(v, list | tuple) else True

    width = len(examples[0]) if examples else 0
    return tuple(all(ok(e[i]) for e in examples if len(e) == width) for i in range(width))


def statement(prompt: str) -> str:
    """The part of a prompt that states what the function should do: a repair prompt's
    "What it should do:" sentence (not its buggy code or failure messages), else all of it."""
    m = re.search(r"What it should do:(.*?)(?:These tests fail:|\n\n|$)", prompt, re.DOTALL)
    return m.group(1) if m else prompt


def said_nonnegative(prompt: str, names: list[str]) -> tuple[bool, ...]:
    """For each argument name: whether the prompt says it is not negative ("a non-negative
    integer n", "the positive integers a and b", "n >= 0", "0 <= n", "n is at least",
    "the n-th"). A sign the
    prompt leaves open is any sign: "the sum of all positive multiples of 3 below n" is
    asked of n = -5 too (blind set 5 paid a closed form that is wrong for n <= -3)."""
    out = []
    for name in names:
        n = re.escape(name)
        patterns = (
            rf"(?:non-?negative|positive|natural|whole)\s+(?:integers?|numbers?|ints?|counts?)\s+"
            rf"(?:`?\w+`?\s*(?:,|and)\s*)*`?{n}\b",
            rf"\b{n}-?th\b",  # an ordinal: the n-th triangular number
            rf"`?\b{n}`?\s*(?:>=|≥|>)\s*0\b",
            rf"\b0\s*(?:<=|≤|<)\s*`?{n}\b",
            rf"`?\b{n}`?\s+is\s+(?:a\s+|an\s+)?(?:non-?negative|positive|natural|at least)",
        )
        out.append(any(re.search(p, prompt, re.IGNORECASE) for p in patterns))
    return tuple(out)


def neighbour(args: tuple[Any, ...], rng: random.Random, nonneg: tuple[bool, ...] = ()) -> tuple[Any, ...]:
    """`args` with one edit (two, a third of the time). `nonneg[i]` keeps argument i's
    integers at 0 or above (every example of it is)."""
    out = tuple(args)
    for _ in range(2 if rng.random() < 1 / 3 else 1):
        ints = [i for i, a in enumerate(out) if type(a) is int]
        if len(ints) >= 2 and rng.random() < 0.25:  # a common factor: gcd, lcm, divisibility
            k = rng.randint(2, 19) if rng.random() < 2 / 3 else rng.choice(_LARGER_PRIMES)
            out = tuple(a * k if type(a) is int else a for a in out)
            continue
        if not out:
            break
        i = rng.randrange(len(out))
        keep = nonneg[i] if i < len(nonneg) else False
        out = (*out[:i], _edit(out[i], rng, keep), *out[i + 1 :])
    return out


def reordered(args: tuple[Any, ...], rng: random.Random, nonneg: tuple[bool, ...] = ()) -> tuple[Any, ...]:
    """`args` with one sequence argument (a string, list or tuple of two or more elements)
    shuffled: the same elements in another order, where an answer that depends on the
    order shows it (nesting, sortedness, position). An example with no such argument gets
    an edit instead (`neighbour`)."""
    seqs = [i for i, a in enumerate(args) if isinstance(a, str | list | tuple) and len(a) >= 2]
    if not seqs:
        return neighbour(args, rng, nonneg)
    i = rng.choice(seqs)
    items = list(args[i])
    rng.shuffle(items)
    value: Any = "".join(items) if isinstance(args[i], str) else type(args[i])(items)
    return (*args[:i], value, *args[i + 1 :])


def _edit(value: Any, rng: random.Random, nonneg: bool) -> Any:
    if type(value) is bool:
        return not value
    if type(value) is int:
        return _edit_int(value, rng, nonneg)
    if isinstance(value, str):
        return _edit_str(value, rng)
    if isinstance(value, list):
        return _edit_list(value, rng, nonneg)
    if isinstance(value, tuple) and value:
        return neighbour(value, rng, (nonneg,) * len(value))
    return value


def _edit_int(x: int, rng: random.Random, nonneg: bool) -> int:
    y = rng.choice([x + 1, x - 1, x + rng.randint(-9, 9), 2 * x, x // 2, 2 * x + 1, -x])
    return abs(y) if nonneg else y


def _same_class(c: str, rng: random.Random, text: str) -> str:
    """Another character of c's kind: a letter of its case, a digit, or else one of the
    string's own characters of c's Unicode category (an opening bracket for an opening
    bracket: the nesting depth stays, the pairing changes)."""
    if c in string.ascii_lowercase:
        return rng.choice(string.ascii_lowercase)
    if c in string.ascii_uppercase:
        return rng.choice(string.ascii_uppercase)
    if c in string.digits:
        return rng.choice(string.digits)
    kind = unicodedata.category(c)
    same = sorted({x for x in text if unicodedata.category(x) == kind} | set(_CATEGORY_PEERS.get(kind, "")))
    return rng.choice(same)


def _edit_str(s: str, rng: random.Random) -> str:
    if not s:
        return rng.choice(string.ascii_lowercase)
    i, j = rng.randrange(len(s)), rng.randrange(len(s))
    how = rng.randrange(8)
    if how == 7:  # the same characters in another order
        return "".join(rng.sample(s, len(s)))
    if how == 0 and len(s) > 1:  # two characters swapped
        a = list(s)
        a[i], a[j] = a[j], a[i]
        return "".join(a)
    if how == 1:  # one character replaced by another of its kind
        return s[:i] + _same_class(s[i], rng, s) + s[i + 1 :]
    if how == 2:  # one removed
        return s[:i] + s[i + 1 :]
    if how == 3:  # one repeated
        return s[:i] + s[i] + s[i:]
    if how == 4:  # a character of the string inserted elsewhere
        return s[:i] + s[j] + s[i:]
    if how == 5:
        return s[::-1]
    return s + s[i:]  # a tail repeated


def _edit_list(xs: list[Any], rng: random.Random, nonneg: bool) -> list[Any]:
    if not xs:  # what an element would be is unknown here: a fresh draw's business
        return []
    a = list(xs)
    i, j = rng.randrange(len(a)), rng.randrange(len(a))
    if all(isinstance(x, list) for x in a) and a[i] and rng.random() < 0.2:  # a list of lists: one level deeper
        k = rng.randrange(len(a[i]))
        a[i] = [[x] if n == k else x for n, x in enumerate(a[i])]
        return a
    how = rng.randrange(8)
    if how == 7:  # the same elements in another order
        rng.shuffle(a)
    elif how == 0:
        a[i], a[j] = a[j], a[i]
    elif how == 1:
        a[i] = _edit(a[i], rng, nonneg)
    elif how == 2:
        del a[i]
    elif how == 3:
        a.insert(i, _edit(a[j], rng, nonneg))
    elif how == 4:
        a.reverse()
    elif how == 5:
        try:
            a.sort()
        except TypeError:
            a.reverse()
    else:
        a.insert(i, a[j])  # a repeat
    return a
