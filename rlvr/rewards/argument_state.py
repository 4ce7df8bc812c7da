"""The arguments' state after a call, as the reference leaves it (issue 33).

An assert on a call's value cannot see what the call did to its arguments: a function
asked for a new list that squares the caller's list in place and returns it passes every
`assert f([1, 2]) == [1, 4]`, yet the caller's list is gone. The reference says what a
call may do to a list, dict or set it is given: `state_test` runs it on one drawn input
and writes a test that the arguments, after the call, are what the reference left (the
same as before for a reference that does not touch them; changed as it changes them for
one that works in place). No prompt wording is read: the reference is the spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Values = Callable[[list[str]], list[tuple[bool, Any]]]
MUTABLE = (list, dict, set, bytearray)


def _size(value: Any) -> int:
    """How many elements the mutable containers in `value` hold (0: nothing a call could
    change in place)."""
    if isinstance(value, MUTABLE):
        return len(value) + sum(_size(v) for v in (value.values() if isinstance(value, dict) else value))
    if isinstance(value, tuple):
        return sum(_size(v) for v in value)
    return 0


def state_call(entry: str, args: tuple[Any, ...]) -> str:
    """An expression whose value is the argument tuple after `entry(*args)` has run."""
    return f"(lambda _a: ({entry}(*_a), _a)[1])({args!r})"


def state_test(entry: str, inputs: list[tuple[Any, ...]], values: Values, exact: Callable[[Any], bool]) -> str | None:
    """`assert STATE_CALL == STATE` on the input of `inputs` whose mutable arguments hold
    the most elements (ties: the first), with the state the reference leaves (`values`:
    the reference's value of each expression); None when no input has a mutable argument
    with an element in it, or the reference's state is not
    one a test can compare (`exact`)."""
    best = max(inputs, key=lambda a: sum(_size(x) for x in a), default=None)
    if best is None or sum(_size(x) for x in best) < 1:
        return None
    call = state_call(entry, best)
    [(ok, after)] = values([call])
    if not ok or not exact(after):
        return None
    return f"assert {call} == {after!r}"
