"""`rlvr train`: the whole training run.

    for step in range(start, steps):
        batch  = rollouts.next(step, version)  # tasks → generate → sandbox → reward (maybe ahead)
        buffer.add(batch.groups)
        groups = buffer.sample(prompts_per_step, learner.version)
        stats  = learner.step(trajs)          # advantages → loss → update
        rollouts.publish(model, version)      # the generator's next weights
        log_step(...); alerts; maybe save     # buffer and untrained batches included

`rollouts` is a driver of rlvr.pipeline (inline: it shares the learner's model, so it
always samples the current policy; a thread: a step or more ahead on its own copy of the
weights) or the Ray learner's (rlvr.dist.ray_runner), each over the run's channel.
Everything before the first step (resuming, loading, evaluation before training, the
driver) and the per-step chores (logging, checkpoints, evaluation after) are built by
rlvr.train.build, so that this loop is the whole of what a step does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rlvr.config import RunConfig
from rlvr.learner.learner import Learner
from rlvr.trace.monitor import RunStopped
from rlvr.train.build import TrainSummary, build_run, load_policy_at, policy_source, seed_everything

__all__ = ["TrainSummary", "load_policy_at", "policy_source", "seed_everything", "train"]


def train(
    cfg: RunConfig,
    *,
    resume: bool = False,
    quiet: bool = False,
    plain: bool = False,
    learner_factory: Callable[[Any, RunConfig, int], Learner] = Learner,
    rollouts_factory: Callable[..., Any] | None = None,
) -> TrainSummary:
    """The whole run. `learner_factory(model, cfg, pad_id)` builds the learner: `Learner`, or
    the sharded one when launched by torchrun (rlvr.train.sharded.run_lead);
    `rollouts_factory` the rollouts when they come from elsewhere (rlvr.dist.ray_runner)."""
    t_start = time.perf_counter()
    run = build_run(
        cfg, resume=resume, quiet=quiet, plain=plain, learner_factory=learner_factory, rollouts_factory=rollouts_factory
    )
    rollouts, buffer, learner, monitor = run.rollouts, run.buffer, run.learner, run.monitor
    every = cfg.train.checkpoint_every
    try:
        with run.progress:
            for step in range(run.start, cfg.train.steps):
                t0 = time.perf_counter()
                batch = rollouts.next(step, learner.version)  # tasks → generate → sandbox → reward
                t1 = time.perf_counter()
                buffer.add(batch.groups)
                groups = buffer.sample(cfg.train.prompts_per_step, learner.version)
                trajs = [t for g in groups for t in g.trajs]
                stats = learner.step(trajs)  # advantages → loss → update
                rollouts.publish(run.model, learner.version)  # the generator's next weights
                row = run.log_step(step, batch, trajs, stats, [t0, t1, time.perf_counter()])
                alerts = monitor.step(step + 1, row)
                stop = next((a for a in alerts if a.action == "stop"), None)
                due = (every and (step + 1) % every == 0) or step + 1 == cfg.train.steps
                wanted = due or stop or any(a.action == "checkpoint" for a in alerts)
                if wanted and any(a.rule == "non_finite" for a in alerts):
                    run.progress.alert("not saving a checkpoint of non-finite weights: the last one stays the latest")
                elif wanted:
                    run.save(step + 1)
                if stop:
                    raise RunStopped(stop)
    finally:
        run.close()
    return run.finish(t_start)
