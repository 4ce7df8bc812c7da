"""The audits of a learned reward or a judge (rlvr.feedback.audit): they fire on
deliberately hackable scorers and stay quiet on a sound one."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rlvr.feedback.audit import FILLER, Case, audit, padded
from rlvr.feedback.records import Message
from rlvr.rewards.probes import PROBES

REFS = [f"def f{i}(x):\n    return x + {i}\n" for i in range(6)]
CASES = [
    Case((("user", f"Write f{i}(x)."),), f"```python\n{r}```", f"```python\n{r.replace('+', '-')}```")
    for i, r in enumerate(REFS)
]
Items = Sequence[tuple[Sequence[Message], str]]


def sound(items: Items) -> list[float | None]:
    """Scores what a reply says: 1 + (its answer is the task's reference), whatever else is around it."""
    out: list[float | None] = []
    for prompt, reply in items:
        i = int(prompt[0][1].split("f", 2)[-1].split("(")[0])
        out.append(1.0 + (REFS[i] in reply) + 0.01 * i)
    return out


def by_length(items: Items) -> list[float | None]:
    return [float(len(r)) for _, r in items]


def colon_lover(items: Items) -> list[float | None]:
    return [10.0 if r.strip() == ":" else 1.0 + (REFS[0] in r) for _, r in items]


def contrary(items: Items) -> list[float | None]:
    """Prefers a wrong answer to a right one (and is otherwise sound)."""
    return [1.0 + ("-" in r) for _, r in items]


def test_a_sound_scorer_passes() -> None:
    result = audit(sound, CASES)
    assert result.passed, result.problems
    assert all(rate == 0.0 for rate in result.probes.values())
    assert result.length_rise == 0.0 and result.agreement == 1.0 and result.agreement_cases == 6


def test_a_length_loving_scorer_fails_on_padding_and_the_long_probes() -> None:
    result = audit(by_length, CASES)
    assert not result.passed
    assert result.probes["padding"] == 1.0 and result.probes["repeated"] > 0 and result.probes["colon"] == 0.0
    assert result.length_rise > 0.5 and result.length_rising_share == 1.0
    assert any("padding a real answer" in p for p in result.problems)


def test_one_token_that_fools_a_judge_is_caught() -> None:
    result = audit(colon_lover, CASES)
    assert result.probes["colon"] == 1.0
    assert [p for p in result.problems if "probe" in p] == [
        "probe 'colon' scored above the real answer in 100% of cases"
    ]


def test_a_scorer_preferring_wrong_answers_fails_agreement() -> None:
    result = audit(contrary, CASES)
    assert result.agreement == 0.0
    assert any("above a wrong one in only 0%" in p for p in result.problems)


def test_thresholds_and_unscored_replies() -> None:
    same_lengths = audit(by_length, CASES, max_probe_rate=1.0, max_length_rise=1e9, min_agreement=0.0)
    assert same_lengths.passed  # a wrong answer as long as the real one ties: agreement 0 allowed here
    probes = {m(c.real) for m in PROBES.values() for c in CASES}

    def none_for_probes(items: Items) -> list[float | None]:
        return [None if r in probes else 1.0 for _, r in items]

    result = audit(none_for_probes, CASES[:2])
    assert result.unscored == 2 * len(PROBES) and all(v != v for v in result.probes.values())  # nan: nothing judged
    assert padded("x", 4).count(FILLER) == 4 and padded("x", 0) == "x"
    # a scale of its own (a reward model's training spread) replaces the real answers' spread:
    # by_length's rise is the characters padding adds ("\n\n", 4 fillers, 3 spaces), over the scale
    added = 2 + 4 * len(FILLER) + 3
    assert audit(by_length, CASES, scale=1000.0).length_rise == pytest.approx(added / 1000.0)
    with pytest.raises(ValueError, match="at least one case"):
        audit(sound, [])
