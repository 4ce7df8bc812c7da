"""A scripted policy for the repository agent: evidence that a task can be solved through
the tools alone, and the yardstick for tool latency and episodes per hour.

It works as a developer with a stack trace would: run the tests, take the deepest frame
of a library file in the failures (pytest's short tracebacks name `path:line`), read the
lines around it, and fix them. What it cannot do is reason, so its fix is the task's
reference (the inverse of the mutation, found by its text in the window it read): it
shows the environment's tools reach and repair the bug, not that a policy can think of
the fix. Where no library frame appears (a wrong value returned, caught only by an
assertion in the test), it falls back to searching for the mutated function by name, and
says so (`located` is then "search"), so a report can tell the two apart.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from rlvr.envs.base import EnvSettings, StepResult
from rlvr.repos.agent import RepoAgentEnv
from rlvr.repos.coverage import is_library_file
from rlvr.repos.mine import RepoTask
from rlvr.repos.reference import FRAME
from rlvr.tasks.mutate import Mutation
from rlvr.types import Task


@dataclass
class ScriptedEpisode:
    task: str
    reward: float
    calls: int
    located: str  # "traceback" | "search" | "" (not found)
    done: bool
    transcript: list[str] = field(default_factory=list)  # the replies, in order
    tool_s: dict[str, list[float]] = field(default_factory=dict)


def fix_edit(pristine: str, broken: str, mutations: list[Mutation]) -> tuple[str, str]:
    """(old, new): the broken lines around the mutation and the pristine ones, widened
    until `old` is unique in the broken file."""
    first = min(m.line for m in mutations)
    b_lines, p_lines = broken.splitlines(keepends=True), pristine.splitlines(keepends=True)
    last_b = max(m.line + m.replacement.count("\n") for m in mutations)
    last_p = max(m.line + m.original.count("\n") for m in mutations)
    up = 0
    while True:
        old = "".join(b_lines[first - 1 - up : last_b + up])
        new = "".join(p_lines[first - 1 - up : last_p + up])
        if broken.count(old) == 1 or first - 1 - up <= 0:
            return old, new
        up += 1


async def solve(task: Task, settings: EnvSettings | None = None) -> ScriptedEpisode:
    """Run one episode of `task` with the scripted policy."""
    env = RepoAgentEnv(settings or EnvSettings())
    await env.reset(task)
    rt = RepoTask.from_dict(task.tests["task"])
    replies: list[str] = []

    async def call(**args: object) -> StepResult:
        reply = json.dumps(args)
        replies.append(reply)
        return await env.step(reply)

    def finish(step: StepResult, located: str) -> ScriptedEpisode:
        reward = step.reward.total if step.reward else 0.0
        details = step.reward.details if step.reward else {}
        times = {k: list(v) for k, v in details.get("tool_s", {}).items()}
        if "submit_s" in details:
            times["submit"] = [details["submit_s"]]
        return ScriptedEpisode(task.id, reward, env.calls, located, step.done, replies, times)

    step = await call(tool="run_tests")
    if step.done:
        return finish(step, "")
    text = step.messages[0]["content"]
    frames = [(f, int(n)) for f, n in FRAME.findall(text) if is_library_file(f)]
    located = ""
    if frames and frames[-1][0] == rt.file:
        located = "traceback"
        line = frames[-1][1]
    else:
        function = str(rt.mutations[0].get("function") or "").split(".")[-1]
        step = await call(tool="search", pattern=rf"def {re.escape(function)}\b" if function else "def ", path=".")
        if step.done:
            return finish(step, "")
        hits = [(f, int(n)) for f, n in FRAME.findall(step.messages[0]["content"]) if f == rt.file]
        if not hits:
            return finish(await call(tool="submit"), "")
        located, line = "search", hits[0][1]
    step = await call(tool="read", path=rt.file, start=max(1, line - 30), end=line + 30)
    if step.done:
        return finish(step, located)
    pristine = (Path(env.repo.tree) / rt.file).read_text(encoding="utf-8")
    broken = env.ws.files[rt.file]
    old, new = fix_edit(pristine, broken, [Mutation.from_dict(m) for m in rt.mutations])
    for args in ({"tool": "edit", "path": rt.file, "old": old, "new": new}, {"tool": "run_tests"}, {"tool": "submit"}):
        step = await call(**args)
        if step.done:
            return finish(step, located)
    return finish(step, located)
