"""The repository's own tests as the reward of a reply to a mined task, and the oracle
check every task passes before it is used.

A reply is a set of whole-file edits and deletions over the unfixed tree (the pristine
tree with the task's mutations). It is refused, with reward 0 and the reason, when it
touches a protected file: a test, a conftest, or what configures how tests run
(rlvr.repos.coverage.is_protected), or any file the suite collects tests from (a doctest
.rst); the tests are what pays, so they are not the reply's
to change. Otherwise the whole suite runs on the edited copy and:
    reward = share of FAIL_TO_PASS tests passing, if no PASS_TO_PASS test broke; else 0
so partial credit is paid only while nothing else breaks. A run that does not end
cleanly (a timeout, a crash, no report) is 0.

`oracle_check` runs a task's four cases: the reference fix (the pristine file) must score
1, the unfixed tree 0, an empty reply at most 0, and a reply that rewrites a failing test
must be refused. A task that fails any is never trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.repos.coverage import is_protected
from rlvr.repos.mine import RepoTask
from rlvr.repos.store import Repo
from rlvr.repos.suite import SUITE_LIMITS, Baseline, run_suite
from rlvr.sandbox import Limits, SandboxPool


@dataclass
class RepoScore:
    reward: float
    status: str  # "scored" | "refused" | "run_failed"
    f2p_passed: int = 0
    f2p_total: int = 0
    p2p_broken: list[str] = field(default_factory=list)
    reason: str = ""
    wall_s: float = 0.0


def protected_edits(edits: dict[str, str], deleted: Sequence[str] = (), base: Baseline | None = None) -> list[str]:
    held = base.test_files() if base is not None else set()
    return sorted(p for p in [*edits, *deleted] if is_protected(p, held))


def unfixed_files(repo: Repo, task: RepoTask) -> dict[str, str]:
    """The task's broken files, as edits over the pristine tree."""
    return task.unfixed(Path(repo.tree))


def reference_edits(repo: Repo, task: RepoTask) -> dict[str, str]:
    """The reference fix: the pristine versions of the files the task breaks."""
    return {f: (Path(repo.tree) / f).read_text(encoding="utf-8") for f in task.changed_files()}


def score(
    repo: Repo,
    task: RepoTask,
    base: Baseline,
    pool: SandboxPool,
    edits: dict[str, str],
    deleted: Sequence[str] = (),
    limits: Limits = SUITE_LIMITS,
) -> RepoScore:
    """Score a reply (whole-file `edits` and `deleted` paths over the unfixed tree)."""
    f2p = list(task.fail_to_pass)
    refused = protected_edits(edits, deleted, base)
    if refused:
        return RepoScore(0.0, "refused", 0, len(f2p), reason=f"the reply changes protected files: {', '.join(refused)}")
    files = {**unfixed_files(repo, task), **edits}
    removed = [p for p in deleted if p not in edits]
    for p in removed:
        files.pop(p, None)
    run = run_suite(repo, pool, files=files, delete=removed, limits=limits)
    if run.status != "ok":
        return RepoScore(0.0, "run_failed", 0, len(f2p), reason=f"{run.status}: {run.error}", wall_s=run.wall_s)
    passed = sum(run.outcome(t) == "passed" for t in f2p)
    broken = sorted(t for t in base.passing if t not in set(f2p) and run.outcome(t) != "passed")
    reward = 0.0 if broken else passed / max(1, len(f2p))
    return RepoScore(reward, "scored", passed, len(f2p), broken, wall_s=run.wall_s)


@dataclass
class OracleResult:
    task: str
    ok: bool
    reference: float
    unfixed: float
    empty: float
    test_edit_refused: bool
    p2p_broken_by_unfixed: list[str]
    reason: str = ""


def oracle_check(repo: Repo, task: RepoTask, base: Baseline, pool: SandboxPool) -> OracleResult:
    """The four cases. The unfixed tree's run also checks the coverage map's promise:
    every passing test outside FAIL_TO_PASS still passes with the mutant in place."""
    ref = score(repo, task, base, pool, reference_edits(repo, task))
    unfixed = score(repo, task, base, pool, {})
    empty = unfixed  # an empty reply leaves the unfixed tree as it is: the same run
    test_file = task.fail_to_pass[0].split("::")[0] if task.fail_to_pass else "tests/test_x.py"
    hacked = score(repo, task, base, pool, {test_file: "def test_nothing():\n    pass\n"})
    reasons = []
    if ref.reward != 1.0:
        reasons.append(
            f"the reference fix scores {ref.reward:.2f} ({ref.status} {ref.reason}; broke {ref.p2p_broken[:3]})"
        )
    if unfixed.status != "scored" or unfixed.f2p_passed != 0:
        reasons.append(
            f"the unfixed tree passes {unfixed.f2p_passed} of {unfixed.f2p_total} failing tests ({unfixed.status})"
        )
    if unfixed.p2p_broken:
        reasons.append(f"the mutant also breaks tests outside FAIL_TO_PASS: {unfixed.p2p_broken[:3]}")
    if empty.reward > 0:
        reasons.append(f"an empty reply scores {empty.reward:.2f}")
    if hacked.status != "refused":
        reasons.append("a reply rewriting a failing test was not refused")
    return OracleResult(
        task.id,
        not reasons,
        ref.reward,
        unfixed.reward,
        empty.reward,
        hacked.status == "refused",
        unfixed.p2p_broken,
        "; ".join(reasons),
    )
