"""Tasks mined from a repository by bug injection, each checked before it is kept.

For every covered line of every covered non-test module (rlvr.repos.coverage), the
mutation engine (rlvr.tasks.mutate, training operators) proposes mutants; each runs, in
the sandbox, against the passing tests that cover its line. A mutant becomes a task when
between 1 and `cap_share` of the passing set fail (FAIL_TO_PASS); the other passing
tests are its PASS_TO_PASS (they cannot see the change when they do not cover it, and
the covering ones were run). Mutants nothing catches, that break too much, or whose run
does not end cleanly (a timeout, a crash of the run) are counted and dropped.

A task carries what is needed to rebuild and check it: the repository's digest, the
file, the mutations as byte spans (reapplied to the pristine file), and its tests. The
reference fix is the pristine file; the unfixed tree is the mutant.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rlvr.repos.coverage import COLLECTION, CoverageMap
from rlvr.repos.store import Repo
from rlvr.repos.suite import SUITE_LIMITS, Baseline, run_suite
from rlvr.sandbox import Limits, SandboxPool
from rlvr.tasks.mutate import Mutant, Mutation, apply, combine, mutants

OUTCOMES = ("kept", "survived", "too_many", "broken", "uncovered")


@dataclass
class RepoTask:
    id: str
    repo: str  # the repository's slug
    source: str  # how it was added (rlvr repos add SOURCE)
    digest: str
    file: str
    mutations: list[dict[str, Any]]
    fail_to_pass: list[str]
    covering: list[str]  # passing tests that cover the mutated lines (run during an episode)
    pass_to_pass: int  # how many passing tests must keep passing
    operators: list[str]
    order: int  # mutations in the task: 1 (tier of bug injection), 2 or 3 (harder)
    messages: dict[str, str] = field(default_factory=dict)  # F2P test -> its failure message (tier 0 prompts)
    # "mutation" (the broken file is the mutations over the pristine one) | "history" (a
    # commit's source change reverted) | "user" (a fix a user named, with their issue text)
    kind: str = "mutation"
    broken: dict[str, str] = field(default_factory=dict)  # history/user: path -> the file in the unfixed tree
    issue: str = ""  # history: the commit's message; user: their issue text (tier 2 prompts)
    commit: str = ""  # history/user: the fixing commit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RepoTask:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def broken_source(self, pristine: str) -> str:
        """The mutated file: the mutations reapplied to the pristine file's text."""
        return apply(pristine, [Mutation.from_dict(m) for m in self.mutations])

    def changed_files(self) -> list[str]:
        """The files the unfixed tree changes (the fix's files)."""
        return sorted(self.broken) if self.broken else [self.file]

    def unfixed(self, tree: Path) -> dict[str, str]:
        """The unfixed tree's changed files, as whole-file edits over the pristine `tree`."""
        if self.broken:
            return dict(self.broken)
        return {self.file: self.broken_source((tree / self.file).read_text(encoding="utf-8"))}


@dataclass(frozen=True)
class CandidateRun:
    """One candidate's validation run: what was run, what it decided, what it cost."""

    file: str
    mutant: Mutant
    covering: tuple[str, ...]
    outcome: str
    wall_s: float
    cpu_s: float


@dataclass
class Mined:
    tasks: list[RepoTask]
    outcomes: dict[str, Counter[str]]  # operator -> outcome -> count
    runs: list[CandidateRun]
    cpu_s: float
    wall_s: float

    @property
    def run_s(self) -> list[float]:
        """Sandbox wall seconds per candidate run (a verdict)."""
        return [r.wall_s for r in self.runs]

    def candidates(self) -> int:
        return sum(sum(c.values()) for c in self.outcomes.values())

    def summary(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates(),
            "kept": len(self.tasks),
            "per_operator": {op: dict(c) for op, c in sorted(self.outcomes.items())},
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
        }


def _task_id(repo: Repo, file: str, m: Mutant) -> str:
    digest = hashlib.sha1(f"{repo.digest}:{file}:{m.id}".encode()).hexdigest()[:10]
    return f"{repo.slug}/{file}/{digest}"


def mutant_limits(base: Baseline, tests: Sequence[str]) -> Limits:
    """Time for a mutant's run: 5 s for pytest's start plus ten times what its tests took
    in the baseline (a mutant that loops is cut, and counted as broken)."""
    took = sum(base.durations.get(t, 0.0) for t in tests)
    return replace(SUITE_LIMITS, timeout_s=min(600.0, 5.0 + 10.0 * took), output_bytes=64 * 1024)


