"""The arguments' state after a call, as the reference leaves it (issue 33).

An assert on a call's value cannot see what the call did to its arguments: a function
asked for a new list that squares the caller's list in place and returns it passes every
`assert f([1, 2]) == [1, 4]`, yet the caller's list is gone. The reference says what a
call may do to a list, dict or set it is given: `state_test` runs it on one drawn input
and writes a test that the arguments, after the call, are what the reference left, only
where the statement says which: a new list, a copy, without modifying (the arguments must
come back as they were: a reference that changed them gives no test), or in place (they
must change as the reference changes them). Where it says neither, what a call does to
its arguments is the reply's own choice: sorting the caller's list is then as right as
sorting a copy, and there is no test.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Values = Callable[[list[str]], list[tuple[bool, Any]]]
MUTABLE = (list, dict, set)
KEEPS = re.compile(
    r"\bnew (?:list|dict|dictionary|set|string|tuple)\b|\bcopy\b|\bwithout (?:modifying|changing|mutating)\b|"
    r"\b(?:does|do|must|should) not (?:modify|change|mutate)\b|\bunchanged\b|\bunmodified\b",
    re.IGNORECASE,
)
CHANGES = re.compile(r"\bin[- ]place\b|\b(?:modifies|mutates|sorts) (?:it|the list|the given|lst|xs)\b", re.IGNORECASE)


def stance(text: str) -> str | None:
    """What a statement asks of a call's arguments: 'keep' (a new list, a copy, without
    modifying), 'change' (in place), or None (it does not say; both, or neither)."""
    keeps, changes = bool(KEEPS.search(text)), bool(CHANGES.search(text))
    return "keep" if keeps and not changes else "change" if changes and not keeps else None


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


def state_test(
    entry: str, inputs: list[tuple[Any, ...]], values: Values, exact: Callable[[Any], bool], said: str | None
) -> str | None:
    """`assert STATE_CALL == STATE` on the input of `inputs` whose mutable arguments hold
    the most elements (ties: the first), with the state the reference leaves (`values`:
    the reference's value of each expression), where the statement's stance (`said`, see
    `stance`) agrees with what the reference does; None when it says nothing, no input has
    a mutable argument with an element in it, the reference's state is not one a test can
    compare (`exact`), or the reference does not do what the statement says."""
    best = max(inputs, key=lambda a: sum(_size(x) for x in a), default=None)
    if said is None or best is None or sum(_size(x) for x in best) < 1:
        return None
    call = state_call(entry, best)
    [(ok, after)] = values([call])
    if not ok or not exact(after) or (after == best) != (said == "keep"):
        return None
    return f"assert {call} == {after!r}"


def is_state_test(test: Any) -> bool:
    """Whether `test` is a state test (its expected value is the arguments, not an answer)."""
    return isinstance(test, str) and test.startswith("assert (lambda _a: (")
