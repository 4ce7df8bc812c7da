"""`rlvr rft`: rejection-sampling fine-tuning (expert iteration), the honest baseline RL
is compared against, and a warm start of its own.

    for round in rounds:
        tasks   = draw(train tasks, rft.tasks_per_round, seed, round)
        samples = rft.samples episodes per task, at generation.temperature   # the rollout runner
        kept    = reward >= rft.min_reward, no hack flag, not cut, <= rft.per_task per task
        fine-tune on kept (or on every round's kept so far: rft.accumulate) with the sft settings
        trace the round (every sample, kept ones marked trained), checkpoint

Sampling is the rollout runner's, with the run's environments, reward terms and drawn
hidden tests (reward.hidden_tests, drawn for the round as a training step draws them),
so what is kept is what RL would have rewarded. A kept sample is trained on as the
token sequence it was sampled as (its own prompt, reply and environment tokens, the
environment's masked). A round that keeps nothing says so, and the policy is unchanged
by it. Checkpoints are taken after each round; a round is sampled from a seed fixed by
the run's seed and the round, so `--resume` after a kill repeats the interrupted round
and ends with the uninterrupted run's weights.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rlvr.config import ConfigError, RunConfig
from rlvr.rewards.hidden_tests import for_step as drawn_for_step
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.evaluate import EvalResult
from rlvr.rollout.factory import make_engine
from rlvr.rollout.runner import episode_settings, run_episodes
from rlvr.sft.encode import Encoded
from rlvr.sft.plan import schedule
from rlvr.sft.stage import Stage, eval_result, load_model, model_source, open_stage, starting_point
from rlvr.sft.trainer import SftTrainer
from rlvr.trace.monitor import RunStopped
from rlvr.train.build import seed_everything
from rlvr.train.checkpoint import load_trainer_state, weights_fingerprint
from rlvr.train.preflight import check_run
from rlvr.types import Task, Trajectory

CUT = ("length", "turns", "context", "budget")  # a reply that did not end on its own


@dataclass
class RftSummary:
    run_dir: Path
    rounds: int
    kept: list[int]  # per round
    sampled: list[int]  # per round
    eval_before: EvalResult | None
    eval_after: EvalResult | None
    elapsed_s: float
    model_dir: Path


def keep(trajs: list[Trajectory], *, min_reward: float, per_task: int) -> list[Trajectory]:
    """The samples worth learning: a finished episode (status ok, not cut by a length or
    turn budget) whose reward is at least `min_reward` and carries no hack flag at all,
    at most `per_task` per task (the highest rewards, then the shortest; equal replies
    count once), in the order sampled."""
    best: dict[str, list[Trajectory]] = {}
    for t in trajs:
        r = t.reward
        if t.status != "ok" or r is None or r.flags or r.total < min_reward or t.finish_reason in CUT:
            continue
        best.setdefault(t.task_id, []).append(t)
    chosen: set[int] = set()
    for group in best.values():
        seen: set[tuple[int, ...]] = set()
        for t in sorted(group, key=lambda t: (-(t.reward.total if t.reward else 0.0), len(t.completion_ids))):
            ids = tuple(t.completion_ids)
            if ids in seen:
                continue
            seen.add(ids)
            chosen.add(id(t))
            if len(seen) == per_task:
                break
    return [t for t in trajs if id(t) in chosen]


def as_example(t: Trajectory) -> Encoded:
    """A kept sample as the sequence it was sampled as: its prompt, then its replies
    (trained) and the environment's tokens between them (not)."""
    return Encoded(list(t.prompt_ids), list(t.completion_ids), [int(m) for m in t.loss_mask])


def round_tasks(tasks: list[Task], n: int | None, *, seed: int, rnd: int) -> list[Task]:
    """The round's tasks: all of them, or `n` drawn without replacement for (seed, round)."""
    if n is None or n >= len(tasks):
        return list(tasks)
    return random.Random(f"rft:{seed}:{rnd}").sample(list(tasks), n)