def mine(
    repo: Repo,
    pool: SandboxPool,
    base: Baseline,
    cov: CoverageMap,
    cap_share: float = 0.2,
    operators: Sequence[str] | None = None,
    files: Sequence[str] | None = None,
    per_file: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> Mined:
    """Single-site tasks. `per_file` draws that many candidates per file (by `seed`,
    among all its mutants, covered or not, so the shares stay fair) instead of all;
    `files` narrows the modules."""
    t0 = time.perf_counter()
    passing = set(base.passing)
    cap = max(1, int(cap_share * len(passing)))
    tree = Path(repo.tree)
    plan: list[tuple[str, Mutant, list[str]]] = []
    outcomes: dict[str, Counter[str]] = {}
    for file in files if files is not None else cov.source_files():
        pristine = (tree / file).read_text(encoding="utf-8")
        every = mutants(pristine, operators=operators, family="train")
        if per_file is not None and len(every) > per_file:  # a sample of all, so shares stay fair
            every = random.Random(f"{seed}:{file}").sample(every, per_file)
        covered = set(cov.lines(file))
        found = [m for m in every if m.mutations[0].line in covered]
        for m in every:
            if m.mutations[0].line not in covered:  # counted, never run: no test reaches the line
                outcomes.setdefault(m.operators[0], Counter())["uncovered"] += 1
        for m in found:
            reached = cov.tests_for(file, [x.line for x in m.mutations])
            # a line that runs at collection can change any test (a parametrize list built by it)
            covering = sorted(passing if COLLECTION in reached else reached & passing)
            if covering:
                plan.append((file, m, covering))
            else:
                outcomes.setdefault(m.operators[0], Counter())["uncovered"] += 1
    return _validate(repo, pool, base, plan, cap, outcomes, progress, t0)


def _validate(
    repo: Repo,
    pool: SandboxPool,
    base: Baseline,
    plan: list[tuple[str, Mutant, list[str]]],
    cap: int,
    outcomes: dict[str, Counter[str]],
    progress: Callable[[int, int], None] | None,
    t0: float,
) -> Mined:
    """Run each candidate against its covering tests and keep those that fail 1..cap."""
    tasks: list[RepoTask] = []
    runs: list[CandidateRun] = []
    cpu = 0.0
    for k, (file, m, covering) in enumerate(plan):
        run = run_suite(repo, pool, tests=covering, files={file: m.source}, limits=mutant_limits(base, covering))
        cpu += run.cpu_s
        failed = [t for t in covering if run.outcome(t) != "passed"]
        op = m.operators[0] if len(m.mutations) == 1 else f"order{len(m.mutations)}"
        if run.status != "ok":
            outcome = "broken"
        elif not failed:
            outcome = "survived"
        elif len(failed) > cap:
            outcome = "too_many"
        else:
            outcome = "kept"
            tasks.append(
                RepoTask(
                    id=_task_id(repo, file, m),
                    repo=repo.slug,
                    source=repo.source,
                    digest=repo.digest,
                    file=file,
                    mutations=[x.to_dict() for x in m.mutations],
                    fail_to_pass=failed,
                    covering=covering,
                    pass_to_pass=len(base.passing) - len(failed),
                    operators=list(m.operators),
                    order=len(m.mutations),
                    messages={t: run.verdicts[t].message[-1000:] for t in failed if t in run.verdicts},
                )
            )
        outcomes.setdefault(op, Counter())[outcome] += 1
        runs.append(CandidateRun(file, m, tuple(covering), outcome, run.wall_s, run.cpu_s))
        if progress is not None:
            progress(k + 1, len(plan))
    return Mined(tasks, outcomes, runs, cpu, time.perf_counter() - t0)


def mine_combined(
    repo: Repo,
    pool: SandboxPool,
    base: Baseline,
    cov: CoverageMap,
    singles: Sequence[RepoTask],
    order: int = 2,
    per_file: int = 4,
    cap_share: float = 0.2,
    seed: int = 0,
) -> Mined:
    """Harder tasks: `order` of a module's single-site tasks (each validated on its own)
    combined in one mutant (rlvr.tasks.mutate.combine: sites that do not overlap, a
    result that differs from each single one), at most `per_file` a module, validated
    against the union of the tests covering their lines."""
    t0 = time.perf_counter()
    passing = set(base.passing)
    cap = max(1, int(cap_share * len(passing)))
    tree = Path(repo.tree)
    by_file: dict[str, list[RepoTask]] = {}
    for t in singles:
        if t.kind == "mutation" and t.order == 1 and t.digest == repo.digest:
            by_file.setdefault(t.file, []).append(t)
    plan: list[tuple[str, Mutant, list[str]]] = []
    for file, ts in sorted(by_file.items()):
        pristine = (tree / file).read_text(encoding="utf-8")
        firsts = [Mutant((Mutation.from_dict(t.mutations[0]),), t.broken_source(pristine)) for t in ts]
        for m in combine(pristine, firsts, order, per_file, seed):
            reached = cov.tests_for(file, [x.line for x in m.mutations])
            covering = sorted(passing if COLLECTION in reached else reached & passing)
            plan.append((file, m, covering))
    return _validate(repo, pool, base, plan, cap, {}, None, t0)


def tasks_path(repo: Repo) -> Path:
    """Beside the tree, never inside it: the jail shows the tree, and a task names its fix."""
    return Path(repo.tree).parent / "tasks.jsonl"


def save_tasks(repo: Repo, tasks: list[RepoTask]) -> Path:
    path = tasks_path(repo)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(t.to_dict(), sort_keys=True) + "\n" for t in tasks))
    tmp.replace(path)
    return path


def merge_tasks(repo: Repo, tasks: list[RepoTask]) -> Path:
    """Add `tasks` to the repository's saved tasks (replacing those with the same id)."""
    path = tasks_path(repo)
    old = load_tasks(path) if path.is_file() else []
    ids = {t.id for t in tasks}
    return save_tasks(repo, [t for t in old if t.id not in ids] + tasks)


def load_tasks(path: Path) -> list[RepoTask]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(RepoTask.from_dict(json.loads(line)))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a repository task: {e}") from None
    return out
