"""Repository tests: the model fixes a small repository by patch; its own pytest suite is
the reward.

The repository is data: `tests.files` (path -> text), or `tests.repo` naming a local git
repository (`{"path": ..., "rev": "HEAD"}`, read with `git ls-files` / `git show` when the
episode starts). The reply carries a unified diff (see `rlvr.envs.patching`); it may only
touch paths under `tests.editable` (e.g. `["textkit/"]`). A patch that touches anything
else — the tests above all — is refused whole, and the attempt is penalised. An accepted
patch is applied to the episode's copy of the repository (patches accumulate over
turns), and `tests.test_file` runs under pytest in the sandbox with the rest of the
repository beside it (the test file always in the task's original version).

Reward: `completion` = the share of the target tests that pass (`expected_tests` of
them, counted from the file unless given), minus 0.5 for a refused patch, clipped to
[-1, 1]; `protected` records the penalty apart. On failure the step returns feedback:
the patch problem, or the failing tests with pytest's messages.

Task tests: `{"format": "repository", "files" | "repo", "editable": [...], "test_file":
"tests/test_x.py", "expected_tests": N?}`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.envs.patching import PatchError, apply_patch, extract_patch, parse_patch
from rlvr.types import ExecutionResult, RewardBreakdown, Task, TestStatus

PROTECTED_PENALTY = 0.5


def read_git_repo(path: str, rev: str = "HEAD") -> dict[str, str]:
    """Every text file of a git repository at a revision."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", path, *args], capture_output=True, text=True, check=True).stdout

    try:
        names = [n for n in git("ls-tree", "-r", "--name-only", rev).splitlines() if n]
        files = {}
        for n in names:
            try:
                files[n] = git("show", f"{rev}:{n}")
            except UnicodeDecodeError:
                continue  # binary files are not part of what a patch can touch
        return files
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        raise ValueError(f"cannot read git repository {path!r} at {rev!r}: {e}") from None


def validate_spec(task: Task) -> dict[str, str]:
    """Check a repository task and return its files."""
    t = task.tests
    if t.get("format") != "repository":
        raise ValueError(f"task {task.id}: repository tasks need tests with 'format': 'repository'")
    if isinstance(t.get("repo"), dict) and "path" in t["repo"]:
        files = read_git_repo(str(t["repo"]["path"]), str(t["repo"].get("rev", "HEAD")))
    elif isinstance(t.get("files"), dict):
        files = {str(k): str(v) for k, v in t["files"].items()}
    else:
        raise ValueError(f"task {task.id}: tests needs 'files' (path -> text) or 'repo' ({{'path': ..., 'rev': ...}})")
    editable = t.get("editable")
    if not isinstance(editable, list) or not editable or not all(isinstance(e, str) and e for e in editable):
        raise ValueError(f"task {task.id}: tests.editable must be a non-empty list of path prefixes")
    test_file = t.get("test_file")
    if test_file not in files:
        raise ValueError(f"task {task.id}: tests.test_file {test_file!r} is not a file of the repository")
    if is_editable(str(test_file), editable):
        raise ValueError(f"task {task.id}: tests.test_file {test_file!r} lies under an editable prefix")
    return files


def is_editable(path: str, editable: list[str]) -> bool:
    return any(path == e or path.startswith(e if e.endswith("/") else e + "/") for e in editable)


@register_env("repository")
class RepositoryEnv:
    components = ("tests", "protected")  # reward terms may name them

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None
        self.files: dict[str, str] = {}
        self.refused = 0

    @staticmethod
    def check_task(task: Task) -> None:
        validate_spec(task)

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.files = await asyncio.to_thread(validate_spec, task)
        self.task = task
        self.refused = 0
        return opening_messages(task, self.settings)

    def suite(self, files: dict[str, str]) -> dict[str, Any]:
        assert self.task is not None
        t = self.task.tests
        test_file = str(t["test_file"])
        source = self._pristine_tests()
        others = {p: x for p, x in files.items() if p != test_file and not p.startswith(".git/")}
        spec: dict[str, Any] = {"format": "pytest", "source": source, "files": others}
        if t.get("expected_tests") is not None:
            spec["expected_tests"] = int(t["expected_tests"])
        return spec

    def _pristine_tests(self) -> str:
        assert self.task is not None
        t = self.task.tests
        if "files" in t:
            return str(t["files"][t["test_file"]])
        return read_git_repo(str(t["repo"]["path"]), str(t["repo"].get("rev", "HEAD")))[str(t["test_file"])]

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        t = self.task.tests
        text = extract_patch(reply)
        if not text:
            return self._feedback("No patch found: answer with a unified diff in a ```diff code block.", None)
        try:
            patches = parse_patch(text)
            outside = sorted({p.path for p in patches} | {str(p.old_path) for p in patches if p.old_path})
            outside = [p for p in outside if not is_editable(p, list(t["editable"]))]
            if outside:
                self.refused += 1
                msg = f"Patch refused: it changes {', '.join(outside)}; only {', '.join(t['editable'])} may be edited."
                return self._feedback(msg, None)
            files = apply_patch(self.files, patches)
        except PatchError as e:
            return self._feedback(f"The patch could not be applied: {e}", None)
        # the suite is one pytest session: the run's whole time, not one test's (sandbox.test_timeout_s)
        whole = dataclasses.replace(self.settings.limits, test_timeout_s=None)
        result = await asyncio.to_thread(self.settings.execute, "", self.suite(files), "python", whole)
        self.files = files  # committed only once the run came back
        return self._feedback(None, result)

    def _feedback(self, problem: str | None, result: ExecutionResult | None) -> StepResult:
        share = result.passed / result.total if result is not None and result.total else 0.0
        penalty = -PROTECTED_PENALTY * self.refused
        total = max(-1.0, min(1.0, share + penalty))
        details: dict[str, Any] = {"refused_patches": self.refused}
        if result is not None:
            details.update(passed=result.passed, total=result.total, status=result.status.value)
        reward = RewardBreakdown(total, {"completion": total, "tests": share, "protected": penalty}, details)
        solved = result is not None and result.total > 0 and result.passed == result.total
        if solved:
            return StepResult([], reward, done=True, execution=result)
        if problem is None:
            assert result is not None
            problem = pytest_summary(result, str(self.task.tests["test_file"]) if self.task else "tests")
        limit = self.settings.feedback_chars
        text = problem if len(problem) <= limit else problem[: limit - 20] + "\n[... trimmed]"
        text += "\nAnswer with a unified diff against the repository as it is now."
        return StepResult([{"role": "user", "content": text}], reward, done=False, execution=result)


def pytest_summary(result: ExecutionResult, test_file: str) -> str:
    """pytest's verdict as a developer reads it: the counts, then each failing test with
    its assertion line, under the test file's name in the repository."""
    lines = [f"{result.total - result.passed} failed, {result.passed} passed ({result.status.value})"]
    for x in result.tests:
        if x.status is TestStatus.PASSED:
            continue
        msg = x.message.strip().splitlines()
        errs = [m.strip() for m in msg if m.startswith("E ")]
        why = errs[0][1:].strip() if errs else (msg[-1] if msg else "")
        lines.append(f"{x.status.value} {x.name.replace('test_solution.py', test_file)}: {why[:200]}")
    if result.error:
        lines.append(result.error.strip()[-600:])
    return "\n".join(lines)
