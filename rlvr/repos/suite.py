"""A repository's own test suite, run in the sandbox, and its baseline.

`run_suite` runs pytest from the repository's environment (bound read-only into the
jail) on the run's own copy of the pristine tree, with an episode's edits written over
that copy; verdicts come from the JUnit report pytest writes (rlvr.repos.junit). Nothing
a run writes survives it.

`baseline` runs the whole suite `runs` times (three by default), each with another hash
seed (PYTHONHASHSEED 0, 1, 2: a test that depends on set or dict order shows up), and
splits the tests: passing every time (the passing set tasks are judged against),
flaky (passing some of the times: quarantined, never used as a verdict), failing every
time, skipped, and unstable (an id present in some runs only, always passing there: a
parametrization whose ids follow the hash seed; quarantined too). Each test's median
duration is kept for scheduling and budgets.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rlvr.repos.junit import ReportError, Verdict, parse
from rlvr.repos.store import Repo
from rlvr.sandbox import Limits, SandboxPool
from rlvr.sandbox.command import WORK_TREE, Job, JobResult, run_job
from rlvr.sandbox.workspace import TREE

BASELINE_VERSION = 2  # of the test ids (rlvr.repos.junit.node_id); a baseline of another is taken again
REPORT = "junit.xml"  # written to the run's work dir, beside the tree's copy
SUITE_LIMITS = Limits(
    timeout_s=600.0,
    memory_mb=2048,
    parallel_tests=1,
    open_files=512,
    work_mb=512,
    tmp_mb=256,
    file_size_mb=64,
    output_bytes=256 * 1024,
)


def repo_pool(repos: Sequence[Repo], concurrency: int = 2) -> SandboxPool:
    """A sandbox pool whose jail shows these repositories' trees and environments."""
    show: list[str] = []
    for r in repos:
        for p in (r.tree, r.env_path, *r.override.get("show", [])):
            if p not in show:
                show.append(p)
    return SandboxPool(concurrency, show=tuple(show))


def pytest_argv(
    repo: Repo, tests: Sequence[str] = (), deselect: Sequence[str] = (), extra: Sequence[str] = ()
) -> list[str]:
    """The command line: the environment's interpreter running pytest with the
    repository's own configuration, a JUnit report (xunit1: with each case's file, for
    node ids), no cache written, the override's addopts and skips."""
    argv = [
        os.path.join(repo.env_path, "bin", "python"),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml=/sandbox/{REPORT}",
        "-o",
        "junit_family=xunit1",
        "--tb=short",
    ]
    addopts = str(repo.override.get("addopts", "") or "")
    argv += shlex.split(addopts)
    for t in [*repo.override.get("skip", []), *deselect]:
        argv += ["--deselect", t]
    return argv + list(extra) + list(tests)


def suite_env(repo: Repo, hash_seed: int = 0) -> dict[str, str]:
    pythonpath = WORK_TREE if repo.pythonpath == "." else f"{WORK_TREE}/{repo.pythonpath}"
    return {"PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": str(hash_seed)}


@dataclass
class SuiteRun:
    # "ok": a report was read | "timeout" | "error" (no report: collection broke, a crash) | "sandbox_error"
    status: str
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    exit_code: int | None = None
    output: str = ""  # the end of pytest's output
    error: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    files: dict[str, str] = field(default_factory=dict)  # collected beside the report

    def outcome(self, test: str) -> str:
        v = self.verdicts.get(test)
        return v.outcome if v else "missing"

    def passed(self) -> set[str]:
        return {t for t, v in self.verdicts.items() if v.outcome == "passed"}


def run_suite(
    repo: Repo,
    pool: SandboxPool,
    tests: Sequence[str] = (),
    files: dict[str, str] | None = None,
    delete: Sequence[str] = (),
    deselect: Sequence[str] = (),
    hash_seed: int = 0,
    limits: Limits = SUITE_LIMITS,
    extra_args: Sequence[str] = (),
    extra_env: dict[str, str] | None = None,
    collect: Sequence[str] = (),
) -> SuiteRun:
    """Run the suite (or `tests`, node ids) on a copy of the tree with `files` written
    over it and `delete` removed; `extra_args` go to pytest, `extra_env` over the suite's
    environment, and `collect` names more files (relative to /sandbox) to bring back.
    A repository with its own pipeline (the override's `command`) runs that instead,
    whole: a selection of tests needs pytest."""
    command = list(repo.override.get("command") or [])
    if command:
        if tests or deselect or extra_args:
            raise BaselineError(f"{repo.name} runs its own command ({' '.join(command)}): tests cannot be selected")
        env_bin = os.path.join(repo.env_path, "bin")
        job = Job(
            argv=command,
            tree=repo.tree,
            files=dict(files or {}),
            delete=list(delete),
            env={**suite_env(repo, hash_seed), "PATH": f"{env_bin}:/usr/local/bin:/usr/bin:/bin", **(extra_env or {})},
            collect=[f"{TREE}/{repo.override['junit']}", *collect],
        )
        return read_run(run_job(job, limits, pool), report=job.collect[0])
    job = Job(
        argv=pytest_argv(repo, tests, deselect, extra_args),
        tree=repo.tree,
        files=dict(files or {}),
        delete=list(delete),
        env={**suite_env(repo, hash_seed), **(extra_env or {})},
        collect=[REPORT, *collect],
    )
    return read_run(run_job(job, limits, pool))


