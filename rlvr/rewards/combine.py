"""Combining reward components into one scalar, under rules the user controls.

`Term(name, weight, gate)`: the component's value times its weight, counted only when its
gate holds (gate "all_tests_pass": every test passed; None: always). The weighted sum is
clipped to `clip`. With `normalize="group"` (GDPO), each component is first standardised
within its group of samples of the same prompt, so that a component with a large scale
cannot drown the others. Every component is recorded in the breakdown, gated or not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rlvr.rewards.base import RewardComponent
from rlvr.types import RewardBreakdown

GATES = ("all_tests_pass", "tie_break")  # tie_break: group terms only (rlvr.rewards.guard)


@dataclass(frozen=True)
class Term:
    name: str
    weight: float = 1.0
    gate: str | None = None

    def __post_init__(self) -> None:
        if self.gate is not None and self.gate not in GATES:
            raise ValueError(f"term '{self.name}': unknown gate '{self.gate}'; valid: {', '.join(GATES)}")


def combine(
    components: Mapping[str, RewardComponent],
    terms: Sequence[Term],
    *,
    all_tests_pass: bool,
    clip: tuple[float, float] | None = None,
) -> RewardBreakdown:
    missing = [t.name for t in terms if t.name not in components]
    if missing:
        raise KeyError(f"no component named {missing}; computed: {sorted(components)}")
    total = 0.0
    gated: list[str] = []
    for t in terms:
        if t.gate == "tie_break":
            raise ValueError(f"term '{t.name}': the tie_break gate needs a group term (one scored over the group)")
        if t.gate == "all_tests_pass" and not all_tests_pass:
            gated.append(t.name)
            continue
        total += t.weight * components[t.name].value
    if clip is not None:
        total = min(max(total, clip[0]), clip[1])
    return RewardBreakdown(
        total=total,
        components={k: c.value for k, c in components.items()},
        details={"gated_out": gated, **{k: c.details for k, c in components.items() if c.details}},
    )


def group_normalize(values: Sequence[float], eps: float = 1e-6) -> list[float]:
    """Standardise one component's values within a group (GDPO); all-equal -> zeros."""
    n = len(values)
    if n < 2:
        return [0.0] * n
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return [(v - mean) / (std + eps) for v in values]


def combine_group(
    group: Sequence[Mapping[str, RewardComponent]],
    terms: Sequence[Term],
    *,
    all_tests_pass: Sequence[bool],
    clip: tuple[float, float] | None = None,
    normalize: str = "none",
) -> list[RewardBreakdown]:
    """Combine every sample of one prompt's group; with normalize='group' (GDPO) each
    component is standardised within the group before weighting."""
    if normalize not in ("none", "group"):
        raise ValueError(f"normalize must be 'none' or 'group', got '{normalize}'")
    if normalize == "none":
        return [combine(c, terms, all_tests_pass=p, clip=clip) for c, p in zip(group, all_tests_pass, strict=True)]
    names = {t.name for t in terms}
    normed = {n: group_normalize([c[n].value for c in group]) for n in names}
    out = []
    for i, (comps, passed) in enumerate(zip(group, all_tests_pass, strict=True)):
        scaled = {n: RewardComponent(normed[n][i]) for n in names}
        b = combine(scaled, terms, all_tests_pass=passed, clip=clip)
        b.components = {k: c.value for k, c in comps.items()}  # log the raw values
        b.details["normalized"] = {n: normed[n][i] for n in names}
        out.append(b)
    return out
