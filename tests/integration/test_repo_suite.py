"""A repository's own suite in the sandbox: `rlvr repos add` runs it three times (hash
seeds 0, 1, 2) and splits its tests into passing, flaky (quarantined), failing and
skipped; each run works on its own copy of the tree, which nothing survives, with the
environment read-only; an episode's edits and deletions go over that copy only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.repos import show
from rlvr.repos.suite import BaselineError, load_baseline, repo_pool, run_suite

TESTS = """\
import multiprocessing
import os
import sys

import pytest

from fix import double


def test_double():
    assert double(2) == 4


def test_wrong():
    assert double(2) == 5


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


def test_flaky():  # passes under one hash seed of the three: flaky, like a set-order test
    assert os.environ["PYTHONHASHSEED"] == "1"


def test_nothing_survives_a_run():
    assert not os.path.exists("left.txt")
    with open("left.txt", "w") as f:  # in the run's copy of the tree
        f.write("x")


def test_the_environment_is_read_only():
    with pytest.raises(OSError):
        open(os.path.join(sys.prefix, "written.txt"), "w")


@pytest.mark.parametrize("v, expected", [(k, {"x": k}) for k in {"a", "b", "c", "d", "e", "f"}])
def test_ids_that_follow_set_order(v, expected):  # ids like 'd-expected0': the index moves with the hash seed
    assert expected["x"] == v


def test_multiprocessing_locks():
    with multiprocessing.Lock():
        pass
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("suite-repo")
    src = root / "proj"
    files = {
        "pyproject.toml": '[project]\nname = "fix"\nversion = "0.1"\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\n',
        "fix.py": "def double(x):\n    return 2 * x\n",
        "tests/test_fix.py": TESTS,
    }
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    cache = root / "cache"
    done = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "repos", "add", str(src), "--cache", str(cache), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return cache, json.loads(done.stdout)


def test_the_baseline_splits_the_suite_over_three_runs(repo: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    cache, rec = repo
    b = rec["baseline"]
    f = "tests/test_fix.py::"
    assert b["runs"] == 3 and b["passing"] == 4
    assert b["flaky"] == [f + "test_flaky"] and b["failing"] == [f + "test_wrong"] and b["skipped"] == 1
    assert b["unstable"] >= 6  # each run names the six cases differently
    got = load_baseline(show("fix", cache))
    assert got is not None
    assert sorted(got.passing) == sorted(
        f + t
        for t in (
            "test_double",
            "test_nothing_survives_a_run",
            "test_the_environment_is_read_only",
            "test_multiprocessing_locks",
        )
    )
    assert set(got.durations) == set(got.passing + got.flaky + got.failing + got.skipped + got.unstable)
    assert all("test_ids_that_follow_set_order" in t for t in got.unstable)
    tree = Path(rec["tree"])
    assert not (tree / "left.txt").exists() and not (tree / "written.txt").exists()
    listed = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "repos", "list", "--cache", str(cache)], capture_output=True, text=True
    )
    assert "4 passing, 1 flaky (quarantined), 1 failing, 1 skipped, " in listed.stdout
    assert "with ids that follow the hash seed (quarantined)" in listed.stdout