def run_rft(cfg: RunConfig, *, resume: bool = False, quiet: bool = False, plain: bool = False) -> RftSummary:
    """The whole run (see the module's docstring)."""
    t_start = time.perf_counter()
    r = cfg.rft
    ckpt = starting_point(cfg, resume)
    seed_everything(cfg.seed)
    inputs = check_run(cfg, model=model_source(cfg, ckpt))
    if cfg.sft.threads:
        torch.set_num_threads(cfg.sft.threads)
    model, tok = load_model(cfg, ckpt)
    state: dict[str, Any] = {"round": 0, "kept": [], "sampled": [], "pool": []}
    if ckpt is not None:
        _, state = load_trainer_state(ckpt)
    start = int(state["round"])
    run = open_stage(cfg, model, tok, total=r.rounds, start=start, quiet=quiet, plain=plain)
    evals = inputs.eval_tasks
    pool = [Encoded(*row) for row in state["pool"]]
    try:
        if ckpt is None and cfg.eval.before_training and evals:
            state["eval_before"] = run.evaluate(evals, 0, "before")
        with run.progress:
            for rnd in range(start, r.rounds):
                t0 = time.perf_counter()
                trajs = _sample(run, round_tasks(inputs.train_tasks, r.tasks_per_round, seed=cfg.seed, rnd=rnd), rnd)
                kept = keep(trajs, min_reward=r.min_reward, per_task=r.per_task)
                t1 = time.perf_counter()
                chosen = {id(t) for t in kept}
                pool = [*pool, *map(as_example, kept)] if r.accumulate else [as_example(t) for t in kept]
                stats = _fine_tune(run, pool, rnd) if pool else {}
                if not kept:
                    run.progress.alert(
                        f"round {rnd + 1}: no sample reached rft.min_reward {r.min_reward}: nothing kept"
                    )
                row = _row(rnd + 1, trajs, kept, stats, [t0, t1, time.perf_counter()], model)
                text = f"kept {len(kept)}/{len(trajs)}" + (f"  loss {stats['loss']:.3f}" if stats else "")
                alerts = run.log_step(rnd + 1, row, text, [(t, id(t) in chosen) for t in trajs])
                state["kept"].append(len(kept))
                state["sampled"].append(len(trajs))
                state["round"] = rnd + 1
                state["pool"] = [[e.prompt_ids, e.completion_ids, e.mask] for e in pool] if r.accumulate else []
                run.save({}, {"stage": "rft", **state}, rnd + 1)
                stop = next((a for a in alerts if a.action == "stop"), None)
                if stop:
                    raise RunStopped(stop)
        eval_after = run.evaluate(evals, r.rounds, "after") if cfg.eval.after_training and evals else None
        out = run.write_model()
    finally:
        run.close()
    summary = RftSummary(
        cfg.run_dir, r.rounds, list(state["kept"]), list(state["sampled"]), eval_result(state.get("eval_before")),
        eval_result(eval_after), time.perf_counter() - t_start, out,
    )  # fmt: skip
    (cfg.run_dir / "summary.json").write_text(
        json.dumps(
            {"stage": "rft", "rounds": r.rounds, "kept": summary.kept, "sampled": summary.sampled,
             "eval_before": state.get("eval_before"), "eval_after": eval_after, "elapsed_s": summary.elapsed_s,
             "model_dir": str(out)},
            indent=2,
        )
    )  # fmt: skip
    return summary


def _sample(run: Stage, tasks: list[Task], rnd: int) -> list[Trajectory]:
    """rft.samples episodes of each task by the current policy, scored as a training step
    scores them (hidden tests drawn for this round)."""
    cfg = run.cfg
    if cfg.reward.hidden_tests:
        tasks = [drawn_for_step(t, cfg.reward, seed=cfg.seed, step=rnd) for t in tasks]
    params = SamplingParams.sampling(cfg.generation, cfg.seed * 100003 + rnd + 104729)
    return run_episodes(
        tasks,
        engine=make_engine(cfg, run.model, run.tok),
        tokenizer=run.tok,
        episodes=episode_settings(cfg, group_size=cfg.rft.samples),
        params=params,
        group_prefix=f"rft{rnd}/",
        on_progress=lambda name, done, total: run.progress.phase("rollout", name, done, total),
    )


def _fine_tune(run: Stage, pool: list[Encoded], rnd: int) -> dict[str, float]:
    """sft.epochs over the pool with a fresh optimizer (the sft settings); the mean loss
    and tokens of its steps."""
    s = run.cfg.sft
    fits = [e for e in pool if e.length <= s.max_length]
    if not fits:
        return {}
    plan = schedule([e.length for e in fits], s.batch_size, seed=run.cfg.seed * 1009 + rnd, epochs=s.epochs,
                    max_steps=s.max_steps)  # fmt: skip
    trainer = SftTrainer(run.model, s, int(run.tok.pad_token_id), len(plan))
    trainer.on_progress = lambda name, done, total: run.progress.phase("learner", name, done, total)
    losses, tokens = [], 0.0
    for batch in plan:
        st = trainer.step([fits[i] for i in batch])
        losses.append(st["loss"])
        tokens += st["tokens"]
    return {"loss": sum(losses) / len(losses), "tokens": tokens, "steps": float(len(plan)),
            "examples": float(len(fits))}  # fmt: skip


def _row(
    rnd: int, trajs: list[Trajectory], kept: list[Trajectory], stats: dict[str, float], t: list[float], model: Any
) -> dict[str, Any]:
    from rlvr.trace.store import summarize_step

    return {
        "event": "step",
        "step": rnd,
        **summarize_step(trajs, []),
        "rft/kept": float(len(kept)),
        "rft/kept_frac": len(kept) / max(len(trajs), 1),
        "rft/tasks_kept": float(len({x.task_id for x in kept})),
        **{f"train/{k}": v for k, v in stats.items()},
        "time/rollout_s": t[1] - t[0],
        "time/train_s": t[2] - t[1],
        "weights_fingerprint": weights_fingerprint(model),
    }


def check_rft(cfg: RunConfig) -> None:
    """What rlvr rft needs beyond the config's own checks (nothing loaded)."""
    if cfg.sft.data:
        raise ConfigError("sft.data: set, but rlvr rft trains on its own kept samples (rlvr sft reads sft.data)")
