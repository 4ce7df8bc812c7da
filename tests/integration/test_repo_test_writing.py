"""Test-writing tasks from a real repository (rlvr/repos/test_writing.py): toolz 1.2.0 from
the registry (the session's `toolz_repo`), its bundled mined bugs as the paid mutants,
every program loading the package from memory in the plain sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlvr.config import load_config
from rlvr.envs.scoring import score_completion
from rlvr.envs.test_writing import TestWritingEnv
from rlvr.repos.test_writing import build_tasks, mined_tasks
from rlvr.tasks import load_tasks

CFG = load_config()
GET = "twrepo/toolz-1.2.0/toolz.itertoolz:get"
KEY = "twrepo/toolz-1.2.0/toolz.sandbox.core:EqualityHashKey"


@pytest.fixture(scope="module")
def toolz_tasks(toolz_repo: Any) -> dict[str, Any]:
    _, repo = toolz_repo
    tasks, why = build_tasks(repo, mined_tasks(repo, None, load_tasks("bundled:repos")))
    return {"tasks": {t.id: t for t in tasks}, "why": why}


def test_public_functions_changed_by_mined_bugs_become_tasks(toolz_tasks: dict[str, Any]) -> None:
    tasks, why = toolz_tasks["tasks"], toolz_tasks["why"]
    assert len(tasks) >= 25 and GET in tasks and KEY in tasks
    assert why["bug not in a public top-level function or class"] > 0  # private helpers, __getattr__
    get = tasks[GET]
    TestWritingEnv.check_task(get)
    assert "def get(ind, seq, default=no_default):" in get.prompt and "from toolz.itertoolz import get" in get.prompt
    assert get.metadata["show_code"] and get.metadata["repo"] == "toolz-1.2.0"
    assert get.metadata["shown_code"].startswith("def get(ind, seq, default=no_default):")
    assert {t.metadata["split"] for t in tasks.values()} == {"train", "eval"}
    assert all(m["family"] == "train" for t in tasks.values() for m in t.tests["mutants"])


def scored(task: Any, reply: str) -> tuple[float, dict[str, Any]]:
    t = score_completion(task, f"```python\n{reply}```", CFG)
    assert t.reward is not None
    return t.reward.total, t.reward.details["completion"]


def test_tests_are_paid_by_the_project_s_own_bug_they_catch(toolz_tasks: dict[str, Any]) -> None:
    """get's mined bug returns None for a missing index instead of the default: an assert
    on the default catches it; one on a present index passes on both; a wrong value costs."""
    task = toolz_tasks["tasks"][GET]
    total, details = scored(task, "assert get(0, [1, 2]) == 1\n")
    assert total == 0.0 and details["reason"] == "scored" and details["killed"] == 0
    total, details = scored(task, "assert get(0, [1, 2]) == 1\nassert get(5, [1, 2], default='x') == 'x'\n")
    assert details["solved"] and total == pytest.approx(1.05)
    total, details = scored(task, "assert get(0, [1, 2]) == 2\n")
    assert total == -0.5 and details["reason"] == "fails_reference"
    # the rest of the project imports as usual
    total, details = scored(task, "from toolz import first\nassert get(5, [1], default=first([3])) == 3\n")
    assert details["solved"]


def test_a_class_s_task_pays_for_the_bugs_in_its_methods(toolz_tasks: dict[str, Any]) -> None:
    """EqualityHashKey's 7 bundled bugs sit in __init__, __eq__, __hash__ and __str__. Its
    str alone catches the one in __str__ (1/7 + 0.1); asserts on equality, inequality and
    hashes catch the rest. The prompt shows the class and says to construct it."""
    task = toolz_tasks["tasks"][KEY]
    assert len(task.tests["mutants"]) == 7 and "construct it by name" in task.prompt
    assert "class EqualityHashKey:" in task.prompt and "def __eq__(self, other):" in task.prompt
    total, details = scored(task, "assert str(EqualityHashKey(None, 1)) == '=1='\n")
    assert details["killed"] == 1 and total == pytest.approx(1 / 7 + 0.1)
    suite = (
        "assert str(EqualityHashKey(None, 1)) == '=1='\n"
        "assert EqualityHashKey(None, [1]) == EqualityHashKey(None, [1])\n"
        "assert hash(EqualityHashKey(None, [1])) == hash(EqualityHashKey(None, [1]))\n"
        "assert EqualityHashKey(None, [1]) != EqualityHashKey(None, [2])\n"
    )
    total, details = scored(task, suite)
    assert details["solved"] and details["killed"] == 7 and total == pytest.approx(1.075)


def test_no_test_finds_the_package_s_source_after_it_loaded(toolz_tasks: dict[str, Any]) -> None:
    """The import hook is gone and its sources dropped before any test runs, so a test
    that looks for them (to compare the loaded code with the shown) finds nothing: these
    pass on the function and on every bug, or fail on the function. (Reading
    sys.meta_path is also a finding of the static guard.)"""
    task = toolz_tasks["tasks"][GET]
    for probe in (
        "import sys\nassert get(1, [1, 2]) == 2 and not any(hasattr(f, 'files') for f in sys.meta_path)\n",
        "assert get(1, [1, 2]) == 2 and '_rlvr_files' not in dir()\n",
    ):
        total, details = scored(task, probe)
        assert details["reason"] == "scored" and details["killed"] == 0, (probe, details)
    total, details = scored(task, "import sys\nassert get(1, [1, 2]) == 2 and sys.meta_path[0].files\n")
    assert details["reason"] == "fails_reference" and total <= -0.5


def test_comparing_with_a_copy_of_the_shown_function_is_a_finding(toolz_tasks: dict[str, Any]) -> None:
    """A copy of get (renamed, its helpers imported) tells the function from every bug
    without pinning a value: flagged and paid nothing."""
    task = toolz_tasks["tasks"][GET]
    copy = task.metadata["shown_code"].replace("def get(", "def shown_get(")
    check = "assert get(5, [1], 'x') == shown_get(5, [1], 'x')"
    reply = f"from toolz.itertoolz import no_default\nimport operator\n{copy}\n{check}\n"
    t = score_completion(task, f"```python\n{reply}```", CFG)
    assert t.reward is not None and "copies_shown_code" in t.reward.flags and t.reward.total <= 0.0


def test_a_package_the_sandbox_s_python_has_is_skipped(toolz_repo: Any) -> None:
    """A test could import the sandbox's own copy of an installed package and compare:
    toolz's tasks are rebuilt as if toolz were installed there (the name of a module the
    sandbox has), and none is kept."""
    from rlvr.repos import test_writing as tw

    _, repo = toolz_repo
    real = tw._installed
    try:
        tw._installed = lambda packages: {"toolz"}  # type: ignore[assignment]
        tasks, why = build_tasks(repo, mined_tasks(repo, None, load_tasks("bundled:repos")))
    finally:
        tw._installed = real  # type: ignore[assignment]
    assert not [t for t in tasks if t.id.startswith("twrepo/toolz-1.2.0/toolz.")]
    assert why["task of a package the sandbox's Python has installed"] >= 25
    assert tw._installed(["json", "toolz", "no_such_package_for_rlvr"]) == {"json"}


def test_the_cli_writes_them_and_says_what_it_skipped(toolz_repo: Any, tmp_path: Path) -> None:
    cache, _ = toolz_repo
    out = tmp_path / "tw.jsonl"
    cmd = [sys.executable, "-m", "rlvr.cli", "repos", "test-writing", "toolz", "--cache", str(cache), "--out", str(out)]
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["tasks"] == len(load_tasks(str(out))) >= 25
    assert got["skipped"]["bug not in a public top-level function or class"] > 0
    bad = subprocess.run([*cmd[:-2], "--out", str(out), "--max-mutants", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip() == "rlvr: error: --max-mutants must be at least 1, got 0"
