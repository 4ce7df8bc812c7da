"""Real benchmark data through the sandbox: HumanEval's 164 canonical solutions pass,
and each fails with its body replaced by `return None`."""

from rlvr.sandbox import Limits, execute_many
from rlvr.tasks.humaneval import humaneval_tests, load_humaneval

LIMITS = Limits(timeout_s=10.0, memory_mb=512)


def test_humaneval_canonical_pass_and_stubs_fail() -> None:
    problems = load_humaneval()
    assert len(problems) == 164
    suites = [humaneval_tests(p["test"], p["entry_point"]) for p in problems]
    assert sum(s["format"] == "assert" for s in suites) >= 150
    good = execute_many(
        [(p["prompt"] + p["canonical_solution"], s) for p, s in zip(problems, suites, strict=True)], LIMITS, workers=4
    )
    failing = [
        (p["task_id"], r.status.value, [t.message for t in r.tests if t.status.value != "PASSED"][:2])
        for p, r in zip(problems, good, strict=True)
        if r.total == 0 or r.passed != r.total
    ]
    assert failing == []
    stubs = execute_many(
        [(p["prompt"] + "    return None\n", s) for p, s in zip(problems, suites, strict=True)], LIMITS, workers=4
    )
    passing = [p["task_id"] for p, r in zip(problems, stubs, strict=True) if r.passed == r.total]
    assert passing == []
