"""Doing one recorded step again, without generating anything (the `rlvr replay`
command: rlvr.cli.replay).

`rejudge` sends the step's recorded completions through their environments (the
sandbox) and the reward again and says what moved; with `repeat` it finds verdicts that
change between runs. `replay_update` re-runs the learner's update of step N from
checkpoint N-1 (restored as training resumes: rlvr.train.build.restore_state) on the
recorded batch, and checks loss, gradient norm and the weights against the original.

Both read the run directory: config.yaml, trajectories.jsonl (every trajectory in full,
token ids included), metrics.jsonl and checkpoints/.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EPS = 1e-9


def recorded_step(run_dir: Path, step: int, *, trained_only: bool) -> list[dict[str, Any]]:
    """The step's trajectories as logged in trajectories.jsonl (dicts of Trajectory.to_dict
    plus `step` and, for dropped ones, `dropped`), in the order they were trained."""
    from rlvr.trace.parquet import StoreError

    path = run_dir / "trajectories.jsonl"
    if not path.is_file():
        raise StoreError(f"{run_dir}: no trajectories.jsonl")
    rows, steps = [], set()
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            steps.add(rec.get("step"))
            if rec.get("step") == step and not (trained_only and rec.get("dropped")):
                rows.append(rec)
    if not rows:
        known = sorted(s for s in steps if isinstance(s, int))
        shown = f"{known[0]}..{known[-1]}" if known else "none"
        raise StoreError(f"{run_dir}: no trajectories of step {step} (steps logged: {shown})")
    return rows


def _trajectory(rec: dict[str, Any]) -> Any:
    from rlvr.types import Trajectory

    return Trajectory.from_dict({k: v for k, v in rec.items() if k not in ("step", "dropped")})


# ---- re-judging --------------------------------------------------------------------------


@dataclass
class Judged:
    task_id: str
    group_id: str
    sample: int
    dropped: bool
    before: dict[str, Any]  # reward total, components, flags, exec status, passed/total
    after: dict[str, Any]
    moved: list[str] = field(default_factory=list)  # what differs: components, flags, verdicts
    flaky: list[str] = field(default_factory=list)  # tests whose verdict changed between repeats

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _summary(t: Any) -> dict[str, Any]:
    r, ex = t.reward, t.execution
    return {
        "reward": r.total if r else None,
        "components": dict(r.components) if r else {},
        "flags": sorted(r.flags) if r else [],
        "status": ex.status.value if ex else None,
        "passed": ex.passed if ex else None,
        "total": ex.total if ex else None,
        "verdicts": {x.name: x.status.value for x in ex.tests} if ex else {},
    }


def _differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    if not _close(a["reward"], b["reward"]):
        out.append("reward")
    for k in sorted(set(a["components"]) | set(b["components"])):
        if not _close(a["components"].get(k), b["components"].get(k)):
            out.append(f"component:{k}")
    if a["flags"] != b["flags"]:
        out.append("flags")
    if (a["status"], a["passed"], a["total"]) != (b["status"], b["passed"], b["total"]):
        out.append("execution")
    for name in sorted(set(a["verdicts"]) | set(b["verdicts"])):
        if a["verdicts"].get(name) != b["verdicts"].get(name):
            out.append(f"test:{name}")
    return out


def _close(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is y
    return math.isclose(x, y, rel_tol=0, abs_tol=EPS) or (math.isnan(x) and math.isnan(y))


def rejudge(
    run_dir: Path, step: int, *, task: str | None = None, other_config: str | None = None, repeat: int = 1
) -> list[Judged]:
    """Judge the step's recorded completions again; one Judged per trajectory (all of them,
    `moved` empty where nothing changed)."""
    from rlvr.config import ConfigError, load_config, load_plugins, load_run_config
    from rlvr.envs.settings import env_settings, make_scorer
    from rlvr.rewards.canary import canary_from_id, is_canary
    from rlvr.train.preflight import run_tasks

    cfg = load_run_config(run_dir)
    if other_config:
        other = load_config(other_config)
        cfg = cfg.model_copy(update={"reward": other.reward, "sandbox": other.sandbox})
        load_plugins(other)
    load_plugins(cfg)
    recs = recorded_step(run_dir, step, trained_only=False)
    if task:
        recs = [r for r in recs if r["task_id"] == task]
        if not recs:
            raise ConfigError(f"no trajectory of task '{task}' at step {step}")
    by_id = {t.id: t for t in run_tasks(cfg)}
    for tid in {r["task_id"] for r in recs if is_canary(r["task_id"])}:
        with contextlib.suppress(KeyError):  # a canary is rebuilt from its real task
            by_id[tid] = canary_from_id(tid, by_id)
    missing = sorted({r["task_id"] for r in recs} - set(by_id))
    if missing:
        where = " and ".join([cfg.tasks.source] + [d.source for d in cfg.domains])
        raise ConfigError(f"tasks no longer in {where}: {', '.join(missing[:5])}")
    settings = env_settings(cfg)
    scorer = make_scorer(cfg, settings)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        groups.setdefault(r["group_id"], []).append(r)
    out: list[Judged] = []
    for gid, members in groups.items():
        runs = [asyncio.run(_judge_group(members, by_id, settings, scorer, cfg.sandbox.workers)) for _ in range(repeat)]
        for i, rec in enumerate(members):
            before = _summary(_trajectory(rec))
            after = _summary(runs[0][i])
            flaky = sorted(
                {
                    name
                    for r in runs[1:]
                    for name, v in _summary(r[i])["verdicts"].items()
                    if v != after["verdicts"].get(name)
                }
            )
            if repeat > 1 and any(_summary(r[i])["passed"] != after["passed"] for r in runs[1:]):
                flaky = flaky or ["(pass count changed)"]
            out.append(
                Judged(
                    rec["task_id"], gid, i, bool(rec.get("dropped")), before, after, _differences(before, after), flaky
                )
            )
    return out


async def _judge_group(
    members: list[dict[str, Any]], tasks: dict[str, Any], settings: Any, scorer: Any, workers: int
) -> list[Any]:
    """Each member's assistant turns through a fresh environment, then the group's reward."""
    from rlvr.envs import make_env

    gate = asyncio.Semaphore(max(workers, 1))

    async def one(rec: dict[str, Any]) -> Any:
        t = _trajectory(rec)
        env = make_env(t.domain, settings)
        await env.reset(tasks[t.task_id])
        step = None
        async with gate:
            for turn in t.turns:
                if turn.role == "assistant":
                    step = await env.step(turn.content)
        t.execution = step.execution if step else None
        t.reward = step.reward if step else None
        return t

    trajs = await asyncio.gather(*(one(r) for r in members))
    ok = [t for t in trajs if t.status == "ok" and t.reward is not None]
    if ok:
        await asyncio.to_thread(scorer.score_group, [tasks[t.task_id] for t in ok], ok)
    return list(trajs)


# ---- re-training -------------------------------------------------------------------------


@dataclass
class UpdateReplay:
    step: int
    source: str  # where the weights before the update came from
    n_trajectories: int
    checks: list[tuple[str, Any, Any, bool]]  # (what, original, replayed, equal)
    weights_checked_against: str

    @property
    def identical(self) -> bool:
        return all(ok for *_, ok in self.checks)


def replay_update(run_dir: Path, step: int) -> UpdateReplay:
    """Re-run step `step`'s learner update from the state before it, on the recorded batch."""
    import torch
    from safetensors.torch import load_file

    from rlvr.config import ConfigError, load_plugins, load_run_config
    from rlvr.learner.learner import Learner
    from rlvr.trace.store import read_jsonl
    from rlvr.train.build import load_policy_at, restore_state, seed_everything
    from rlvr.train.checkpoint import weights_fingerprint

    cfg = load_run_config(run_dir)
    load_plugins(cfg)
    if step < 1:
        raise ConfigError(f"--step must be 1 or more, got {step}")
    root = run_dir / "checkpoints"
    before = root / f"step-{step - 1:06d}"
    if step > 1 and not (before / "state.json").is_file():
        kept = sorted(p.name for p in root.glob("step-*") if (p / "state.json").is_file()) if root.is_dir() else []
        raise ConfigError(
            f"replaying step {step}'s update needs the checkpoint of step {step - 1}, which {run_dir} does not have "
            f"(kept: {', '.join(kept) or 'none'}); steps right after a kept checkpoint can be replayed, and "
            "train.checkpoint_every / train.keep_checkpoints decide which are kept"
        )
    row = next(
        (r for r in read_jsonl(run_dir / "metrics.jsonl") if r.get("event") == "step" and r.get("step") == step), None
    )
    if row is None:
        raise ConfigError(f"{run_dir}/metrics.jsonl has no step {step}")
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    seed_everything(cfg.seed)
    ckpt = before if step > 1 else None
    model, tok = load_policy_at(cfg, ckpt)
    learner = Learner(model, cfg, pad_id=int(tok.pad_token_id))
    restore_state(cfg, ckpt, learner, need_optimizer=True)  # as training resumes, the optimizer included
    batch = [_trajectory(r) for r in recorded_step(run_dir, step, trained_only=True)]
    stats = learner.step(batch)
    checks: list[tuple[str, Any, Any, bool]] = []
    for key in ("loss", "grad_norm"):
        orig = row.get(f"train/{key}")
        new = stats.get(key)
        checks.append((key, orig, new, orig == new or (_nan(orig) and _nan(new))))
    after = root / f"step-{step:06d}"
    if (after / "state.json").is_file() and not cfg.model.lora:
        saved = load_file(str(after / "model" / "model.safetensors"))
        mine = {k: v for k, v in model.state_dict().items() if k in saved}
        same = len(mine) == len(saved) and all(torch.equal(mine[k], saved[k]) for k in saved)
        checks.append(("weights", f"{len(saved)} tensors", "identical" if same else "differ", same))
        against = f"checkpoint {after.name}"
    else:
        orig_fp, new_fp = row.get("weights_fingerprint"), weights_fingerprint(model)
        checks.append(("weights fingerprint", orig_fp, new_fp, orig_fp == new_fp))
        against = "the fingerprint logged with the step" if orig_fp is not None else "nothing (no fingerprint logged)"
    source = ckpt.name if ckpt else f"the initial model ({cfg.model.name_or_path})"
    return UpdateReplay(step, source, len(batch), checks, against)


def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)
