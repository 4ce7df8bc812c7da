"""A test-only domain whose reward varies with what a random model writes (reply length mod 10).

Registering it is all it takes for the training loop to route `toy-length` tasks here,
which is also the test that adding a domain needs no change elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

from rlvr.envs.base import ENVS, EnvSettings, StepResult, register_env
from rlvr.types import RewardBreakdown, Task

DOMAIN = "toy-length"


class ReplyLengthEnv:
    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings

    def reset(self, task: Task) -> list[dict[str, str]]:
        return [{"role": "user", "content": task.prompt}]

    def step(self, reply: str) -> StepResult:
        value = (len(reply) % 10) / 9.0
        return StepResult(messages=[], reward=RewardBreakdown(value, {"toy": value}), done=True)


if DOMAIN not in ENVS:
    register_env(DOMAIN)(ReplyLengthEnv)


def write_toy_tasks(path: Path, n: int = 12) -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"toy/{i}", "domain": DOMAIN, "prompt": f"Say something about {i}."}) + "\n")
    return path
