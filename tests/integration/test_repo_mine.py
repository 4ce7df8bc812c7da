"""Tasks mined from a fixture repository and rewarded by its own suite in the sandbox:
only covered lines are mutated, a kept mutant fails between 1 and the cap of the passing
set, every kept task passes the oracle check, and the reward pays the FAIL_TO_PASS share
only while no PASS_TO_PASS test breaks, refusing replies that touch tests or their
configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.repos import Repo, show
from rlvr.repos.coverage import COLLECTION, coverage_map
from rlvr.repos.mine import RepoTask, load_tasks, mine, mine_combined, save_tasks
from rlvr.repos.reward import oracle_check, score
from rlvr.repos.suite import Baseline, load_baseline, repo_pool
from rlvr.sandbox import SandboxPool
from rlvr.tasks.mutate import Mutation, apply, mutations

CALC = """\
VERSION = "1.0"


def double(x):
    return 2 * x


def quad(x):
    return double(double(x))


def triple(x):
    return 3 * x


def never_tested(x):
    if x > 3:
        return x - 1
    return x
"""

TESTS = """\
import calc

TRIPLED = calc.triple(2)  # runs while the tests are collected, in no test's context


def test_double():
    assert calc.double(3) == 6


def test_quad():
    assert calc.quad(1) == 4


def test_version():
    assert calc.VERSION == "1.0"


def test_double_zero():
    assert calc.double(0) == 0


def test_tripled():
    assert TRIPLED == 6
"""


# a doctest in the documentation: a test file that is not Python (never a reply's to edit)
USAGE = """\
Usage
=====

>>> import calc
>>> calc.never_tested(1)
1
"""
PYPROJECT = '[project]\nname = "calc"\nversion = "1.0"\n\n[tool.pytest.ini_options]\naddopts = "--doctest-glob=*.rst"\n'
DOC = "docs/usage.rst::usage.rst"


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Repo, Baseline]:
    root = tmp_path_factory.mktemp("mine-repo")
    src = root / "calcproj"
    files = {
        "pyproject.toml": PYPROJECT,
        "calc.py": CALC,
        "docs/usage.rst": USAGE,
        "docs/conf.py": "import calc\n\nproject = 'calc'\nrelease = calc.VERSION\n",
        "tests/test_calc.py": TESTS,
    }
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    cache = root / "cache"
    cmd = [sys.executable, "-m", "rlvr.cli", "repos", "add", str(src), "--cache", str(cache)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    repo = show("calc", cache)
    base = load_baseline(repo)
    assert base is not None and len(base.passing) == 6 and DOC in base.passing
    return cache, repo, base


@pytest.fixture(scope="module")
def pool(fixture_repo: tuple[Path, Repo, Baseline]) -> SandboxPool:
    with repo_pool([fixture_repo[1]], 2) as p:
        yield p  # type: ignore[misc]


F = "tests/test_calc.py::"


def test_mining_mutates_covered_lines_only_and_every_kept_task_passes_the_oracle(
    fixture_repo: tuple[Path, Repo, Baseline], pool: SandboxPool
) -> None:
    _, repo, base = fixture_repo
    cov = coverage_map(repo, pool, base)
    assert cov.source_files() == ["calc.py"]  # not docs/conf.py, whatever covers it
    assert cov.tests_for("calc.py", [5]) == {F + "test_double", F + "test_quad", F + "test_double_zero"}
    assert cov.tests_for("calc.py", [13]) == {COLLECTION}  # triple: only while collecting
    assert cov.tests_for("calc.py", [17, 19]) == {DOC}  # never_tested(1), in the docs only
    assert not cov.tests_for("calc.py", [18])
    mined = mine(repo, pool, base, cov, cap_share=0.5)
    assert mined.tasks, mined.summary()
    for t in mined.tasks:
        assert all(m["line"] != 18 for m in t.mutations)
        assert 1 <= len(t.fail_to_pass) <= 3 and set(t.fail_to_pass) <= set(t.covering) <= set(base.passing)
        assert t.pass_to_pass == 6 - len(t.fail_to_pass)
    assert sum(c.get("uncovered", 0) for c in mined.summary()["per_operator"].values()) >= 1
    # a mutant of code that runs only at collection is run against every passing test
    in_triple = [t for t in mined.tasks if t.mutations[0]["function"] == "triple"]
    assert in_triple and all(t.fail_to_pass == [F + "test_tripled"] for t in in_triple)
    assert all(len(t.covering) == 6 for t in in_triple)
    # a bug only the documentation's doctest catches: rewriting the .rst is refused too
    in_docs = [t for t in mined.tasks if t.mutations[0]["function"] == "never_tested"]
    assert in_docs and all(t.fail_to_pass == [DOC] for t in in_docs)
    checked = [oracle_check(repo, t, base, pool) for t in mined.tasks]
    assert all(c.ok for c in checked), [c.reason for c in checked if not c.ok]
    # harder tiers: two single-site tasks of the module in one mutant; fixing one is not enough
    pairs = mine_combined(repo, pool, base, cov, mined.tasks, order=2, per_file=3, cap_share=0.5)
    assert pairs.tasks and all(t.order == 2 and len(t.mutations) == 2 for t in pairs.tasks)
    pair = pairs.tasks[0]
    assert oracle_check(repo, pair, base, pool).ok
    one = apply(CALC, [Mutation.from_dict(pair.mutations[0])])  # the second mutation fixed, the first left in
    assert score(repo, pair, base, pool, {"calc.py": one}).reward < 1.0
    path = save_tasks(repo, mined.tasks)
    assert [t.to_dict() for t in load_tasks(path)] == [t.to_dict() for t in mined.tasks]
    assert path.parent != Path(repo.tree) and not (Path(repo.tree) / path.name).exists()  # never shown in the jail


def _task(repo: Repo) -> RepoTask:
    """double's `2 * x` made `3 * x`: test_double and test_quad fail."""
    m = next(m for m in mutations(CALC, operators=["constant"]) if m.function == "double" and m.replacement == "3")
    return RepoTask(
        id="calc/double",
        repo=repo.slug,
        source=repo.source,
        digest=repo.digest,
        file="calc.py",
        mutations=[m.to_dict()],
        fail_to_pass=[F + "test_double", F + "test_quad"],
        covering=[F + "test_double", F + "test_quad", F + "test_double_zero"],
        pass_to_pass=4,
        operators=["constant"],
        order=1,
    )


