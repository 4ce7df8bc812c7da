# ruff: noqa: E501  (replies and patches are kept on one line each, as a model writes them)
"""The repository domain run for real: patches judged by the repository's tests in the
sandbox, a real git repository read, the bundled set regenerated and scored."""

from __future__ import annotations

import json

import pytest

from rlvr.tasks.loader import BUNDLED_DIR
from rlvr.types import Task
from tests.domain_episodes import _episode
from tests.unit.test_domain_repository import REPO, _repo_task


def test_repository_env_rewards_and_feedback() -> None:
    task = _repo_task("statkit/two_bugs")  # median parity and value_range both broken
    half = "```diff\n--- a/statkit/central.py\n+++ b/statkit/central.py\n@@ -13,3 +13,3 @@\n-    if n % 2 == 0:\n+    if n % 2:\n```"
    rest = "```diff\n--- a/statkit/spread.py\n+++ b/statkit/spread.py\n@@ -20 +20 @@\n-    return max(xs) - max(xs)\n+    return max(xs) - min(xs)\n```"
    first, second = _episode(task, [half, rest])  # patches accumulate over turns
    assert not first.done and first.reward.total == pytest.approx(5 / 6)
    assert "FAILED tests/test_stats.py::test_value_range: assert 0 == 9" in first.messages[0]["content"]
    assert second.done and second.reward.total == 1.0


def test_repository_env_reads_a_real_git_repository(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    files = {**REPO, "tests/test_core.py": "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    task = Task(
        id="repo/git",
        domain="repository",
        prompt="fix add",
        tests={
            "format": "repository",
            "repo": {"path": str(tmp_path)},
            "editable": ["pkg/"],
            "test_file": "tests/test_core.py",
        },
    )
    (wrong,) = _episode(
        task,
        [
            "```diff\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a * b\n```"
        ],
    )
    assert wrong.reward.total == 0.0 and "assert 6 == 5" in wrong.messages[0]["content"]
    (good,) = _episode(
        task,
        [
            "```diff\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n```"
        ],
    )
    assert good.done and good.reward.total == 1.0


@pytest.mark.regeneration
def test_bundled_repository_tasks_regenerate_and_their_patches_score_full() -> None:
    from rlvr.tasks.generators import repogen

    tasks = repogen.build()
    lines = (BUNDLED_DIR / "repository.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert {t.difficulty for t in tasks} == {1, 2, 3} and len(tasks) == 16
    repogen.verify(tasks)
