"""A guarded term: a learned or judged score added to a group's verifiable rewards so that
it can order replies the verifiable reward ties, and can never reorder what it ranks.

    u_i   = the score scaled to [0, 1] among the group's eligible replies (min to max;
            0 where there is no score, the reply is not eligible, or the eligible scores
            are all equal)
    gap   = the smallest difference between two distinct verifiable totals in the group
            (totals within TIE of each other count as equal); infinite when all are equal
    cap   = min(|weight|, SHARE * gap)
    total = verifiable total + sign(weight) * cap * u_i

Within a group, then, a reply whose verifiable total is higher by more than TIE always
has the higher total: the bonuses differ by at most cap < gap. Among replies the
verifiable reward ties (all correct, or all wrong), the score decides, with weight as its
full scale. The bonus is added after `reward.clip`, so a total may exceed the clip's high
end by at most |weight|.

Eligibility is the scorer's: the term's gate (`all_tests_pass`: replies passing every
test; `tie_break`: every reply, but only in a group whose verifiable totals are all
equal), its domains, and never a hack-flagged reply.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

TIE = 1e-9  # verifiable totals closer than this are the same reward (float sums: 0.7 - 0.4)
SHARE = 0.5  # the bonus's reach as a share of the smallest verifiable gap


def smallest_gap(totals: Sequence[float]) -> float:
    """The smallest difference between distinct totals (within TIE: the same), or inf."""
    distinct: list[float] = []
    for v in sorted(totals):
        if not distinct or v - distinct[-1] > TIE:
            distinct.append(v)
    gaps = [b - a for a, b in itertools.pairwise(distinct)]
    return min(gaps) if gaps else math.inf


def all_tied(totals: Sequence[float]) -> bool:
    return smallest_gap(totals) == math.inf


def scaled(scores: Sequence[float | None], eligible: Sequence[bool]) -> list[float]:
    """Each eligible score's place between the group's eligible minimum (0) and maximum (1)."""
    seen = [s for s, ok in zip(scores, eligible, strict=True) if ok and s is not None and math.isfinite(s)]
    if len(seen) < 2 or max(seen) - min(seen) <= 0:
        return [0.0] * len(scores)
    lo, hi = min(seen), max(seen)
    return [
        (s - lo) / (hi - lo) if ok and s is not None and math.isfinite(s) else 0.0
        for s, ok in zip(scores, eligible, strict=True)
    ]


def guarded_bonus(
    totals: Sequence[float], scores: Sequence[float | None], eligible: Sequence[bool], weight: float
) -> tuple[list[float], float]:
    """(each reply's bonus, the cap) for one group (see the module docstring)."""
    cap = min(abs(weight), SHARE * smallest_gap(totals))
    sign = 1.0 if weight >= 0 else -1.0
    return [sign * cap * u for u in scaled(scores, eligible)], cap
