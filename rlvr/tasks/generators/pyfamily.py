"""The task-family record and the shared test inputs of the bundled Python tasks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Family:
    name: str  # function name; may use {k}
    args: str  # parameter list, e.g. "x" or "s, c"
    difficulty: int
    doc: str  # what the function does; may use {k}
    ref: str  # the body of the reference solution; may use {k}
    inputs: tuple[tuple[Any, ...], ...]  # the visible tests: shown in prompts and feedback
    held_out: tuple[tuple[Any, ...], ...]  # more inputs, never shown (tests["held_out"])
    params: tuple[Any, ...] = (None,)
    arg_ranges: tuple[tuple[int, int] | None, ...] = ()
    """Per argument, the integers the function must handle where that is narrower than
    "any" (fibonacci's n: a recursive solution is honest up to 30): hidden tests are
    drawn within it (`metadata.arg_ranges`, rlvr.rewards.hidden_tests)."""
    integer_exact: bool | None = None
    """Whether the reference is exact on integers of any size, where reading its code
    (rlvr.rewards.exactness.integer_exact) cannot tell: a float root corrected by
    integer steps is (`metadata.integer_exact`)."""


def _args(inputs: Iterable[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple(i if isinstance(i, tuple) else (i,) for i in inputs)


def fam(
    name: str,
    args: str,
    d: int,
    doc: str,
    ref: str,
    inputs: Iterable[Any],
    params: Iterable[Any] = (None,),
    *,
    held_out: Iterable[Any],
    arg_ranges: tuple[tuple[int, int] | None, ...] = (),
    integer_exact: bool | None = None,
) -> Family:
    """A family; single inputs (visible or held out) may be given bare instead of as 1-tuples."""
    return Family(name, args, d, doc, ref, _args(inputs), _args(held_out), tuple(params), arg_ranges, integer_exact)


INTS = (0, 1, 2, 5, -3, 10, 17, 100)
WORDS = ("hello", "", "abc", "racecar", "Python", "a b c", "banana", "xyz123")
LISTS: tuple[list[int], ...] = ([1, 2, 3], [], [5], [-1, 4, 0, 9], [2, 2, 7, 3], [10, -10, 3, 8, 1])
NONEMPTY: tuple[list[int], ...] = ([1, 2, 3], [5], [-1, 4, 0, 9], [2, 2, 7, 3], [10, -10, 3, 8, 1], [-5, -2, -9])

# Held-out counterparts: none of them is among the visible inputs above, and each fits
# every family that uses the visible constant (any integer; any string; any list of
# integers, here all non-empty, with repeats, zero and negatives; non-empty lists, one
# of even length and one with a single negative element).
HELD_INTS = (-8, 3, 250)
HELD_WORDS = ("level", "Hello World", "q")
HELD_LISTS: tuple[list[int], ...] = ([7, -2, 7, 4, 0], [3, 3], [-6, 11, 2, 9, 5, 1, 8])
HELD_NONEMPTY: tuple[list[int], ...] = ([7, -2, 7, 4, 0], [-4], [6, -1, 8, 3])
