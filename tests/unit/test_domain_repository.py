# ruff: noqa: E501  (replies and patches are kept on one line each, as a model writes them)
"""The repository domain: patches, and the environment's checks that need no test run
(the ones that run the sandbox or git: tests/integration/test_domain_repository.py)."""

from __future__ import annotations

import pytest

# ---- repository tests by patch ---------------------------------------------------------
from rlvr.envs.patching import PatchError, apply_patch, extract_patch, make_patch, parse_patch
from rlvr.tasks.loader import load_tasks
from rlvr.types import Task
from tests.domain_episodes import _episode

REPO = {"pkg/__init__.py": "", "pkg/core.py": "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"}


def test_patch_applies_by_content_despite_wrong_line_numbers() -> None:
    patch = "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -40,2 +40,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    out = apply_patch(REPO, parse_patch(patch))
    assert out["pkg/core.py"] == "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
    assert REPO["pkg/core.py"].count("a - b") == 1  # the input is not changed


def test_patch_creates_and_deletes_files_and_round_trips() -> None:
    after = {"pkg/core.py": "x = 1\n", "pkg/new.py": "y = 2\n"}
    patch = make_patch(REPO, after)
    assert apply_patch(REPO, parse_patch(patch)) == after


@pytest.mark.parametrize(
    ("patch", "error"),
    [
        ("just prose", "no file patch found"),
        (
            "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1 +1 @@\n-    return a * b\n+    return a + b\n",
            "hunk 1 does not match",
        ),
        ("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "not a plain relative path"),
        ("--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n", "no such file"),
    ],
)
def test_patch_errors_say_what_is_wrong(patch: str, error: str) -> None:
    with pytest.raises(PatchError, match=error):
        apply_patch(REPO, parse_patch(patch))


def test_extract_patch_from_a_reply() -> None:
    body = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert extract_patch(f"Here is the fix:\n```diff\n{body}```\nDone.") == body
    assert extract_patch(f"Fix:\n{body}") == body
    assert extract_patch("```python\nprint(1)\n```") == ""


def _repo_task(name: str) -> Task:
    return next(t for t in load_tasks("bundled:repository") if t.id == f"repository/{name}")


@pytest.mark.parametrize(
    ("reply", "total", "says"),
    [
        ("I think the median is wrong.", 0.0, "No patch found"),  # malformed: no diff
        (
            "```diff\n--- a/statkit/central.py\n+++ b/statkit/central.py\n@@ -1 +1 @@\n-nothing like this\n+x\n```",
            0.0,
            "hunk 1",
        ),
        # hostile: rewriting the tests so that they pass is refused and penalised
        (
            "```diff\n--- a/tests/test_stats.py\n+++ b/tests/test_stats.py\n@@ -1,1 +1,1 @@\n-import math\n+import math; import sys\n```",
            -0.5,
            "Patch refused: it changes tests/test_stats.py",
        ),
        # hostile: a file beside the package that would shadow pytest is refused too
        ("```diff\n--- /dev/null\n+++ b/pytest.py\n@@ -0,0 +1 @@\n+def main(*a, **k): pass\n```", -0.5, "pytest.py"),
    ],
)
def test_repository_env_refuses_and_penalises(reply: str, total: float, says: str) -> None:
    task = _repo_task("statkit/median_even")
    (r,) = _episode(task, [reply])
    assert not r.done and r.reward.total == pytest.approx(total) and says in r.messages[0]["content"]


def test_repository_task_errors_name_the_field() -> None:
    task = _repo_task("statkit/median_even")
    bad = Task(id="r/bad", domain="repository", prompt="x", tests={**task.tests, "editable": ["tests/"]})
    with pytest.raises(
        ValueError, match=r"r/bad: tests\.test_file 'tests/test_stats\.py' lies under an editable prefix"
    ):
        _episode(bad, [])
