"""A test-only domain whose reward varies with what a random model writes (reply length mod 10).

Registering it is all it takes for the training loop to route `toy-length` tasks here,
which is also the test that adding a domain needs no change elsewhere."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from rlvr.envs.base import ENVS, EnvSettings, StepResult, register_env
from rlvr.types import RewardBreakdown, Task

DOMAIN = "toy-length"


class ReplyLengthEnv:
    components = ("toy",)
    task_check = False  # pays by length, whatever the reply says: no probe means anything here

    @staticmethod
    def check_task(task: Task) -> None:
        """Any prompt will do: the reward reads only the reply."""

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings

    async def reset(self, task: Task) -> list[dict[str, str]]:
        return [{"role": "user", "content": task.prompt}]

    async def step(self, reply: str) -> StepResult:
        value = (len(reply) % 10) / 9.0
        return StepResult(messages=[], reward=RewardBreakdown(value, {"toy": value}), done=True)


if DOMAIN not in ENVS:
    register_env(DOMAIN)(ReplyLengthEnv)


def write_toy_tasks(path: Path, n: int = 12, domain: str = DOMAIN, prefix: str = "toy") -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"{prefix}/{i}", "domain": domain, "prompt": f"Say something about {i}."}) + "\n")
    return path


FLAKY = "toy-flaky"
FLAKY_CALLS: dict[str, int] = {}


class FlakyEnv:
    """Fails on tasks whose id ends in '!', every time; on tasks ending in '?', only on the
    first attempt (so a retry succeeds). Otherwise rewards like ReplyLengthEnv."""

    components = ("toy",)
    task_check = False
    check_task = ReplyLengthEnv.check_task

    def __init__(self, settings: EnvSettings) -> None:
        self.task: Task | None = None

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.task = task
        return [{"role": "user", "content": task.prompt}]

    async def step(self, reply: str) -> StepResult:
        assert self.task is not None
        n = FLAKY_CALLS[self.task.id] = FLAKY_CALLS.get(self.task.id, 0) + 1
        if self.task.id.endswith("!") or (self.task.id.endswith("?") and n == 1):
            raise ConnectionError(f"environment for {self.task.id} crashed")
        value = (len(reply) % 10) / 9.0
        return StepResult(messages=[], reward=RewardBreakdown(value, {"toy": value}), done=True)


if FLAKY not in ENVS:
    register_env(FLAKY)(FlakyEnv)


def write_flaky_tasks(path: Path, ids: list[str]) -> Path:
    with path.open("w") as f:
        for i in ids:
            f.write(json.dumps({"id": i, "domain": FLAKY, "prompt": f"Say something about {i}."}) + "\n")
    return path


EXEC = "toy-exec"


class ReplyParityEnv:
    """Runs a program in the sandbox (settings.execute: the local pool, a server or the Ray
    runner's sandbox workers): one assert on the reply's length, so that a random model
    earns a reward that varies and every episode needs a verdict from the sandbox."""

    components = ("toy",)
    task_check = False
    check_task = ReplyLengthEnv.check_task

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings

    async def reset(self, task: Task) -> list[dict[str, str]]:
        return [{"role": "user", "content": task.prompt}]

    async def step(self, reply: str) -> StepResult:
        code = f"import time\ntime.sleep(0.3)\nn = {len(reply)}\n"  # some load for the sandbox pool
        tests = {"format": "assert", "tests": ["assert n % 2 == 0", "assert n % 3 == 0"]}
        result = await asyncio.to_thread(self.settings.execute, code, tests)  # episodes run at once, as in real envs
        value = result.passed / 2
        return StepResult(messages=[], reward=RewardBreakdown(value, {"toy": value}), done=True, execution=result)


if EXEC not in ENVS:
    register_env(EXEC)(ReplyParityEnv)


def write_exec_tasks(path: Path, n: int = 12) -> Path:
    return write_toy_tasks(path, n, EXEC, "exec")
