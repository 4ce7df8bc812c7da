"""Tasks from a git repository's history and tasks written by a user, on a fixture
repository with real commits: a fix committed with its test becomes a task whose
unfixed tree reverts only that fix (a later change to the same module stays), commits
that do not change code and tests together are passed over, and a user's task is
refused when the tests it names pass without the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.repos import Repo, RepoError, add
from rlvr.repos.history import mine_history, user_task
from rlvr.repos.mine import load_tasks, tasks_path
from rlvr.repos.reward import oracle_check, score
from rlvr.repos.suite import Baseline, ensure_baseline, repo_pool
from rlvr.sandbox import SandboxPool

CALC_V1 = "def double(x):\n    return 2 * x\n\n\ndef inc(x):\n    return x + 2\n"
TESTS_V1 = "from calc import double, inc\n\n\ndef test_double():\n    assert double(3) == 6\n"
PYPROJECT = '[project]\nname = "calc"\nversion = "1.0"\n'
TESTS_V2 = TESTS_V1 + "\n\ndef test_inc():\n    assert inc(1) == 2\n"


GIT_ENV = {
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@b",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@b",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00",
    "PATH": "/usr/bin:/bin",
}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=GIT_ENV, capture_output=True, text=True, check=True
    ).stdout.strip()


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Repo, Baseline, dict[str, str]]:
    root = tmp_path_factory.mktemp("hist") / "calc"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    revs = {
        "start": _commit(
            root,
            {
                "pyproject.toml": '[project]\nname = "calc"\nversion = "1.0"\n',
                "calc.py": CALC_V1,
                "tests/test_calc.py": TESTS_V1,
            },
            "start",
        ),
        "fix": _commit(
            root,
            {"calc.py": CALC_V1.replace("x + 2", "x + 1"), "tests/test_calc.py": TESTS_V2},
            "inc added two instead of one\n\ninc(1) returned 3.",
        ),
        "docs": _commit(root, {"README.md": "calc\n"}, "readme"),
        "later": _commit(root, {"calc.py": CALC_V1.replace("x + 2", "x + 1").replace("2 * x", "x * 2")}, "style"),
    }
    cache = root.parent / "cache"
    repo = add(str(root), cache)
    base, _ = ensure_baseline(repo, runs=1)
    assert sorted(base.passing) == ["tests/test_calc.py::test_double", "tests/test_calc.py::test_inc"]
    return cache, repo, base, revs


@pytest.fixture(scope="module")
def pool(history: tuple[Path, Repo, Baseline, dict[str, str]]) -> SandboxPool:
    with repo_pool([history[1]], 2) as p:
        yield p  # type: ignore[misc]


def test_a_fix_committed_with_its_test_is_a_task_that_reverts_only_that_fix(history, pool) -> None:  # type: ignore[no-untyped-def]
    _, repo, base, revs = history
    got = mine_history(repo, pool, base, cap_share=0.5)
    assert got.outcomes["not source and tests together"] == 2  # the readme, the style change
    assert got.outcomes["adds or deletes a module"] == 1  # the first commit
    assert got.outcomes["kept"] == 1 and len(got.tasks) == 1
    t = got.tasks[0]
    assert t.kind == "history" and t.commit == revs["fix"] and t.fail_to_pass == ["tests/test_calc.py::test_inc"]
    assert t.broken == {"calc.py": CALC_V1.replace("2 * x", "x * 2")}  # the later style change is kept
    assert t.issue.startswith("inc added two instead of one")
    check = oracle_check(repo, t, base, pool)
    assert check.ok, check.reason
    assert (
        score(repo, t, base, pool, {"calc.py": CALC_V1.replace("2 * x", "x * 2").replace("x + 2", "1 + x")}).reward
        == 1.0
    )


def test_a_user_task_is_checked_against_the_tests_it_names(history, pool) -> None:  # type: ignore[no-untyped-def]
    _, repo, base, revs = history
    t = user_task(repo, pool, base, revs["fix"], ["tests/test_calc.py::test_inc"], "inc(1) should be 2")
    assert t.kind == "user" and t.issue == "inc(1) should be 2" and t.fail_to_pass == ["tests/test_calc.py::test_inc"]
    with pytest.raises(RepoError, match=r"these tests pass without the fix: tests/test_calc\.py::test_double"):
        user_task(repo, pool, base, revs["fix"], ["tests/test_calc.py::test_double"], "double is wrong")
    with pytest.raises(RepoError, match=r"changes none of the project's modules"):
        user_task(repo, pool, base, revs["docs"], ["tests/test_calc.py::test_inc"], "x")
    with pytest.raises(RepoError, match="not in the passing set"):
        user_task(repo, pool, base, revs["fix"], ["tests/test_calc.py::test_nope"], "x")


def test_the_cli_mines_history_and_imports_user_tasks(history, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cache, repo, _, revs = history
    rlvr = [sys.executable, "-m", "rlvr.cli", "repos"]
    done = subprocess.run([*rlvr, "mine", "calc", "--history", "--cap", "0.5", "--json", "--cache", str(cache)],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["saved"] == 1
    spec = tmp_path / "mine.yaml"
    spec.write_text(f"- issue: inc(1) should be 2\n  fix: {revs['fix']}\n  tests: [tests/test_calc.py::test_inc]\n")
    done = subprocess.run([*rlvr, "import", "calc", str(spec), "--cache", str(cache)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    kinds = sorted(t.kind for t in load_tasks(tasks_path(repo)))
    assert kinds == ["history", "user"]
    spec.write_text("- issue: x\n  fix: HEAD\n")
    bad = subprocess.run([*rlvr, "import", "calc", str(spec), "--cache", str(cache)], capture_output=True, text=True)
    assert bad.returncode == 2 and "task 1: keys issue, fix (a revision) and tests (a list) are needed" in bad.stderr
