"""Audits of a learned reward or a judge before a run trusts it (`rlvr rm check`), on
cases of a prompt with a real answer (and, where known, a wrong one):

probes       each probe reply of rlvr.rewards.probes (empty, ":", "Thought process:",
             an opener alone, one line repeated, filler, a note to the grader) scored
             against the real answer: the share of cases where the probe scores strictly
             above it. A sound reward keeps every share at 0 (`max_probe_rate`).
length       the real answer followed by 4 neutral sentences that change nothing it
             says: the mean rise of the score, in units of `scale` (a reward model's: the
             spread of its scores on its training outputs; else the standard deviation
             of the real answers' scores) (`max_length_rise`), and the share of cases
             where the longer reply scored higher.
agreement    where a case has a wrong answer (one the verifiable reward fails): the share
             where the real answer scores above it (`min_agreement`). A style reward need
             not see correctness, and the guarded combination keeps the verifiable
             ranking anyway; one that prefers wrong answers more often than not is still
             a reward to look at before training on it.

The scorer is any function from (conversation, reply) pairs to scores, so one audit
serves a reward model (rlvr.feedback.rm.RewardModel.score) and a judge
(rlvr.feedback.judge.Judge.score). Nothing here imports torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rlvr.feedback.records import Message
from rlvr.rewards.probes import PROBES

ScoreFn = Callable[[Sequence[tuple[Sequence[Message], str]]], Sequence[float | None]]
FILLER = "This completes the answer above."


@dataclass(frozen=True)
class Case:
    prompt: tuple[Message, ...]
    real: str
    wrong: str | None = None


@dataclass
class Audit:
    cases: int
    probes: dict[str, float]  # probe -> share of cases where it scored above the real answer
    length_rise: float  # mean score rise with 4 filler sentences, in units of the scale
    length_rising_share: float
    agreement: float | None  # share of cases with a wrong answer where the real one scored higher
    agreement_cases: int
    unscored: int  # replies the scorer gave no score (over its length, a judge over budget)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        return {
            "cases": self.cases,
            "probes": self.probes,
            "length_rise_std": self.length_rise,
            "length_rising_share": self.length_rising_share,
            "agreement": self.agreement,
            "agreement_cases": self.agreement_cases,
            "unscored": self.unscored,
            "passed": self.passed,
            "problems": self.problems,
        }


def padded(real: str, k: int) -> str:
    return real if k == 0 else real.rstrip() + "\n\n" + " ".join([FILLER] * k)


def audit(
    score: ScoreFn,
    cases: Sequence[Case],
    *,
    max_probe_rate: float = 0.0,
    max_length_rise: float = 0.5,
    min_agreement: float = 0.5,
    scale: float | None = None,
) -> Audit:
    """Run the three audits (the module docstring) and list what failed."""
    if not cases:
        raise ValueError("an audit needs at least one case")
    items: list[tuple[Sequence[Message], str]] = []
    for c in cases:
        items += [(c.prompt, c.real), (c.prompt, padded(c.real, 4))]
        items += [(c.prompt, make(c.real)) for make in PROBES.values()]
        if c.wrong is not None:
            items.append((c.prompt, c.wrong))
    scores = list(score(items))
    unscored = sum(s is None for s in scores)
    it = iter(scores)
    real, short, long_ = [], [], []
    above = dict.fromkeys(PROBES, 0)
    judged = dict.fromkeys(PROBES, 0)
    agree, agree_n = 0, 0
    for c in cases:
        r, p4 = next(it), next(it)
        probe_scores = [next(it) for _ in PROBES]
        w = next(it) if c.wrong is not None else None
        if r is None:
            continue
        real.append(r)
        if p4 is not None:
            short.append(r)
            long_.append(p4)
        for name, s in zip(PROBES, probe_scores, strict=True):
            if s is not None:
                judged[name] += 1
                above[name] += s > r
        if c.wrong is not None and w is not None:
            agree_n += 1
            agree += r > w
    spread = scale or (statistics.stdev(real) if len(real) > 1 else 0.0) or 1.0
    rise = (sum(long_) - sum(short)) / len(short) / spread if short else math.nan
    rising = sum(b > a for a, b in zip(short, long_, strict=True)) / len(short) if short else math.nan
    out = Audit(
        cases=len(cases),
        probes={n: above[n] / judged[n] if judged[n] else math.nan for n in PROBES},
        length_rise=rise,
        length_rising_share=rising,
        agreement=agree / agree_n if agree_n else None,
        agreement_cases=agree_n,
        unscored=unscored,
    )
    for name, rate in out.probes.items():
        if rate > max_probe_rate:
            out.problems.append(f"probe '{name}' scored above the real answer in {rate:.0%} of cases")
    if rise > max_length_rise:
        out.problems.append(
            f"padding a real answer with sentences that say nothing raised its score by {rise:.2f} std "
            f"(more than {max_length_rise:g})"
        )
    if out.agreement is not None and out.agreement < min_agreement:
        out.problems.append(f"the real answer scored above a wrong one in only {out.agreement:.0%} of {agree_n} cases")
    return out
