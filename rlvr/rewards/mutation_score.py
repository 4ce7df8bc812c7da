"""The reward of a reply that writes tests (the `test_writing` domain): how many of a
function's mutants its tests catch, given the tests pass on the function itself.

Inputs, for tests t_1..t_n in the reply's order (only those that call the entry point and
assert on it: rlvr.rewards.test_guards): each test's outcome on the reference in two runs,
and on each mutant. An outcome is 'pass', 'fail' (an assertion or any other exception) or
'timeout', with the seconds it took.

    any test not 'pass' on the reference in either run   -> -0.5 (FAILS_REFERENCE)
    no tests                                             ->  0
    otherwise   killed / mutants  +  0.1 * useful / n

A mutant is killed when some test fails on it, or times out on it while that test took
under a quarter of the per-test limit on the reference (in both runs): a slow test that
happens to cross the limit on a mutant has shown nothing. A test is useful when it kills a
mutant that no earlier test killed: redundant tests earn nothing, and the bonus rewards a
small set that kills as much. A task with no mutants scores every passing reply 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

FAILS_REFERENCE = -0.5
USEFUL_WEIGHT = 0.1
SLOW_SHARE = 0.25  # a timeout kills only when the reference ran under this share of the limit
VERDICTS = ("pass", "fail", "timeout")


@dataclass(frozen=True)
class Outcome:
    verdict: str  # one of VERDICTS
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"outcome {self.verdict!r}: expected one of {', '.join(VERDICTS)}")


@dataclass
class MutationScore:
    reward: float
    reason: str  # "fails_reference" | "no_tests" | "no_mutants" | "scored"
    tests: int
    mutants: int
    killed: list[str] = field(default_factory=list)  # mutant ids, in the given order
    useful: list[int] = field(default_factory=list)  # 0-based indices of the useful tests
    failing_on_reference: list[int] = field(default_factory=list)

    @property
    def kill_share(self) -> float:
        return len(self.killed) / self.mutants if self.mutants else 0.0

    def details(self) -> dict[str, object]:
        return {
            "reason": self.reason,
            "tests": self.tests,
            "mutants": self.mutants,
            "killed": len(self.killed),
            "kill_share": round(self.kill_share, 6),
            "useful_tests": len(self.useful),
            "failing_on_reference": self.failing_on_reference,
        }


def kills(outcome: Outcome, reference_seconds: float, limit_s: float) -> bool:
    """Whether one test's outcome on a mutant catches it (see the module docstring)."""
    if outcome.verdict == "fail":
        return True
    return outcome.verdict == "timeout" and reference_seconds < SLOW_SHARE * limit_s


def score(
    reference_runs: Sequence[Sequence[Outcome]],
    mutants: Mapping[str, Sequence[Outcome]],
    limit_s: float,
) -> MutationScore:
    """The reward of n tests from their outcomes on the reference (each run: n outcomes)
    and on each mutant (id -> n outcomes); `limit_s` is the per-test time limit."""
    if not reference_runs:
        raise ValueError("the reference must have run at least once")
    n = len(reference_runs[0])
    if any(len(r) != n for r in reference_runs) or any(len(m) != n for m in mutants.values()):
        raise ValueError(f"every run needs one outcome per test ({n})")
    if n == 0:
        return MutationScore(0.0, "no_tests", 0, len(mutants))
    failing = sorted({j for run in reference_runs for j, o in enumerate(run) if o.verdict != "pass"})
    if failing:
        return MutationScore(FAILS_REFERENCE, "fails_reference", n, len(mutants), failing_on_reference=failing)
    if not mutants:
        return MutationScore(0.0, "no_mutants", n, 0)
    ref_seconds = [max(run[j].seconds for run in reference_runs) for j in range(n)]
    killed_by = {
        mid: {j for j, o in enumerate(outs) if kills(o, ref_seconds[j], limit_s)} for mid, outs in mutants.items()
    }
    killed = [mid for mid, by in killed_by.items() if by]
    caught: set[str] = set()
    useful: list[int] = []
    for j in range(n):
        new = {mid for mid, by in killed_by.items() if j in by} - caught
        if new:
            useful.append(j)
            caught |= new
    reward = len(killed) / len(mutants) + USEFUL_WEIGHT * len(useful) / n
    return MutationScore(reward, "scored", n, len(mutants), killed, useful)