def read_run(result: JobResult, report: str = REPORT) -> SuiteRun:
    output = (result.stdout + result.stderr)[-8000:]
    run = SuiteRun(
        result.status,
        exit_code=result.exit_code,
        output=output,
        error=result.error,
        wall_s=result.wall_time_s,
        cpu_s=result.cpu_time_s,
        files={k: v for k, v in result.files.items() if k != report},
    )
    if result.status != "ok":
        return run
    text = result.files.get(report)
    if text is None:
        run.status, run.error = "error", f"no test report was written at {report} (exit {result.exit_code})"
        return run
    try:
        run.verdicts = {v.test: v for v in parse(text)}
    except ReportError as e:
        run.status, run.error = "error", str(e)
    return run


@dataclass
class Baseline:
    runs: int
    passing: list[str]
    flaky: list[str]
    failing: list[str]
    skipped: list[str]
    durations: dict[str, float]  # median seconds per test, over the runs
    run_wall_s: list[float]
    run_cpu_s: list[float]
    python: str = ""
    # passed whenever present, but absent from some runs: an id that depends on the hash
    # seed (a parametrization over a set); quarantined like the flaky ones
    unstable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def tests(self) -> int:
        return len(self.passing) + len(self.flaky) + len(self.failing) + len(self.skipped) + len(self.unstable)

    def test_files(self) -> set[str]:
        """Every file the suite collected a test from (a .py module, a doctest .rst)."""
        return {
            t.split("::")[0]
            for part in (self.passing, self.flaky, self.failing, self.skipped, self.unstable)
            for t in part
        }


class BaselineError(RuntimeError):
    """The suite could not be run to a report; the message says why."""


def baseline(repo: Repo, pool: SandboxPool, runs: int = 3, limits: Limits = SUITE_LIMITS) -> Baseline:
    seen: list[SuiteRun] = []
    for k in range(runs):
        run = run_suite(repo, pool, hash_seed=k, limits=limits)
        if run.status != "ok":
            tail = run.output.strip().splitlines()[-3:]
            raise BaselineError(
                f"run {k + 1} of the suite of {repo.name}: {run.status}: {run.error} {' | '.join(tail)}"
            )
        seen.append(run)
    ids: list[str] = []
    for run in seen:
        ids += [t for t in run.verdicts if t not in set(ids)]
    passing, flaky, failing, skipped, unstable = [], [], [], [], []
    for t in ids:
        outcomes = [r.outcome(t) for r in seen]
        if "missing" in outcomes and all(o in ("passed", "missing") for o in outcomes):
            unstable.append(t)
        elif all(o == "passed" for o in outcomes):
            passing.append(t)
        elif all(o == "skipped" for o in outcomes):
            skipped.append(t)
        elif any(o == "passed" for o in outcomes):
            flaky.append(t)
        else:
            failing.append(t)
    durations = {t: statistics.median(r.verdicts[t].duration_s for r in seen if t in r.verdicts) for t in ids}
    v = sys.version_info
    return Baseline(
        runs,
        passing,
        flaky,
        failing,
        skipped,
        durations,
        [r.wall_s for r in seen],
        [r.cpu_s for r in seen],
        python=f"{v.major}.{v.minor}.{v.micro}",
        unstable=unstable,
    )


def baseline_path(repo: Repo) -> Path:
    return Path(repo.tree).parent / "baseline.json"


def save_baseline(repo: Repo, b: Baseline) -> Path:
    path = baseline_path(repo)
    tmp = path.with_suffix(".tmp")
    record = {"digest": repo.digest, "env_key": repo.env_key, "version": BASELINE_VERSION, **b.to_dict()}
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)
    return path


def load_baseline(repo: Repo) -> Baseline | None:
    """The recorded baseline, when it was taken on this tree and this environment, with
    the test ids of this version."""
    path = baseline_path(repo)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    key = (data.pop("digest", None), data.pop("env_key", None), data.pop("version", None))
    if key != (repo.digest, repo.env_key, BASELINE_VERSION):
        return None
    return Baseline(**data)


def ensure_baseline(repo: Repo, pool: SandboxPool | None = None, runs: int = 3) -> tuple[Baseline, bool]:
    """The recorded baseline, or a new one taken now (and recorded); (baseline, cached)."""
    got = load_baseline(repo)
    if got is not None and got.runs >= runs:
        return got, True
    own = pool is None
    pool = pool or repo_pool([repo], 1)
    try:
        b = baseline(repo, pool, runs)
    finally:
        if own:
            pool.close()
    save_baseline(repo, b)
    return b, False
