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
    inputs: tuple[tuple[Any, ...], ...]
    params: tuple[Any, ...] = (None,)


def fam(
    name: str, args: str, d: int, doc: str, ref: str, inputs: Iterable[Any], params: Iterable[Any] = (None,)
) -> Family:
    """A family; single inputs may be given bare instead of as 1-tuples."""
    ins = tuple(i if isinstance(i, tuple) else (i,) for i in inputs)
    return Family(name, args, d, doc, ref, ins, tuple(params))


INTS = (0, 1, 2, 5, -3, 10, 17, 100)
WORDS = ("hello", "", "abc", "racecar", "Python", "a b c", "banana", "xyz123")
LISTS: tuple[list[int], ...] = ([1, 2, 3], [], [5], [-1, 4, 0, 9], [2, 2, 7, 3], [10, -10, 3, 8, 1])
NONEMPTY: tuple[list[int], ...] = ([1, 2, 3], [5], [-1, 4, 0, 9], [2, 2, 7, 3], [10, -10, 3, 8, 1], [-5, -2, -9])
