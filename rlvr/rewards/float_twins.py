"""Half-way twins of the examples: a number the prompt never calls an integer is drawn
between integers too (issue 33).

Drawing reads an argument's kind from the examples, so a task whose examples are all
whole numbers is drawn whole numbers only, and a rewrite that holds for integers alone
(`x >= 4` for "x is greater than 3", `x >= 2` for "greater than 1") passes every drawn
test. Where the prompt does not say the numbers are integers (nor digits, counts,
indices, positions: words that only fit integers), each example gets two twins, every
whole number in it (an argument, or an element of a list or tuple argument) moved half
a step down and half a step up: the examples are where the task's boundaries are, and the
half-way points beside them are the inputs such a rewrite answers wrongly. A twin is a
test only where the reference answers it (a reference that needs an integer raises, and
the twin is dropped), with its value compared as any drawn test's is; a sign the prompt
states is kept (no twin below 0 where the argument is non-negative).
"""

from __future__ import annotations

import re
from typing import Any

from rlvr.tasks.numbers import FLOAT_EXACT  # past it a half step is lost in a float: no twin

INTEGER_WORDS = re.compile(
    r"\b(integers?|int|ints|whole|natural|digits?|counts?|index|indices|indexes|positions?|"
    r"n-?th|times|primes?|divisors?|factors?|multiples?|divisible|even|odd|bits?|binary|"
    r"hex|octal|factorial|fibonacci|gcd|lcm|modulo|remainder|round|rounded|rounding)\b",
    re.IGNORECASE,
)
HALF = 0.5


def says_integer(prompt: str) -> bool:
    """Whether the prompt uses a word that only fits whole numbers (it then keeps them)."""
    return bool(INTEGER_WORDS.search(prompt))


def _whole(v: Any) -> bool:
    return type(v) is int


def _all_whole(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(_whole(x) for x in value)


def _shift(value: Any, delta: float, nonneg: bool) -> Any:
    """`value` with each whole number in it (itself, or a list's or tuple's elements) moved
    by `delta`; None where nothing moved or a move would cross below 0 where `nonneg`."""
    if _whole(value):
        if abs(value) >= FLOAT_EXACT:
            return None
        moved = value + delta
        return None if nonneg and moved < 0 else moved
    if value and _all_whole(value) and all(abs(x) < FLOAT_EXACT for x in value):
        items = [x + delta for x in value]
        if nonneg and any(x < 0 for x in items):
            return None
        return type(value)(items)
    return None


def float_twins(
    prompt: str, examples: list[tuple[Any, ...]], nonneg: tuple[bool, ...], fixed: tuple[bool, ...] = ()
) -> list[tuple[Any, ...]]:
    """The twins of `examples` (in order, each once): for each example and each of -HALF,
    +HALF, the example with every whole number of every numeric argument moved by it; []
    where the prompt says its numbers are integers (`says_integer`), or no argument of any
    example is a whole number or a list of them. An argument that is a whole number in
    some examples and something else in others is left alone, and so is one with a
    declared range (`fixed[i]`: the integers its tests may draw) and a whole number past
    2**52 (a float cannot hold its half). `prompt`: the statement alone
    (`rlvr.tasks.neighbours.statement`), not a repair prompt's code or failures."""
    if says_integer(prompt) or not examples:
        return []
    width = len(examples[0])
    numeric = [
        all(_whole(e[i]) or _all_whole(e[i]) for e in examples) and not (i < len(fixed) and fixed[i])
        for i in range(width)
    ]
    out: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for example in examples:
        for delta in (-HALF, HALF):
            twin = list(example)
            moved = False
            for i in range(width):
                if numeric[i]:
                    shifted = _shift(example[i], delta, i < len(nonneg) and nonneg[i])
                    if shifted is not None:
                        twin[i], moved = shifted, True
            if moved and repr(tuple(twin)) not in seen:
                seen.add(repr(tuple(twin)))
                out.append(tuple(twin))
    return out
