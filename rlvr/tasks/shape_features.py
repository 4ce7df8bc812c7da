"""Which shapes an argument tuple has (`shapes`), whatever drew it: the kinds
`rlvr.tasks.shapes` draws, read back as hidden-test selection features (the selection
keeps one input of each shape it can: rlvr.rewards.selection). Pure functions.
"""

from __future__ import annotations

import math
from typing import Any

from rlvr.tasks import numbers
from rlvr.tasks.numbers import FLOAT_EXACT as _BIG
from rlvr.tasks.shapes import _CLOSE, _OPEN, _WIDE, _alphabet, _char_class, _foreign, _power_of_ten, _prime_square
from rlvr.tasks.twins import is_thue_morse, same_powers


def _depth(v: Any) -> int:
    return 1 + max((_depth(x) for x in v), default=0) if isinstance(v, list | tuple) else 0


def _longest_run(s: str) -> tuple[int, str]:
    """The longest run's length and its character."""
    best, char, run = 0, "", 0
    for k, c in enumerate(s):
        run = run + 1 if k and s[k - 1] == c else 1
        if run > best:
            best, char = run, c
    return best, char


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
        scale = min(len(str(a)) // 4, 5)  # kept at every magnitude (a shortcut can be exact up
        # to one) to 20 digits; machine_edge names the widths past it
        for kind, test in (
            ("square", lambda b: math.isqrt(b) ** 2 == b),
            ("prime_square", _prime_square),
            ("power_of_two", lambda b: b & (b - 1) == 0),
            ("power_of_ten", _power_of_ten),
        ):
            if a >= 15 and test(a):  # a prime square by its root's digits, a round bound's apart
                out.add(("shape", i, kind, _prime_square_scale(a) if kind == "prime_square" else scale))
            elif a >= 15 and kind != "prime_square" and (test(a - 1) or test(a + 1)):
                out.add(("shape", i, kind + "_neighbour", scale))  # one off it
        if numbers.is_pseudoprime(a):
            out.add(("shape", i, "pseudoprime", numbers.bases_fooled(a) // 2))  # of the first bases, in pairs
        if numbers.no_small_factor(a):
            out.add(("shape", i, "no_small_factor"))
        if abs(a) > _BIG or any(abs(abs(a) - 2**k) <= 1 for k in (31, 32)):
            out.add(("shape", i, "machine_edge", (abs(a).bit_length() + 1) // 32, a < 0))
    for (i, a), (j, b) in ((p, q) for p in ints for q in ints if p[0] < q[0]):
        g = math.gcd(a, b)
        if g >= 2 and min(abs(a), abs(b)) // g > 50:
            out.add(("shape", (i, j), "common_factor"))
        if numbers.consecutive_fibonacci(a, b):
            out.add(("shape", (i, j), "fibonacci"))
        if min(abs(a), abs(b)) < 100 and max(abs(a), abs(b)).bit_length() > 900:
            out.add(("shape", (i, j), "lopsided"))
    strs = [(i, a) for i, a in enumerate(args) if isinstance(a, str)]
    for i, s in strs:
        seen = _alphabet([e[i] for e in examples if i < len(e)])
        lacking = {k for k, _ in _foreign(seen)}  # the classes the examples never show
        wide = {c for c in s if _char_class(c) in _WIDE and _char_class(c) in lacking}
        run, char = _longest_run(s)
        if run >= 10:
            out.add(("shape", i, "run"))
            if char in wide:
                out.add(("shape", i, "wide_run"))
        if run >= 100:
            out.add(("shape", i, "long_run"))
        odd = [k for k in range(len(s) // 2) if s[k] != s[-1 - k]]
        if len(s) >= 8 and len(odd) == 1 and s[:3] == s[::-1][:3]:
            case_only = s.lower() == s[::-1].lower()
            out.add(("shape", i, "near_palindrome_case" if case_only else "near_palindrome"))
        if len(s) >= 100 and len(odd) == 1:
            out.add(("shape", i, "long_near_palindrome"))
        if len(odd) == 1 and s[odd[0]] in wide and s[-1 - odd[0]] in wide:
            out.add(("shape", i, "wide_palindrome"))
        if s[:1] in wide:
            out.add(("shape", i, "wide_initial"))
        elif s[:1] and _char_class(s[0]) == "cased_symbol" and "cased_symbol" in lacking:
            out.add(("shape", i, "wide_initial", "cased_symbol"))
        for kind in lacking & {_char_class(c) for c in s}:
            out.add(("shape", i, "foreign", kind))
        if _crossed(s):
            out.add(("shape", i, "crossed_brackets"))
        if is_thue_morse(s):
            out.add(("shape", i, "thue_morse", len(s).bit_length() - 1))
    for (i, u), (j, w) in ((p, q) for p in strs for q in strs if p[0] < q[0]):
        if u != w and sorted(u) == sorted(w):
            out.add(("shape", (i, j), "anagram"))
        elif len(u) == len(w) and set(u) == set(w) and sum(map(ord, u)) == sum(map(ord, w)) and sorted(u) != sorted(w):
            out.add(("shape", (i, j), "checksum_twin"))
        elif len(u) == len(w) >= 4 and sorted(u) != sorted(w) and same_powers(u, w, 3):
            out.add(("shape", (i, j), "power_twins", min(len(u).bit_length() - 1, 7)))
    deepest = max((_depth(e[i]) for e in examples for i in range(len(e)) if isinstance(e[i], list)), default=0)
    for i, a in enumerate(args):
        if isinstance(a, list):
            if len(a) <= 5 and all(type(x) is int for x in a) and len(set(a)) == len(a):
                out.add(("shape", i, "distinct", len(a)))
            if len(a) >= 3 and all(type(x) in (int, str) for x in a) and len(set(a)) < len(a):
                out.add(("shape", i, "repeats"))
            if deepest >= 2 and _depth(a) > deepest:
                out.add(("shape", i, "deeper"))
            if any(type(x) is int and abs(x) >= 2**31 - 1 for x in a):
                out.add(("shape", i, "machine_edges"))
            if a and all(type(x) is int for x in a):
                if all(x >= 2**31 - 1 for x in a) or all(x <= -(2**31) for x in a):
                    out.add(("shape", i, "past_edge", a[0] > 0, min(max(map(abs, a)).bit_length(), 65) // 32))
                if len(a) >= 2 and numbers.congruent_pair(a):
                    out.add(("shape", i, "congruent"))
    return out


def _prime_square_scale(a: int) -> tuple[int, bool]:
    """A prime square's root's digits, and whether the root is the first prime past a round
    bound (`numbers.round_prime_squares`): each bound a shape of its own, kept apart from
    a random root of its width."""
    root = math.isqrt(a)
    return len(str(root)), numbers.round_prime(root)
