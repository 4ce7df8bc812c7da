"""Which test runs which line of a repository: computed once per tree and environment
(one sandboxed run of the passing set under coverage.py, one context per test node id)
and kept beside the baseline. Mining mutates only covered lines and runs, for each
mutant, only the tests that cover it; an episode's test runs can do the same.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rlvr.repos.store import Repo
from rlvr.repos.suite import SUITE_LIMITS, Baseline, BaselineError, run_suite
from rlvr.sandbox import Limits, SandboxPool
from rlvr.sandbox.command import WORK_TREE

PLUGIN = "_rlvr_coverage"  # written at the copy's root, loaded with -p
OUT = "coverage.json"  # in the run's work dir, collected
PROTECTED_NAMES = {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py"}
TEST_DIRS = {"tests", "test", "testing"}
# code that is not the library: documentation (a Sphinx conf.py), examples, benchmarks,
# build scripts; mutating them makes tasks about a docs build, not about the project
NON_SOURCE_DIRS = {"docs", "doc", "examples", "example", "benchmarks", "bench", "scripts", "tools", "ci"}
NON_SOURCE_NAMES = {"setup.py", "conf.py", "noxfile.py", "fabfile.py", "tasks.py"}
COLLECTION = "<collection>"  # code run outside any test: imports, parametrize lists
MAP_VERSION = 3  # of what the plugin records and the ids; a recorded map of another version is made again


def is_test_file(rel: str) -> bool:
    """A test module or a file inside a test directory (never mutated, never editable
    by an agent)."""
    p = PurePosixPath(rel)
    return (
        p.name.startswith("test_")
        or p.name.endswith("_test.py")
        or p.name == "conftest.py"
        or any(part in TEST_DIRS for part in p.parts[:-1])
    )


def is_protected(rel: str, test_files: Collection[str] = ()) -> bool:
    """Files a reply may not change: the tests and what configures how they run, and any
    other file the suite collects tests from (`test_files`: a doctest in docs/usage.rst).
    A library module whose docstrings are collected (--doctest-modules) stays editable:
    its bugs are the tasks."""
    name = PurePosixPath(rel).name
    return is_test_file(rel) or name in PROTECTED_NAMES or (rel in test_files and not is_library_file(rel))


def is_library_file(rel: str) -> bool:
    """A module of the project itself: what mining may mutate."""
    p = PurePosixPath(rel)
    return (
        p.suffix == ".py"
        and not is_test_file(rel)
        and p.name not in NON_SOURCE_NAMES
        and p.name != PLUGIN + ".py"
        and not any(part in NON_SOURCE_DIRS for part in p.parts[:-1])
    )


@dataclass
class CoverageMap:
    tests: list[str]
    files: dict[str, dict[int, list[int]]]  # file -> line -> indices into tests

    def source_files(self) -> list[str]:
        """Covered modules of the project (not tests, docs, examples): what mining may mutate."""
        return sorted(f for f in self.files if is_library_file(f))

    def lines(self, file: str) -> list[int]:
        return sorted(self.files.get(file, {}))

    def tests_for(self, file: str, lines: list[int] | tuple[int, ...]) -> set[str]:
        """The tests that run these lines; COLLECTION among them when a line also ran
        while tests were collected (then any test may see it)."""
        by_line = self.files.get(file, {})
        return {self.tests[i] or COLLECTION for line in lines for i in by_line.get(line, [])}

    def to_dict(self) -> dict[str, object]:
        return {"tests": self.tests, "files": {f: {str(k): v for k, v in ls.items()} for f, ls in self.files.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> CoverageMap:
        files = d["files"]
        assert isinstance(files, dict)
        tests = d["tests"]
        assert isinstance(tests, list)
        return cls(list(tests), {f: {int(k): list(v) for k, v in ls.items()} for f, ls in files.items()})


def _path(repo: Repo) -> Path:
    return Path(repo.tree).parent / "coverage.json"


def coverage_map(repo: Repo, pool: SandboxPool, base: Baseline, limits: Limits = SUITE_LIMITS) -> CoverageMap:
    """The recorded map for this tree and environment, or a new one (recorded): one run of
    the whole suite (`base` says which of its tests count: the map is read with it)."""
    path = _path(repo)
    if path.is_file():
        data = json.loads(path.read_text())
        same = (data.get("digest"), data.get("env_key"), data.get("version")) == (
            repo.digest,
            repo.env_key,
            MAP_VERSION,
        )
        if same:
            return CoverageMap.from_dict(data)
    plugin = (Path(__file__).parent / "coverage_plugin.py").read_text()
    pythonpath = f"{WORK_TREE}:{WORK_TREE}/{repo.pythonpath}" if repo.pythonpath != "." else WORK_TREE
    run = run_suite(
        repo,
        pool,
        files={PLUGIN + ".py": plugin},
        limits=limits,
        extra_args=["-p", PLUGIN],
        extra_env={"RLVR_COVERAGE_OUT": f"/sandbox/{OUT}", "PYTHONPATH": pythonpath},
        collect=[OUT],
    )
    text = run.files.get(OUT)
    if run.status != "ok" or text is None:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        raise BaselineError(f"the coverage run of {repo.name} failed: {run.status} {run.error} {tail}")
    cov = CoverageMap.from_dict(json.loads(text))
    tmp = path.with_suffix(".tmp")
    record = {"digest": repo.digest, "env_key": repo.env_key, "version": MAP_VERSION, **cov.to_dict()}
    tmp.write_text(json.dumps(record) + "\n")
    os.replace(tmp, path)
    return cov