def test_edits_go_over_a_copy_of_the_tree_and_a_selection_runs_alone(repo: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    cache, _ = repo
    r = show("fix", cache)
    tree = Path(r.tree)
    before = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*"))
    f = "tests/test_fix.py::"
    with repo_pool([r]) as pool:
        broken = run_suite(
            r, pool, tests=[f + "test_double", f + "test_wrong"], files={"fix.py": "def double(x):\n    return x + 3\n"}
        )
        assert broken.status == "ok", broken.error
        assert {t: v.outcome for t, v in broken.verdicts.items()} == {
            f + "test_double": "failed",
            f + "test_wrong": "passed",
        }
        assert "assert 5 == 4" in broken.verdicts[f + "test_double"].message
        gone = run_suite(r, pool, delete=["fix.py"])
        assert gone.status == "error" or all(v.outcome == "error" for v in gone.verdicts.values()), gone.output
        clean = run_suite(r, pool, tests=[f + "test_double"])
        assert clean.outcome(f + "test_double") == "passed"
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == before
    assert (tree / "fix.py").read_text() == "def double(x):\n    return 2 * x\n"


def _add_with_override(src: Path, files: dict[str, str], override: str) -> tuple[Path, dict, list[str]]:  # type: ignore[type-arg]
    """Write a project, add it with an override; (cache, record, the add command line
    up to its --override argument)."""
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    path = src.parent / "override.yaml"
    path.write_text(override)
    cache = src.parent / "cache"
    cmd = [sys.executable, "-m", "rlvr.cli", "repos", "add", str(src), "--cache", str(cache), "--override"]
    done = subprocess.run([*cmd, str(path), "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return cache, json.loads(done.stdout), cmd


def test_a_repository_s_own_pipeline_command_is_the_suite(tmp_path: Path) -> None:
    """`command` + `junit` in the override: the repository's own pipeline (here a
    Makefile target) runs instead of rlvr's pytest line, with the environment's bin/
    first on PATH, and its JUnit XML gives the verdicts."""
    src = tmp_path / "piped"
    files = {
        "pyproject.toml": '[project]\nname = "piped"\nversion = "0.1"\n',
        "Makefile": "test:\n\tmkdir -p build\n"
        "\tpython -m pytest -q -p no:cacheprovider --junitxml=build/report.xml tests\n",
        "piped.py": "def one():\n    return 1\n",
        "tests/test_piped.py": "from piped import one\n\ndef test_one():\n    assert one() == 1\n\n"
        "def test_two():\n    assert one() + one() == 2\n",
    }
    cache, rec, cmd = _add_with_override(src, files, "command: make test\njunit: build/report.xml\n")
    assert rec["override"]["command"] == ["make", "test"] and rec["baseline"]["passing"] == 2
    r = show("piped", cache)
    with repo_pool([r]) as pool:
        broken = run_suite(r, pool, files={"piped.py": "def one():\n    return 2\n"})
        assert {t: v.outcome for t, v in broken.verdicts.items()} == {
            "tests.test_piped::test_one": "failed",  # xunit2: no file attribute, classname::name
            "tests.test_piped::test_two": "failed",
        }
        with pytest.raises(BaselineError, match="tests cannot be selected"):
            run_suite(r, pool, tests=["tests/test_piped.py::test_one"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("command: make test\n")
    done = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "'command' and 'junit' go together" in done.stderr


def _jest(cache: Path) -> Path:
    """jest and jest-junit from npm, installed once per machine (about 11 s, 37 MiB)."""
    where = cache / "jest-29.7.0"
    if not (where / "node_modules" / "jest-junit").is_dir():
        where.mkdir(parents=True, exist_ok=True)
        (where / "package.json").write_text('{"name": "rlvr-test-jest", "version": "1.0.0"}\n')
        cmd = ["npm", "install", "--no-audit", "--no-fund", "jest@29.7.0", "jest-junit@16.0.0"]
        done = subprocess.run(cmd, cwd=where, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    subprocess.run(["chmod", "-R", "a+rX", str(where)], check=True)
    return where / "node_modules"


def test_a_javascript_pipeline_with_jest_s_junit_reporter(tmp_path: Path) -> None:
    """The same `command` path on a JavaScript project: jest from npm (shown read-only by
    the override's `show`) with jest-junit writing the report."""
    import os
    import shutil

    if shutil.which("npm") is None or shutil.which("node") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node and npm are needed (Debian: apt-get install nodejs npm)")
        pytest.skip("node and npm are not installed")
    modules = _jest(Path.home() / ".cache" / "rlvr" / "test-npm")
    src = tmp_path / "sumjs"
    files = {
        "package.json": '{"name": "sumjs", "version": "1.0.0",'
        ' "jest-junit": {"outputDirectory": "build", "outputName": "report.xml", "classNameTemplate": "{filepath}"}}\n',
        "sum.js": "function sum(a, b) { return a + b; }\nmodule.exports = sum;\n",
        "sum.test.js": "const sum = require('./sum');\ntest('adds 1 + 2', () => { expect(sum(1, 2)).toBe(3); });\n"
        "test('adds zeros', () => { expect(sum(0, 0)).toBe(0); });\n",
    }
    jest = f"node {modules}/jest/bin/jest.js --ci --reporters=default --reporters={modules}/jest-junit"
    cache, rec, _ = _add_with_override(src, files, f"command: {jest}\njunit: build/report.xml\nshow: [{modules}]\n")
    assert rec["baseline"]["passing"] == 2
    r = show(rec["slug"], cache)
    with repo_pool([r]) as pool:
        broken = run_suite(r, pool, files={"sum.js": "function sum(a, b) { return a - b; }\nmodule.exports = sum;\n"})
    assert broken.status == "ok", broken.error + broken.output
    assert {t: v.outcome for t, v in broken.verdicts.items()} == {
        "sum.test.js::adds 1 + 2": "failed",
        "sum.test.js::adds zeros": "passed",
    }
    assert "Expected: 3" in broken.verdicts["sum.test.js::adds 1 + 2"].message
