"""Measure a task set's difficulty for a model: K sampled replies to each task, scored as
a training step scores them (`rlvr tasks calibrate`; the record is
rlvr.tasks.calibration's).

The replies are sampled with the run's generation settings (temperature, top-p, stop,
token budget), and the hidden tests a training step would draw are drawn for step 0, so
that what a task earns here is what its first group would earn in the run. A task one of
whose replies failed to run (a sandbox error, say) keeps no record, as a training step
drops such a group (its other replies were not scored as a group is)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlvr.config import RunConfig
from rlvr.rewards.hidden_tests import for_step as drawn_for_step
from rlvr.tasks.calibration import Calibration, calibrated
from rlvr.trace.store import solved
from rlvr.types import Task, Trajectory

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

SEED_SALT = 611953  # the sampling seed is the run seed's, moved off any training step's


@dataclass
class CalibrationResult:
    tasks: list[Task]  # each measured task with its record (the others as they were)
    measured: int
    failed_replies: int  # replies whose episode did not run: their tasks keep no record
    generate_s: float


def sample_calibrations(
    model: PreTrainedModel | None,
    tokenizer: PreTrainedTokenizerBase,
    tasks: list[Task],
    cfg: RunConfig,
    *,
    samples: int,
    model_name: str,
    set_level: bool = False,
    batch_tasks: int = 64,
    on_progress: Callable[[int, int], None] | None = None,
) -> CalibrationResult:
    """`samples` replies to each of `tasks` from the model (None: the engine serves its
    own, engine.kind openai), recorded on each task; `batch_tasks` tasks are generated
    per call (progress is reported between calls)."""
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.factory import make_engine
    from rlvr.rollout.runner import episode_settings, run_episodes

    if samples < 1:
        raise ValueError(f"samples: {samples} is not a positive number of replies")
    engine = make_engine(cfg, model, tokenizer, for_training=False)
    scored = [drawn_for_step(t, cfg.reward, seed=cfg.seed, step=0) for t in tasks]
    out: list[Task] = []
    measured = failed = 0
    gen_s = 0.0
    for start in range(0, len(tasks), batch_tasks):
        chunk = scored[start : start + batch_tasks]
        # engines seed row i with seed + i: chunks' seeds do not overlap
        params = SamplingParams.sampling(cfg.generation, cfg.seed * 100003 + SEED_SALT + start * samples)
        trajs = run_episodes(
            chunk,
            engine=engine,
            tokenizer=tokenizer,
            episodes=episode_settings(cfg, group_size=samples),
            params=params,
            group_prefix=f"calibrate{start}/",
        )
        gen_s += max((t.timings.get("generate_s", 0.0) for t in trajs), default=0.0)
        by_task: dict[str, list[Trajectory]] = {}
        for t in trajs:
            by_task.setdefault(t.task_id, []).append(t)
        for task in tasks[start : start + batch_tasks]:
            replies = by_task.get(task.id, [])
            bad = sum(t.status != "ok" for t in replies)
            failed += bad
            if bad or not replies:
                out.append(task)
                continue
            rewards = tuple(t.reward.total if t.reward else 0.0 for t in replies)
            cal = Calibration(model_name, rewards, tuple(solved(t) for t in replies))
            out.append(calibrated(task, cal, set_level=set_level))
            measured += 1
        if on_progress:
            on_progress(min(start + batch_tasks, len(tasks)), len(tasks))
    return CalibrationResult(out, measured, failed, gen_s)
