"""hypothesis strategies for a function's arguments, drawn like its examples, and the
process-wide setting that keeps those draws reproducible (rlvr.rewards.hidden_tests draws
with them)."""

from __future__ import annotations

import functools
from typing import Any

MAGNITUDE_DIGITS = 12  # integers are also drawn with up to this many digits (more where the examples have more)
WIDE_DIGITS = 40  # and, where the reference is exact on integers, up to this many
WIDEN = 2  # how far past the examples' range and lengths half of the drawn values go


class NotDrawable(ValueError):
    """The task's tests do not say enough to draw inputs (with the reason)."""


def strategy_for(values: list[Any], need: int = 20, exact: bool = False) -> Any:
    """A hypothesis strategy drawing values like `values` (one argument's examples), or
    NotDrawable naming the kind it cannot draw. Integers are drawn half the time within
    the examples' range (widened as far as `need` distinct values require) and half the
    time from WIDEN times that span beyond it (never below the smallest example when none
    is negative): a rule that holds only as far as the examples go (trial division by the
    primes below 11, a search capped at the examples' depth) meets inputs past it. Lists
    and strings run to WIDEN times the longest example. An input on which the reference is
    slow is dropped (hidden_tests.REFERENCE_SECONDS), so a solution as fast as the reference passes.
    `exact` (the reference has no float in it, rlvr.rewards.exactness): a third of the
    integers drawn orders past the examples have up to WIDE_DIGITS digits, past any machine
    word, where a Python function's integers still are its promise."""
    from hypothesis import strategies as st

    kinds = {type(v) for v in values}
    if type(None) in kinds:
        rest = [v for v in values if v is not None]
        return st.none() | strategy_for(rest, need, exact) if rest else st.none()
    if kinds == {bool}:
        return st.booleans()
    if kinds <= {int}:
        lo, hi = min(values), max(values)
        short = max(0, need - (hi - lo + 1))
        if lo < 0:
            lo -= short // 2
        hi += short - (short // 2 if min(values) < 0 else 0)
        span = max(hi - lo, 10) * WIDEN
        # and orders of magnitude past the examples: a d-digit number, d up to twice the
        # largest example's digits and at least MAGNITUDE_DIGITS (a fixed-size table, a
        # bit width, a capped loop or a float shortcut is exact only up to some size)
        digits = max(MAGNITUDE_DIGITS, 2 * len(str(max(abs(lo), abs(hi)))))
        sign = -1 if min(values) < 0 else 1
        size, top = st.integers(1, digits), digits
        if exact and digits < WIDE_DIGITS:
            size, top = st.one_of(size, size, st.integers(digits + 1, WIDE_DIGITS)), WIDE_DIGITS
        big = st.tuples(size, st.integers(0, 10**top), st.booleans(), st.integers(0, 4)).map(
            lambda t: (sign if t[2] else 1) * _boundary(t[0], t[1], t[3])
        )
        return st.integers(lo, hi) | st.integers(lo - span if lo < 0 else lo, hi + span) | big
    if kinds <= {int, float}:
        flo, fhi = float(min(values)), float(max(values))
        pad = max(1.0, (fhi - flo) / 2)
        return st.floats(flo if flo >= 0 else flo - pad, fhi + pad, allow_nan=False, allow_infinity=False)
    if kinds == {str}:
        chars = sorted({c for v in values for c in v}) or ["a"]
        lens = [len(v) for v in values]
        return st.text(alphabet=chars, min_size=min(lens), max_size=WIDEN * max(lens) + 2)
    if kinds == {list}:
        items = [x for v in values for x in v]
        lens = [len(v) for v in values]
        inner = strategy_for(items, need, exact) if items else st.integers(-10, 10)
        return st.lists(inner, min_size=min(lens), max_size=WIDEN * max(lens) + 2)
    if kinds == {tuple} and len({len(v) for v in values}) == 1:
        width = len(values[0])
        return st.tuples(*(strategy_for([v[i] for v in values], need, exact) for i in range(width)))
    raise NotDrawable(f"arguments of kind {', '.join(sorted(k.__name__ for k in kinds))}")


def _boundary(digits: int, r: int, kind: int) -> int:
    """A `digits`-digit number: random (kind 0 and 1), or a boundary value of that size: a
    power of two less one, one below a power of ten, the square of a number of half the
    digits (a property true of few large numbers asked of a large one)."""
    if kind == 2:
        return 2 ** max(1, int(digits * 3.3219)) - 1
    if kind == 3:
        return 10**digits - 1
    if kind == 4:
        half = max(1, (digits + 1) // 2)
        return (10 ** (half - 1) + r % (9 * 10 ** (half - 1))) ** 2
    return 10 ** (digits - 1) + r % (9 * 10 ** (digits - 1))


@functools.cache
def without_local_constants() -> None:
    """hypothesis mixes into its draws literals it reads from the source of every "local"
    module loaded in the process (rlvr's own, an editable install, a user's plugins), and
    caches them under `.hypothesis/constants` in the current directory. The drawn tests
    would then depend on which modules a process happens to have loaded, and a run would
    leave files where it was started: the pool of local constants is kept empty
    (hypothesis's own global constants still apply). This holds for the whole process,
    once the first draw is made."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    empty = Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
