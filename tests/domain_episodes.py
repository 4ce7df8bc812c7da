"""One episode of a domain's environment with scripted replies (the domain tests share it)."""

from __future__ import annotations

from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import run_sync
from rlvr.types import Task


def _episode(task: Task, replies: list[str], settings: EnvSettings | None = None) -> list:  # type: ignore[type-arg]
    env = make_env(task.domain, settings or EnvSettings())
    run_sync(env.reset(task))
    out = []
    for reply in replies:
        r = run_sync(env.step(reply))
        out.append(r)
        if r.done:
            break
    return out
