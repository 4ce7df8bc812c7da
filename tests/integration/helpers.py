"""Building small batches of real trajectories with the tiny model."""

from __future__ import annotations

from rlvr.envs import EnvSettings
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.runner import run_episodes
from rlvr.tasks import load_tasks
from rlvr.types import RewardBreakdown, Trajectory


def tiny_batch(
    model, tok, n_prompts: int = 2, group: int = 4, max_new: int = 6, temperature: float = 1.0
) -> list[Trajectory]:  # type: ignore[no-untyped-def]
    tasks = load_tasks("bundled:python_functions")[:n_prompts]
    trajs = run_episodes(
        tasks,
        engine=HFEngine(model, tok, batch_size=8),
        tokenizer=tok,
        settings=EnvSettings(),
        params=SamplingParams(max_new_tokens=max_new, temperature=temperature, seed=123),
        group_size=group,
    )
    # Random-model code fails every test; give distinct rewards so advantages are non-zero.
    for i, t in enumerate(trajs):
        t.reward = RewardBreakdown(total=float(i % group) / group, components={"completion": 0.0})
    return trajs
