"""An example plugin (`plugins: [tests/integration/plugins/example_plugin.py]`) that adds
one of each seam rlvr opens to plugins, as a user's own module would:

- an environment, domain `word-count`: the reply should have tests.words words;
- a reward term, `brevity`: 1 for a reply under 40 characters (word-count tasks only);
- an engine, `counting_hf`: the HF engine, counting its generate calls into the file
  `engine.options.calls_file`;
- an advantage estimator, `mean_baseline`: the reward minus its group's mean, declared
  as a group estimator without a value head.

tests/integration/test_plugin_example.py trains two steps with all four. (Loaded by its
dotted name, the module is imported once per process, so each registers once.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from rlvr.algos.advantages import register_advantage
from rlvr.algos.names import EstimatorNeeds
from rlvr.config import RunConfig
from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.registry import TermContext, register_reward
from rlvr.rollout.engine import Engine
from rlvr.rollout.factory import make_engine
from rlvr.rollout.registry import register_engine
from rlvr.types import RewardBreakdown, Task, Trajectory

DOMAIN = "word-count"


@register_env(DOMAIN)
class WordCountEnv:
    components = ("words_off",)
    # any text is an attempt at this task (there is no reply that does nothing), so the
    # task check's do-nothing probes mean nothing here: its tasks are not checked
    task_check = False

    @staticmethod
    def check_task(task: Task) -> None:
        if not isinstance(task.tests.get("words"), int):
            raise ValueError(f"task {task.id}: tests.words must be an integer")

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        assert self.task is not None
        off = abs(len(reply.split()) - int(self.task.tests["words"]))
        value = max(0.0, 1.0 - off / 10)
        return StepResult([], RewardBreakdown(value, {"completion": value, "words_off": float(off)}), done=True)


def _word_tasks(task: Task, traj: Trajectory, ctx: TermContext) -> bool:
    return task.domain == DOMAIN


@register_reward("brevity", applies=_word_tasks, always=False)
def brevity(task: Task, traj: Trajectory, ctx: TermContext) -> float:
    """1.0 for a reply under 40 characters."""
    return 1.0 if len(traj.completion_text) < 40 else 0.0


class CountingEngine:
    """Any engine, its generate calls counted into a file (the test reads it)."""

    def __init__(self, inner: Engine, calls_file: Path) -> None:
        self.inner, self.calls_file = inner, calls_file

    def generate(self, prompts: list[list[int]], params: Any, progress: Any = None) -> Any:
        done = json.loads(self.calls_file.read_text()) if self.calls_file.exists() else {"calls": 0, "prompts": 0}
        self.calls_file.write_text(json.dumps({"calls": done["calls"] + 1, "prompts": done["prompts"] + len(prompts)}))
        return self.inner.generate(prompts, params, progress)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@register_engine("counting_hf")
def counting_hf(
    cfg: RunConfig, model: Any, tokenizer: Any, *, own_weights: bool, version: int, for_training: bool
) -> Engine:
    hf = cfg.model_copy(update={"engine": cfg.engine.model_copy(update={"kind": "hf", "options": {}})})
    inner = make_engine(hf, model, tokenizer, own_weights=own_weights, version=version, for_training=for_training)
    engine: Engine = CountingEngine(inner, Path(cfg.engine.options["calls_file"]))  # type: ignore[assignment]
    return engine


@register_advantage("mean_baseline", EstimatorNeeds(group=True))
def mean_baseline(rewards: torch.Tensor) -> torch.Tensor:
    """r - mean of its group ([B, G] -> [B, G])."""
    return rewards - rewards.mean(dim=1, keepdim=True)
