"""Pairs of strings that are not anagrams and that a multiset fingerprint calls equal
(hidden tests' shapes, `rlvr.tasks.shapes`): equal sums of the first powers of their
character codes. Pure functions of their arguments and the generator the caller seeds."""

from __future__ import annotations

import random


def power_twins(chars: list[str], degree: int, rng: random.Random) -> tuple[str, str]:
    """Two strings of 2**degree characters each, not anagrams, whose sums of the k-th powers of
    their character codes agree for every k up to `degree` (Prouhet's solution of the
    Tarry-Escott problem: 2**(degree + 1) consecutive codes split by the parity of their
    index's binary digits; shifting every code by one amount keeps the sums equal). A
    multiset compared by its first few moments calls them equal. Degree 3 takes a..p (A..P
    where the examples' letters are all capitals); higher degrees take consecutive CJK
    ideographs."""
    n = 2 ** (degree + 1)
    if degree <= 3 and any(c.isascii() and c.isupper() for c in chars) and not any(c.islower() for c in chars):
        base = ord("A")
    else:
        base = ord("a") if degree <= 3 else 0x4E00
    halves: tuple[list[str], list[str]] = ([], [])
    for i in range(n):
        halves[i.bit_count() % 2].append(chr(base + i))
    for half in halves:
        rng.shuffle(half)
    return "".join(halves[0]), "".join(halves[1])


POWER_TWIN_DEGREES = (3, 5, 7)


def same_powers(u: str, w: str, degree: int) -> bool:
    """The sums of the k-th powers of the two strings' codes agree for every k up to `degree`."""
    return all(sum(ord(c) ** k for c in u) == sum(ord(c) ** k for c in w) for k in range(1, degree + 1))


THUE_MORSE_DEGREES = (7, 11)  # 128 and 2,048 letters: past a 32-bit and a 64-bit polynomial hash


def thue_morse(a: str, b: str, degree: int) -> str:
    """The Thue-Morse word of 2**degree letters over `a` and `b` (letter k is `b` where k has
    an odd number of one bits). For an odd degree its reversal is its complement, so it is
    no palindrome, and a polynomial hash modulo 2**64 (any odd base) gives the word and its
    reversal the same value from 2,048 letters on, modulo 2**32 from 128 (the anti-hash
    strings of competitive programming): a palindrome or equality test by such a hash calls
    them equal."""
    return "".join(b if k.bit_count() % 2 else a for k in range(2**degree))


def is_thue_morse(s: str) -> bool:
    """`s` is a Thue-Morse word of 64 letters or more over two letters."""
    n = len(s)
    if n < 64 or n & (n - 1) or len(set(s)) != 2:
        return False
    a, b = s[0], next(c for c in s if c != s[0])
    return s == thue_morse(a, b, n.bit_length() - 1)
