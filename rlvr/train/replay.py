"""`rlvr replay`: do one recorded step again, without generating anything.

rlvr replay RUN --step N [--task ID] [--config OTHER.yaml] [--repeat K] [--json]
    Re-judge the step's recorded completions: every assistant turn goes through the task's
    environment (the sandbox) again, then the reward (the run's reward section, or OTHER's),
    and every trajectory whose reward, components, flags or verdicts differ is printed with
    what moved. --repeat K judges each K times and reports verdicts that change between
    runs: flaky tests or a nondeterministic checker.

rlvr replay RUN --step N --train [--json]
    Re-run the learner's update of step N from checkpoint N-1 (or the initial model for
    step 1) on the recorded batch, and check loss, gradient norm and the resulting weights
    against the original (checkpoint N when kept, else the weights fingerprint logged with
    step N). On CPU they match exactly; exit 1 when they do not.

Both read the run directory: config.yaml, trajectories.jsonl (every trajectory in full,
token ids included), metrics.jsonl and checkpoints/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EPS = 1e-9


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="re-judge a step's recorded completions, or re-run its update (--train)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run", help="the run directory")
    p.add_argument("--step", type=int, required=True, help="the training step (1-based)")
    p.add_argument("--task", help="only this task's trajectories (re-judging)")
    p.add_argument("--config", help="judge with this config's reward and sandbox sections instead of the run's")
    p.add_argument("--repeat", type=int, default=1, help="judge each completion K times (flaky verdicts)")
    p.add_argument("--train", action="store_true", help="re-run the learner's update instead of re-judging")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError

    run_dir = Path(args.run)
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"{run_dir}: not a run directory (no config.yaml); replay needs the run directory")
    if args.repeat < 1:
        raise ConfigError(f"--repeat must be at least 1, got {args.repeat}")
    if args.train:
        if args.task or args.config or args.repeat != 1:
            raise ConfigError("--train re-runs the whole step's update: --task, --config and --repeat do not apply")
        result = replay_update(run_dir, args.step)
        _print_update(result, args.json)
        return 0 if result.identical else 1
    judged = rejudge(run_dir, args.step, task=args.task, other_config=args.config, repeat=args.repeat)
    _print_rejudge(judged, args.json)
    return 0


# ---- shared ------------------------------------------------------------------------------


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
    from rlvr.envs.base import check_task
    from rlvr.envs.settings import env_settings, make_scorer
    from rlvr.rewards.canary import canary_from_id, is_canary
    from rlvr.tasks import load_tasks

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
    by_id = {t.id: t for t in load_tasks(cfg.tasks.source, check=check_task)}
    for tid in {r["task_id"] for r in recs if is_canary(r["task_id"])}:
        with contextlib.suppress(KeyError):  # a canary is rebuilt from its real task
            by_id[tid] = canary_from_id(tid, by_id)
    missing = sorted({r["task_id"] for r in recs} - set(by_id))
    if missing:
        raise ConfigError(f"tasks no longer in {cfg.tasks.source}: {', '.join(missing[:5])}")
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


def _print_rejudge(judged: list[Judged], as_json: bool) -> None:
    changed = [j for j in judged if j.moved]
    flaky = [j for j in judged if j.flaky]
    if as_json:
        print(json.dumps({"judged": len(judged), "changed": [j.to_dict() for j in changed],
                          "flaky": [j.to_dict() for j in flaky]}, default=str))  # fmt: skip
        return
    for j in changed:
        b, a = j.before, j.after
        print(f"{j.task_id} (group {j.group_id}, sample {j.sample}{', dropped' if j.dropped else ''}): "
              f"reward {_fmt(b['reward'])} -> {_fmt(a['reward'])}")  # fmt: skip
        for what in j.moved:
            if what.startswith("component:"):
                k = what.split(":", 1)[1]
                print(f"  {k}: {_fmt(b['components'].get(k))} -> {_fmt(a['components'].get(k))}")
            elif what == "flags":
                print(f"  flags: {b['flags'] or '-'} -> {a['flags'] or '-'}")
            elif what == "execution":
                print(
                    f"  sandbox: {b['status']} {b['passed']}/{b['total']} -> {a['status']} {a['passed']}/{a['total']}"
                )
            elif what.startswith("test:"):
                name = what.split(":", 1)[1]
                print(f"  test {name}: {b['verdicts'].get(name, '-')} -> {a['verdicts'].get(name, '-')}")
    for j in flaky:
        print(f"FLAKY {j.task_id} (group {j.group_id}, sample {j.sample}): {', '.join(j.flaky)}")
    moved: dict[str, int] = {}
    for j in changed:
        for what in j.moved:
            key = what if not what.startswith("test:") else "tests"
            moved[key] = moved.get(key, 0) + 1
    by = ", ".join(f"{k} {v}" for k, v in sorted(moved.items()))
    print(f"{len(judged)} trajectories re-judged: {len(changed)} differ{f' ({by})' if by else ''}"
          f"{f', {len(flaky)} with flaky verdicts' if flaky else ''}")  # fmt: skip


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


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
    from rlvr.train.checkpoint import load_trainer_state, weights_fingerprint
    from rlvr.train.loop import load_policy_at, seed_everything

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
    if ckpt is not None:
        blob, _ = load_trainer_state(ckpt)
        if "optimizer" not in blob["learner"]:
            raise ConfigError(f"{ckpt} was saved without the optimizer state (train.save_optimizer: false): "
                              "the update cannot be reproduced")  # fmt: skip
        learner.load_state_dict(blob["learner"])
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


def _print_update(r: UpdateReplay, as_json: bool) -> None:
    if as_json:
        checks = [{"what": w, "original": o, "replayed": n, "equal": ok} for w, o, n, ok in r.checks]
        out = {"step": r.step, "from": r.source, "trajectories": r.n_trajectories, "identical": r.identical,
               "weights_checked_against": r.weights_checked_against, "checks": checks}  # fmt: skip
        print(json.dumps(out, default=str))
        return
    print(f"step {r.step}'s update replayed from {r.source} on the recorded batch ({r.n_trajectories} trajectories)")
    for what, orig, new, ok in r.checks:
        print(
            f"  {what:<20} original {_exact(orig):<24} replayed {_exact(new):<24} {'identical' if ok else 'DIFFERENT'}"
        )
    print(f"weights compared with {r.weights_checked_against}: " + ("identical" if r.identical else "NOT identical"))


def _exact(x: Any) -> str:
    return repr(x) if isinstance(x, float) else str(x)
