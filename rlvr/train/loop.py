"""`rlvr train`: the whole training run.

    for step in range(start, steps):
        tasks  = sampler.sample(prompts_per_step)           # curriculum
        trajs  = run_episodes(tasks, G samples each)         # generate → sandbox → reward
        stats  = learner.step(trajs)                         # advantages → loss → update
        log(trajs, stats); maybe checkpoint

The engine shares the learner's model object, so the weights it samples from are always
the current policy (policy_version = learner.version). Evaluation on the held-out split
runs before and after when configured.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from rlvr.config import RunConfig
from rlvr.curriculum import TaskSampler
from rlvr.evaluate import EvalResult, env_settings, evaluate, make_scorer
from rlvr.models import load_policy
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.runner import run_episodes
from rlvr.tasks import load_tasks, split_tasks
from rlvr.trace.store import JsonlStore, summarize_step
from rlvr.train.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint
from rlvr.train.learner import Learner
from rlvr.train.progress import Progress


@dataclass
class TrainSummary:
    run_dir: Path
    steps: int
    eval_before: EvalResult | None
    eval_after: EvalResult | None
    rewards: list[float]
    elapsed_s: float


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(cfg: RunConfig, *, resume: bool = False, quiet: bool = False) -> TrainSummary:
    t_start = time.perf_counter()
    run_dir = cfg.run_dir
    ckpt_root = run_dir / "checkpoints"
    if run_dir.exists() and any(run_dir.iterdir()) and not resume:
        raise FileExistsError(f"run directory {run_dir} is not empty; pass --resume or choose another name")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    seed_everything(cfg.seed)

    tasks = load_tasks(cfg.tasks.source, cfg.tasks.min_difficulty, cfg.tasks.max_difficulty)
    train_tasks, eval_tasks = split_tasks(tasks, cfg.tasks.eval_fraction)
    eval_tasks = eval_tasks[: cfg.eval.num_tasks] if cfg.eval.num_tasks else eval_tasks
    ckpt = latest_checkpoint(ckpt_root) if resume else None
    model, tok = load_policy(
        str(ckpt / "model") if ckpt else cfg.model.name_or_path,
        dtype=cfg.model.dtype,
        cache_dir=cfg.model.cache_dir,
        seed=cfg.seed,
    )
    learner = Learner(model, cfg, pad_id=int(tok.pad_token_id))
    sampler = TaskSampler(train_tasks, cfg.seed)
    start, rewards, eval_before = 0, [], None
    if ckpt:
        blob, state = load_trainer_state(ckpt)
        learner.load_state_dict(blob["learner"])
        sampler.load_state_dict(state["sampler"])
        start, rewards = int(state["step"]), list(state["rewards"])
        eval_before = _eval_from_dict(state.get("eval_before"))
    engine = HFEngine(model, tok, batch_size=cfg.generation.batch_size)
    settings = env_settings(cfg)
    scorer = make_scorer(cfg, settings)
    metrics_log = JsonlStore(run_dir / "metrics.jsonl")
    traj_log = JsonlStore(run_dir / "trajectories.jsonl")
    progress = Progress(cfg.train.steps, start, quiet=quiet)

    if cfg.eval.before_training and eval_before is None:
        progress.note(f"evaluating the initial policy on {len(eval_tasks)} held-out tasks")
        eval_before = evaluate(model, tok, eval_tasks, cfg)
        metrics_log.append(
            {
                "event": "eval",
                "when": "before",
                "pass_at_1": eval_before.pass_at_1,
                "mean_reward": eval_before.mean_reward,
                "by_difficulty": eval_before.by_difficulty,
            }
        )
    with progress:
        for step in range(start, cfg.train.steps):
            t0 = time.perf_counter()
            batch = sampler.sample(cfg.train.prompts_per_step)
            params = SamplingParams(
                max_new_tokens=cfg.generation.max_new_tokens,
                temperature=cfg.generation.temperature,
                top_p=cfg.generation.top_p,
                stop=tuple(cfg.generation.stop),
                seed=cfg.seed * 100003 + step,
            )
            trajs = run_episodes(
                batch,
                engine=engine,
                tokenizer=tok,
                settings=settings,
                params=params,
                group_size=cfg.algo.group_size,
                response_prefix=cfg.prompt.response_prefix,
                policy_version=learner.version,
                workers=cfg.sandbox.workers,
                group_prefix=f"{step}/",
                scorer=scorer,
            )
            t1 = time.perf_counter()
            stats = learner.step(trajs)
            t2 = time.perf_counter()
            summary = summarize_step(trajs)
            rewards.append(summary["reward_mean"])
            row = {
                "event": "step",
                "step": step + 1,
                **summary,
                **stats,
                "rollout_s": t1 - t0,
                "train_s": t2 - t1,
                "tokens_per_s": summary["completion_tokens"] / max(t2 - t0, 1e-9),
            }
            metrics_log.append(row)
            for t in trajs:
                traj_log.append({"step": step + 1, **t.to_dict()})
            progress.update(step + 1, row)
            every = cfg.train.checkpoint_every
            if (every and (step + 1) % every == 0) or step + 1 == cfg.train.steps:
                save_checkpoint(
                    ckpt_root,
                    step + 1,
                    model,
                    tok,
                    learner.state_dict(),
                    {"sampler": sampler.state_dict(), "rewards": rewards, "eval_before": _eval_to_dict(eval_before)},
                    keep=cfg.train.keep_checkpoints,
                )
    eval_after = None
    if eval_tasks:
        progress.note(f"evaluating the trained policy on {len(eval_tasks)} held-out tasks")
        eval_after = evaluate(model, tok, eval_tasks, cfg)
        metrics_log.append(
            {
                "event": "eval",
                "when": "after",
                "pass_at_1": eval_after.pass_at_1,
                "mean_reward": eval_after.mean_reward,
                "by_difficulty": eval_after.by_difficulty,
            }
        )
    summary_out = TrainSummary(
        run_dir, cfg.train.steps, eval_before, eval_after, rewards, time.perf_counter() - t_start
    )
    (run_dir / "summary.json").write_text(json.dumps(_summary_dict(summary_out), indent=2))
    metrics_log.close()
    traj_log.close()
    return summary_out


def _eval_to_dict(r: EvalResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "pass_at_1": r.pass_at_1,
        "mean_reward": r.mean_reward,
        "num_tasks": r.num_tasks,
        "by_difficulty": {str(k): v for k, v in r.by_difficulty.items()},
    }


def _eval_from_dict(d: dict[str, Any] | None) -> EvalResult | None:
    if d is None:
        return None
    return EvalResult(
        d["pass_at_1"], d["mean_reward"], d["num_tasks"], {int(k): v for k, v in d["by_difficulty"].items()}
    )


def _summary_dict(s: TrainSummary) -> dict[str, Any]:
    q = max(len(s.rewards) // 4, 1)
    return {
        "steps": s.steps,
        "elapsed_s": s.elapsed_s,
        "eval_before": _eval_to_dict(s.eval_before),
        "eval_after": _eval_to_dict(s.eval_after),
        "reward_first_quarter": sum(s.rewards[:q]) / q if s.rewards else None,
        "reward_last_quarter": sum(s.rewards[-q:]) / q if s.rewards else None,
        "rewards": s.rewards,
    }
