"""The repository agent: a multi-turn episode on a real repository it cannot read whole.

Each reply calls one tool (rlvr.repos.tools) as a JSON object, e.g.
`{"tool": "read", "path": "toolz/itertoolz.py", "start": 40, "end": 90}`; the tool's
answer comes back as the next user message, truncated to the task's observation budget
with a note saying so, and an empty answer says it is empty. `submit` ends the episode:
the repository's whole suite judges the tree (rlvr.repos.reward.score: the FAIL_TO_PASS
share, 0 when a PASS_TO_PASS test breaks). Held-out FAIL_TO_PASS tests are deselected
from every `run_tests`, so their names and output never reach the agent; they count at
submit like the others.

Budgets, per task (`tests.budget`): tool calls, wall seconds since the episode started
(generation included) and observation characters. An episode that runs out of calls or
time before it submits ends with reward 0 and `info["cut"]` set; the runner records it as
finish_reason "budget" and `algo.compact_filter` masks it from the loss (DeepSWE's compact
filtering), so the policy is not taught that a long, careful episode is a wrong one.

The domain is `repo_agent`. This module sits above the environments (it needs the
repository cache and the suite runner), so a run names it as a plugin
(`plugins: [rlvr.repos.agent]`), which registers the domain before tasks are loaded.
Tasks come from `rlvr repos tasks NAME` (`episode_task` here).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, register_env
from rlvr.envs.toolcalls import tool_calls
from rlvr.repos import tools
from rlvr.repos.mine import RepoTask
from rlvr.repos.reference import reference_episode, unseen_paths
from rlvr.repos.reward import score, unfixed_files
from rlvr.repos.source import RepoError
from rlvr.repos.store import Repo, show
from rlvr.repos.suite import Baseline, load_baseline, repo_pool
from rlvr.sandbox import SandboxPool
from rlvr.types import RewardBreakdown, Task

DOMAIN = "repo_agent"
TIERS = (0, 1, 2)
DEFAULT_BUDGET = {"calls": 30, "wall_s": 1800.0, "observation_chars": 4000}
TOOL_NAMES = ("list", "read", "search", "edit", "run_tests", "submit")

SYSTEM = """\
You fix bugs in a Python repository that you cannot see whole. Work with tools: each reply \
calls exactly one tool with one JSON object, and the tool's answer comes back to you.
{"tool": "list", "path": ".", "depth": 2}          list files under a directory
{"tool": "read", "path": "pkg/mod.py", "start": 1, "end": 80}   read lines (at most 120)
{"tool": "search", "pattern": "def name", "path": ".", "glob": "*.py"}   regular expression
{"tool": "edit", "path": "pkg/mod.py", "old": "exact text", "new": "replacement"}
{"tool": "run_tests", "tests": ["tests/test_mod.py::test_case"]}   (no tests: the relevant ones)
{"tool": "submit"}                                  when the failing tests pass
Tests and test configuration cannot be changed. An edit must keep the file parsing."""


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    params = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


_PATH = {"type": "string", "description": "relative to the repository root"}
TOOL_SCHEMAS = [
    _fn("list", "List the files under a directory.", {"path": _PATH, "depth": {"type": "integer"}}, []),
    _fn("read", "Read numbered lines of a file (at most 120 a call).",
        {"path": _PATH, "start": {"type": "integer"}, "end": {"type": "integer"}}, ["path"]),
    _fn("search", "Lines matching a regular expression, as path:line: text.",
        {"pattern": {"type": "string"}, "path": _PATH, "glob": {"type": "string"}}, ["pattern"]),
    _fn("edit", "Replace the one occurrence of `old` in a file by `new`.",
        {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}}, ["path", "old", "new"]),
    _fn("run_tests", "Run tests (node ids or files; none: the tests relevant to the task).",
        {"tests": {"type": "array", "items": {"type": "string"}}}, []),
    _fn("submit", "Submit the repository as it is now; the episode ends.", {}, []),
]  # fmt: skip
"""The tools as function schemas, for a chat template that renders tools (the runner
passes them); the JSON format in SYSTEM is the same calls written by hand."""


@dataclass(frozen=True)
class Budget:
    calls: int
    wall_s: float
    observation_chars: int

    @classmethod
    def from_task(cls, raw: Any) -> Budget:
        data = {**DEFAULT_BUDGET, **(raw or {})}
        if set(data) != set(DEFAULT_BUDGET):
            raise ValueError(
                f"unknown keys {sorted(set(data) - set(DEFAULT_BUDGET))}; valid: calls, wall_s, observation_chars"
            )
        calls, wall, chars = data["calls"], data["wall_s"], data["observation_chars"]
        if not (isinstance(calls, int) and calls >= 1 and isinstance(chars, int) and chars >= 200):
            raise ValueError("calls must be an integer >= 1 and observation_chars an integer >= 200")
        if not isinstance(wall, int | float) or wall <= 0:
            raise ValueError("wall_s must be a positive number of seconds")
        return cls(calls, float(wall), chars)


def held_out_tests(task: RepoTask, seed: int = 0) -> list[str]:
    """A third of a task's FAIL_TO_PASS tests (rounded down), drawn by seed: never named
    to the agent, never run before submit. A task with one or two failing tests holds none
    out (the agent must see one failing test to start from)."""
    n = len(task.fail_to_pass) // 3
    return sorted(random.Random(f"{seed}:{task.id}").sample(sorted(task.fail_to_pass), n)) if n else []


def prompt(repo: Repo, task: RepoTask, tier: int, held_out: Sequence[str], issue: str = "") -> str:
    """The symptom, never the diff. Tier 0: the visible failing tests with their failure
    messages; tier 1: their names only; tier 2: an issue text (required)."""
    visible = [t for t in task.fail_to_pass if t not in set(held_out)]
    head = f"Repository: {repo.name} (at the repository root; tests run with pytest).\n"
    if tier == 2:
        if not issue.strip():
            raise ValueError(f"task {task.id}: tier 2 needs an issue text")
        return head + f"An issue was reported:\n\n{issue.strip()}\n\nFind the bug and fix it."
    lines = [head + "These tests fail and should pass:"]
    for t in visible:
        lines.append(f"- {t}")
        if tier == 0 and task.messages.get(t):
            lines.append("  " + tools.failure_excerpt(task.messages[t], 6).replace("\n", "\n  "))
    lines.append("Find the bug in the library (not in the tests), fix it, check with run_tests, then submit.")
    return "\n".join(lines)


def episode_task(
    repo: Repo,
    task: RepoTask,
    tier: int = 0,
    seed: int = 0,
    budget: dict[str, Any] | None = None,
    issue: str = "",
    cache: str | None = None,
) -> Task:
    """A mined task as a training task of the `repo_agent` domain."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier}")
    held = held_out_tests(task, seed)
    spec: dict[str, Any] = {
        "format": DOMAIN,
        "repo": repo.slug,
        "task": task.to_dict(),
        "held_out": held,
        "tier": tier,
        "budget": {**DEFAULT_BUDGET, **(budget or {})},
    }
    if cache:
        spec["cache"] = cache
    return Task(
        id=f"{task.id}@t{tier}",
        domain=DOMAIN,
        prompt=prompt(repo, task, tier, held, issue or task.issue),
        tests=spec,
        difficulty=1 + tier + (task.order - 1),
        metadata={"repo": repo.slug, "file": task.file, "operators": task.operators},
    )


