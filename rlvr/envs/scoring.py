"""Scoring one completion for one task exactly as training would: the task's environment
judges it (running the sandbox where the domain does), then the run's scorer adds every
other component and the hack flags. Behind `rlvr score`, the tool for a reward that
looks wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.envs import make_env
from rlvr.envs.base import check_task, run_sync
from rlvr.envs.settings import env_settings, make_scorer
from rlvr.rewards.hidden_tests import for_step as drawn_for_step
from rlvr.tasks.loader import TaskLoadError, load_tasks
from rlvr.types import Task, Trajectory, Turn


def load_one_task(path: str | Path, task_id: str | None = None) -> Task:
    """One task from a JSONL task file (or a .json file holding one task object)."""
    p = Path(path)
    if p.suffix == ".json" and p.is_file():
        try:
            data = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise TaskLoadError(f"{p}: not valid JSON: {e.msg}") from None
        if isinstance(data, dict):
            try:
                task = Task.from_dict(data)
                check_task(task)
                return task
            except (TypeError, ValueError) as e:
                raise TaskLoadError(f"{p}: {e}") from None
    # only the task asked for is checked (parsing every task's tests costs most of a
    # second on a big file, and `rlvr score` promises an answer within one)
    tasks = load_tasks(str(p), check=check_task if task_id is None else None)
    if task_id is not None:
        for t in tasks:
            if t.id == task_id:
                try:
                    check_task(t)
                except ValueError as e:
                    raise TaskLoadError(f"{p}: task '{task_id}': {e}") from None
                return t
        raise TaskLoadError(f"{p}: no task with id '{task_id}' (it has {len(tasks)} tasks)")
    if len(tasks) > 1:
        ids = ", ".join(t.id for t in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
        raise TaskLoadError(f"{p} has {len(tasks)} tasks; choose one with --task-id ({ids})")
    return tasks[0]


def score_completion(
    task: Task, completion: str, cfg: RunConfig, num_tokens: int | None = None, *, step: int = 0
) -> Trajectory:
    """The judged and scored trajectory of `completion` (the assistant's whole reply), on
    the tests a training run draws for the task at `step` (`reward.hidden_tests`)."""
    task = drawn_for_step(task, cfg.reward, seed=cfg.seed, step=step)
    settings = env_settings(cfg)
    try:
        env = make_env(task.domain, settings)
    except KeyError as e:
        raise ConfigError(str(e.args[0])) from None
    messages = run_sync(env.reset(task))
    result = run_sync(env.step(completion))
    turns = [Turn(role=m["role"], content=m["content"]) for m in messages]  # type: ignore[arg-type]
    turns.append(Turn(role="assistant", content=completion, trainable=True))
    traj = Trajectory(
        task_id=task.id,
        domain=task.domain,
        group_id=task.id,
        turns=turns,
        completion_ids=[0] * (num_tokens or 0),
        execution=result.execution,
        reward=result.reward,
    )
    make_scorer(cfg, settings).score(task, traj)
    return traj


def report(traj: Trajectory) -> dict[str, Any]:
    r = traj.reward
    assert r is not None
    return {
        "task_id": traj.task_id,
        "domain": traj.domain,
        "total": r.total,
        "components": r.components,
        "flags": r.flags,
        "details": r.details,
        "execution": traj.execution.to_dict() if traj.execution else None,
        "num_tokens": len(traj.completion_ids),
    }