def test_the_reward_pays_the_failing_share_only_while_nothing_else_breaks(
    fixture_repo: tuple[Path, Repo, Baseline], pool: SandboxPool
) -> None:
    _, repo, base = fixture_repo
    task = _task(repo)
    broken = task.broken_source(CALC)
    assert "return 3 * x" in broken
    assert score(repo, task, base, pool, {"calc.py": CALC}).reward == 1.0
    unfixed = score(repo, task, base, pool, {})
    assert unfixed.reward == 0.0 and unfixed.f2p_passed == 0 and unfixed.p2p_broken == []
    half = score(repo, task, base, pool, {"calc.py": broken.replace("double(double(x))", "4 * x")})
    assert half.reward == 0.5 and half.f2p_passed == 1
    collateral = score(repo, task, base, pool, {"calc.py": CALC.replace('"1.0"', '"2.0"')})
    assert collateral.reward == 0.0 and collateral.f2p_passed == 2 and collateral.p2p_broken == [F + "test_version"]
    for path in ("tests/test_calc.py", "conftest.py", "pyproject.toml", "pkg/tests/helper.py", "docs/usage.rst"):
        got = score(repo, task, base, pool, {path: "def test_nothing():\n    pass\n"})
        assert got.status == "refused" and got.reward == 0.0 and path in got.reason
    gone = score(repo, task, base, pool, {}, deleted=["tests/test_calc.py"])
    assert gone.status == "refused"


def test_a_task_that_fails_the_oracle_check_is_dropped_with_its_reason(
    fixture_repo: tuple[Path, Repo, Baseline], pool: SandboxPool
) -> None:
    """Fail closed: a task whose FAIL_TO_PASS names a test the mutant does not break, or
    whose mutant breaks a test it does not name, is left out of what is saved, and the
    reason is reported (the filter `rlvr repos mine` and `import` save through)."""
    from dataclasses import replace

    from rlvr.cli.repos import _checked

    _, repo, base = fixture_repo
    good = _task(repo)
    passes_anyway = replace(
        good, id="calc/double-names-test_version", fail_to_pass=[*good.fail_to_pass, F + "test_version"]
    )
    breaks_more = replace(good, id="calc/double-hides-test_quad", fail_to_pass=[F + "test_double"])
    kept, failed = _checked(repo, pool, base, [good, passes_anyway, breaks_more])
    assert [t.id for t in kept] == [good.id]
    assert "the unfixed tree passes 1 of 3 failing tests" in failed[passes_anyway.id]
    assert f"breaks tests outside FAIL_TO_PASS: ['{F}test_quad']" in failed[breaks_more.id]


def test_rlvr_repos_mine_saves_only_oracle_checked_tasks(fixture_repo: tuple[Path, Repo, Baseline]) -> None:
    cache = fixture_repo[0]
    cmd = [sys.executable, "-m", "rlvr.cli", "repos", "mine", "calc", "--cache", str(cache), "--cap", "0.5", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["oracle_failed"] == {} and summary["saved"] == summary["kept"] >= 1
    assert len(load_tasks(Path(summary["path"]))) == summary["saved"]
    pairs = subprocess.run([*cmd, "--order", "2", "--per-file", "2"], capture_output=True, text=True, timeout=600)
    assert pairs.returncode == 0, pairs.stderr[-2000:]
    assert json.loads(pairs.stdout)["oracle_failed"] == {}
    orders = sorted({t.order for t in load_tasks(Path(summary["path"]))})
    assert orders == ([1, 2] if json.loads(pairs.stdout)["saved"] else [1])
    bad = subprocess.run([*cmd, "--file", "nope.py"], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "not a covered module of calc: nope.py" in bad.stderr