_LOCK = threading.Lock()
_OPEN: dict[tuple[str, str], tuple[Repo, Baseline, SandboxPool]] = {}


def resources(slug: str, cache: str | None) -> tuple[Repo, Baseline, SandboxPool]:
    """The repository's record, its baseline and a sandbox pool showing it: opened once a
    process (the pool is closed when the process exits)."""
    key = (slug, cache or "")
    with _LOCK:
        if key not in _OPEN:
            try:
                repo = show(slug, Path(cache) if cache else None)
            except RepoError as e:
                raise RepoError(
                    f"{e}: build it with rlvr repos add --bundled (bundled:repos) or rlvr repos add SOURCE"
                ) from None
            base = load_baseline(repo)
            if base is None:
                raise RuntimeError(f"{slug} has no baseline for its tree and environment: run rlvr repos add again")
            _OPEN[key] = (repo, base, repo_pool([repo], 2))
        return _OPEN[key]


@register_env(DOMAIN)
class RepoAgentEnv:
    components = ()
    tools = TOOL_SCHEMAS

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    @staticmethod
    def check_task(task: Task) -> None:
        t = task.tests
        if t.get("format") != DOMAIN:
            raise ValueError(f"task {task.id}: field 'tests.format' must be '{DOMAIN}'")
        if not isinstance(t.get("repo"), str) or not t["repo"]:
            raise ValueError(f"task {task.id}: field 'tests.repo' must name a cached repository (its slug)")
        try:
            rt = RepoTask.from_dict(t.get("task") or {})
        except TypeError as e:
            raise ValueError(f"task {task.id}: field 'tests.task' is not a mined task: {e}") from None
        if not rt.fail_to_pass:
            raise ValueError(f"task {task.id}: field 'tests.task.fail_to_pass' is empty")
        held = t.get("held_out", [])
        if not isinstance(held, list) or not set(held) <= set(rt.fail_to_pass) or len(held) >= len(rt.fail_to_pass):
            raise ValueError(f"task {task.id}: field 'tests.held_out' must be some (not all) of its fail_to_pass tests")
        if t.get("tier", 0) not in TIERS:
            raise ValueError(f"task {task.id}: field 'tests.tier' must be one of {TIERS}")
        try:
            Budget.from_task(t.get("budget"))
        except ValueError as e:
            raise ValueError(f"task {task.id}: field 'tests.budget': {e}") from None

    @staticmethod
    def reference_turns(task: Task) -> list[str] | None:
        """The reference fix as an episode, one tool call a reply (rlvr.repos.reference):
        read and edit each changed region, run the tests, submit. The supervised stage
        renders it with the environment's answers between the calls; there is no
        one-reply reference, so the task check has none to score."""
        calls = reference_episode(task.tests)
        return [json.dumps(c) for c in calls] if calls else None

    @staticmethod
    def reference_problem(messages: list[dict[str, Any]]) -> str:
        """Why a played reference episode must not be trained on ("" when it may): one
        that reads or edits a file no earlier message showed teaches guessing paths."""
        return "that name a file before any answer showed it" if unseen_paths(messages) else ""

    @staticmethod
    def preflight(tasks: list[Task]) -> None:
        """Every repository the tasks name is built here, with its suite's baseline (read
        from the cache, nothing run): a run answers in a second instead of at its first
        episode, after the model has loaded."""
        missing = []
        for slug, cache in sorted({(str(t.tests["repo"]), str(t.tests.get("cache") or "")) for t in tasks}):
            try:
                repo = show(slug, Path(cache) if cache else None)
            except RepoError:
                missing.append(slug)
                continue
            if load_baseline(repo) is None:
                missing.append(f"{slug} (no baseline for its tree)")
        if missing:
            raise ValueError(
                f"repo_agent: not built here: {', '.join(missing)}; build them with rlvr repos add --bundled "
                "(bundled:repos) or rlvr repos add SOURCE"
            )

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        t = task.tests
        self.task = task
        self.rtask = RepoTask.from_dict(t["task"])
        self.held_out: list[str] = list(t.get("held_out", []))
        self.budget = Budget.from_task(t.get("budget"))
        self.repo, self.base, self.pool = await asyncio.to_thread(resources, t["repo"], t.get("cache"))
        if self.repo.digest != self.rtask.digest:
            raise RuntimeError(f"task {task.id} was mined from another tree of {self.repo.slug} than the cached one")
        self.ws = tools.Workspace(self.repo, files=unfixed_files(self.repo, self.rtask))
        self.calls = 0
        self.started = time.monotonic()
        self.tool_s: dict[str, list[float]] = {}
        self.errors = 0
        system = task.metadata.get("system", self.settings.system_by_domain.get(DOMAIN, SYSTEM))
        return [{"role": "system", "content": str(system)}, {"role": "user", "content": task.prompt}]

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        calls, problems = tool_calls(reply)
        call = calls[0] if calls else None
        name = str(call.get("tool")) if call else ""
        took = 0.0
        if call is None:
            why = f" ({problems[0]})" if problems else ""
            text, ok = f'No tool call found{why}. Reply with one JSON object, e.g. {{"tool": "list"}}.', False
        elif name == "submit":
            return await self._submit()
        elif name not in TOOL_NAMES:
            text, ok = f"Unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}.", False
        else:
            t0 = time.perf_counter()
            text, ok = await asyncio.to_thread(self._call, name, call)
            took = time.perf_counter() - t0
        # the state changes only now: a step that raised above leaves the episode as it was
        self.calls += 1
        self.errors += not ok
        if call is not None and name in TOOL_NAMES:
            self.tool_s.setdefault(name, []).append(took)
        if len(calls) > 1:
            text = f"[one tool call a reply: ran the first of {len(calls)}]\n" + text
        cut = self._cut()
        if cut:
            return StepResult([], self._reward(0.0, {"cut": cut}), done=True, info={"cut": cut, "tool": name})
        return StepResult(
            [{"role": "user", "content": self._observation(name, text)}],
            self._reward(0.0, {}),
            done=False,
            info={"tool": name, "tool_s": took, "ok": ok},
        )

    def _call(self, name: str, call: dict[str, Any]) -> tuple[str, bool]:
        try:
            if name == "list":
                return tools.list_files(self.ws, self.pool, call)[0], True
            if name == "read":
                return tools.read_file(self.ws, self.pool, call)[0], True
            if name == "search":
                return tools.search(self.ws, self.pool, call)[0], True
            if name == "edit":
                return tools.edit(self.ws, self.base, call), True
            selection = tools.check_selection(call.get("tests")) or self._visible_covering()
            text, run = tools.run_tests(self.ws, self.pool, self.base, selection, self.held_out)
            if run.status == "sandbox_error":
                raise RuntimeError(f"sandbox error: {run.error}")  # infrastructure: the runner retries
            return text, True
        except tools.ToolError as e:
            return f"Error: {e}", False

    def _visible_covering(self) -> list[str]:
        held = set(self.held_out)
        return [t for t in self.rtask.covering if t not in held]

    async def _submit(self) -> StepResult:
        got = await asyncio.to_thread(
            score, self.repo, self.rtask, self.base, self.pool, self.ws.edits(), sorted(self.ws.deleted)
        )
        if got.status == "run_failed" and got.reason.startswith("sandbox_error"):
            raise RuntimeError(f"sandbox error at submit: {got.reason}")
        self.calls += 1
        details = {"status": got.status, "f2p_passed": got.f2p_passed, "f2p_total": got.f2p_total}
        details.update(p2p_broken=len(got.p2p_broken), reason=got.reason[:500], submit_s=got.wall_s)
        return StepResult([], self._reward(got.reward, details), done=True, info={"tool": "submit"})

    def _cut(self) -> str:
        if self.calls >= self.budget.calls:
            return "calls"
        if time.monotonic() - self.started >= self.budget.wall_s:
            return "wall"
        return ""

    def _observation(self, name: str, text: str) -> str:
        text = text if text.strip() else "(the tool printed nothing)"
        limit = self.budget.observation_chars
        if len(text) > limit:
            text = text[:limit] + f"\n[cut at {limit} characters of {len(text)}: ask for less, e.g. a smaller range]"
        left = self.budget.calls - self.calls
        return f"[{name or 'no tool'}]\n{text}\n[{left} tool call{'s' * (left != 1)} left]"

    def _reward(self, value: float, details: dict[str, Any]) -> RewardBreakdown:
        info = {
            "calls": self.calls,
            "tool_errors": self.errors,
            "edited": sorted(set(self.ws.edited)),
            "tool_s": {k: [round(x, 4) for x in v] for k, v in self.tool_s.items()},
            **details,
        }
        return RewardBreakdown(value, {"completion": value}, info)
