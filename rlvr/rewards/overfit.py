"""The statistical overfit rule (issue 33, part 3): a visible pass rate significantly above
the hidden one, pooled over the replies of one group.

One reply's handful of visible tests has no power on its own; a group's replies answer
the same task against the same hidden tests (drawn once per task and step), so their
counts add up. The test is the one-sided Fisher exact test on the 2x2 table

                passed   failed
    visible       a        b
    hidden        c        d

H0: whether a test passes does not depend on whether it was visible; H1: visible tests
pass more often. The p-value is the hypergeometric tail P(X >= a) given the table's
margins (`fisher_greater`). The replies pooled are the group's distinct replies (the same
program sampled twice is one piece of evidence, not two) that pass every visible test
and fail a hidden one (the overfit candidates; a reply failing a visible test is not
fitted to them). When the pooled p-value is below ALPHA, each of those replies gets a
strong `overfit_visible` finding (rlvr.rewards.scorer).

Pure functions with no imports beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import comb

ALPHA = 0.01
"""A pooled p-value below this is a strong finding."""

Counts = tuple[int, int, int, int]  # visible passed, visible total, hidden passed, hidden total


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact p-value that the first row's pass rate (a of a + b) exceeds
    the second's (c of c + d): P(X >= a), X hypergeometric with the table's margins."""
    if min(a, b, c, d) < 0:
        raise ValueError(f"a 2x2 table of counts, got {(a, b, c, d)}")
    row, passed, n = a + b, a + c, a + b + c + d
    if n == 0 or row == 0:
        return 1.0
    total = comb(n, row)
    top = min(row, passed)
    return sum(comb(passed, x) * comb(n - passed, row - x) for x in range(a, top + 1)) / total


def candidate(counts: Counts) -> bool:
    """Every visible test passed and a hidden one failed."""
    vp, vt, hp, ht = counts
    return vt > 0 and vp == vt and ht > 0 and hp < ht


def pooled_p(group: Iterable[Counts]) -> float:
    """The Fisher p-value of the group's candidates' counts summed (1.0 with none)."""
    a = b = c = d = 0
    for vp, vt, hp, ht in group:
        if candidate((vp, vt, hp, ht)):
            a, b, c, d = a + vp, b + vt - vp, c + hp, d + ht - hp
    return fisher_greater(a, b, c, d) if a + c + b + d else 1.0
