"""Building a training run's parts, so that the loop (rlvr.train.loop) reads on one screen.

`build_run` does everything before the first step, in this order: checks the config and
the run directory, picks the checkpoint to resume from, loads tasks and the policy, and
builds the learner, the curriculum and the buffer (`Parts`), restores a checkpoint's
state into them (`restore_state`, which replay --train uses too), opens the run's
channel, builds the rollout producer, the logs (`Logs`: the trace store and its readable
JSONL copy, one writer of a step's record), evaluates before training, and builds the
monitor and, last, the rollout driver (inline, or a thread) over the channel. The `Run`
it returns is complete: the parts, the logs, the monitor and the rollouts, with the
per-step chores the loop calls: `log_step`, `save` (a checkpoint), `finish` (evaluation
after training, summary).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from safetensors.torch import load_file

from rlvr.config import ConfigError, RunConfig
from rlvr.curriculum import Curriculum
from rlvr.learner.learner import Learner
from rlvr.pipeline.buffer import ExperienceBuffer
from rlvr.pipeline.channel import QueueChannel, check_backlog, open_channel
from rlvr.pipeline.drivers import Rollouts, make_driver
from rlvr.pipeline.producer import RolloutProducer
from rlvr.rollout.evaluate import EvalResult, evaluate
from rlvr.rollout.lora import adapter_state, apply_lora, load_adapter_state, merged_copy
from rlvr.rollout.models import load_policy
from rlvr.rollout.runner import episode_settings
from rlvr.trace.monitor import RunMonitor
from rlvr.trace.parquet import TraceStore
from rlvr.trace.store import JsonlStore, read_jsonl, summarize_step, truncate_after_step
from rlvr.train.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint, weights_fingerprint
from rlvr.train.ckpt_store import CheckpointStore
from rlvr.train.preflight import RunInputs, check_run
from rlvr.train.progress import Progress
from rlvr.types import RolloutBatch, Trajectory


@dataclass
class TrainSummary:
    run_dir: Path
    steps: int
    eval_before: EvalResult | None
    eval_after: EvalResult | None
    rewards: list[float]
    elapsed_s: float
    suites: dict[str, tuple[EvalResult | None, EvalResult | None]] = field(default_factory=dict)
    """eval.sources: each suite's evaluation (before, after) training."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@dataclass
class Parts:
    """What a run trains with: the config, its inputs, the policy and the learner, the
    sampler and the buffer, and the first step to run (a checkpoint's, when resuming).
    Rollouts from elsewhere (rlvr.dist.ray_runner) are built from these."""

    cfg: RunConfig
    inputs: RunInputs
    model: Any
    tok: Any
    learner: Learner
    sampler: Curriculum
    buffer: ExperienceBuffer
    start: int


@dataclass
class Logs:
    """Where a run's records go: the trace store, metrics.jsonl, trajectories.jsonl, the display."""

    traces: TraceStore
    metrics: JsonlStore
    trajectories: JsonlStore
    progress: Progress

    def evaluate(self, parts: Parts, tasks: list[Any], step: int, when: str, suite: str = "") -> EvalResult:
        """pass@1 of the current policy on `tasks` (held out, or an eval.sources suite),
        logged and traced ('before', 'after')."""
        what = "initial" if when == "before" else "trained"
        self.progress.note(f"evaluating the {what} policy on {suite or f'{len(tasks)} held-out tasks'}")
        r = evaluate(parts.model, parts.tok, tasks, parts.cfg)
        self.metrics.append({"event": "eval", "when": when, **({"suite": suite} if suite else {}), **_eval_row(r)})
        self.traces.write_eval(step, when, _eval_to_dict(r) or {}, r.trajectories, suite=suite)
        return r

    def write_step(self, step: int, row: dict[str, Any], trained: list[Trajectory], dropped: list[Trajectory]) -> None:
        """One step's record, written once to each place from the same row and trajectories:
        the trace store (Parquet, what rlvr query and report read) and its readable copy
        (metrics.jsonl, trajectories.jsonl: dropped ones marked)."""
        self.metrics.append(row)
        for tr in trained:
            self.trajectories.append({"step": step, **tr.to_dict()})
        for tr in dropped:
            self.trajectories.append({"step": step, "dropped": True, **tr.to_dict()})
        self.traces.write_step(step, [(tr, True) for tr in trained] + [(tr, False) for tr in dropped], row)

    def close(self) -> None:
        self.metrics.close()
        self.trajectories.close()


@dataclass
class Run(Parts):
    """A run's parts, complete when `build_run` returns them, and what the loop asks of
    them besides the step."""

    logs: Logs
    monitor: RunMonitor
    rollouts: Rollouts
    rewards: list[float]  # each step's mean reward so far
    eval_before: EvalResult | None
    suites_before: dict[str, EvalResult | None]
    store: CheckpointStore | None  # storage.uri: checkpoints copied there
    last_eval: EvalResult | None = None

    @property
    def run_dir(self) -> Path:
        return self.cfg.run_dir

    @property
    def progress(self) -> Progress:
        return self.logs.progress

    @property
    def eval_tasks(self) -> list[Any]:
        return self.inputs.eval_tasks

    def log_step(
        self, step: int, batch: RolloutBatch, trajs: list[Trajectory], stats: dict[str, float], t: list[float]
    ) -> dict[str, Any]:
        """The step's row (metrics.jsonl, sinks, trace store), its trajectories, and the
        periodic held-out evaluation when due."""
        cfg, buffer = self.cfg, self.buffer
        dropped = [tr for g in batch.dropped for tr in g.trajs]
        summary = summarize_step(trajs, dropped)
        if "reward/mean" in summary:
            self.rewards.append(summary["reward/mean"])
        generated = float(sum(len(tr.completion_ids) for g in [*batch.groups, *batch.dropped] for tr in g.trajs))
        row = {
            "event": "step",
            "step": step + 1,
            **summary,
            **{f"train/{k}": v for k, v in stats.items()},
            **{f"rollout/{k}": v for k, v in batch.stats.items()},
            **{f"curriculum/{k}": v for k, v in batch.curriculum.items()},
            **{f"buffer/{k}": float(v) for k, v in buffer.counters.items()},
            "buffer/size": float(len(buffer)),
            "time/rollout_wait_s": t[1] - t[0],
            "time/train_s": t[2] - t[1],
            # tokens generated for this step's batch (kept or dropped) per second of the step
            "time/tokens_per_s": generated / max(t[2] - t[0], 1e-9),
            # generation alone (the rollout of this batch, possibly overlapped with training)
            "time/gen_tokens_per_s": generated / batch.stats["generate_s"] if batch.stats.get("generate_s") else 0.0,
            "weights_fingerprint": weights_fingerprint(self.model),  # after the update: rlvr replay --train checks it
        }
        if cfg.eval.every and self.eval_tasks and (step + 1) % cfg.eval.every == 0:  # held-out pass@1 now
            self.progress.note(f"step {step + 1}: evaluating on {len(self.eval_tasks)} held-out tasks")
            self.last_eval = evaluate(self.model, self.tok, self.eval_tasks, cfg)
            row["eval/pass_at_1"], row["eval/mean_reward"] = self.last_eval.pass_at_1, self.last_eval.mean_reward
            label = "after" if step + 1 == cfg.train.steps else "periodic"
            self.logs.traces.write_eval(
                step + 1, label, _eval_to_dict(self.last_eval) or {}, self.last_eval.trajectories
            )
        self.logs.write_step(step + 1, row, trajs, dropped)
        self.progress.update(step + 1, row)
        return row

    def save(self, step: int) -> None:
        """A checkpoint after `step` steps: weights, learner and optimizer, sampler, buffer
        and the batches generated but not yet trained on."""
        cfg, lora = self.cfg, self.cfg.model.lora
        with self.rollouts.pause():  # the generator waits between batches: a consistent snapshot
            queue = {"buffer": self.buffer.state_dict(), **self.rollouts.state_dict()}
            state = {
                "sampler": self.sampler.state_dict(),
                "queue": self.rollouts.queue_state(),
                "rewards": self.rewards,
                "eval_before": _eval_to_dict(self.eval_before),
                "suites_before": {k: _eval_to_dict(v) for k, v in self.suites_before.items()},
            }
            path = save_checkpoint(
                self.run_dir / "checkpoints",
                step,
                merged_copy(self.model) if lora else self.model,
                self.tok,
                self.learner.state_dict(optimizer=cfg.train.save_optimizer),
                state,
                keep=cfg.train.keep_checkpoints,
                files={"queue.json": json.dumps(queue)},
                tensors={"adapter.safetensors": adapter_state(self.model)} if lora else None,
            )
        if self.store is not None:  # durable beyond this machine before the queue lets go
            self.progress.note(f"copying checkpoint {step} to {self.store.uri}")
            self.store.upload(path, keep=cfg.train.keep_checkpoints)
        self.rollouts.after_checkpoint()  # the queue lets go of what this checkpoint includes

    def close(self) -> None:
        self.rollouts.close()
        self.monitor.close()

    def finish(self, t_start: float) -> TrainSummary:
        """Held-out evaluation after training (the last step's, when it was just done), the
        eval.sources suites, summary.json."""
        cfg = self.cfg
        eval_after = None
        if self.last_eval is not None and cfg.eval.every and cfg.train.steps % cfg.eval.every == 0:
            eval_after = self.last_eval  # the last step was just evaluated
            self.logs.metrics.append({"event": "eval", "when": "after", **_eval_row(eval_after)})
        elif self.eval_tasks and cfg.eval.after_training:
            eval_after = self.logs.evaluate(self, self.eval_tasks, cfg.train.steps, "after")
        suites_after = _eval_suites(self, self.logs, cfg.train.steps, "after") if cfg.eval.after_training else {}
        summary = TrainSummary(
            self.run_dir,
            cfg.train.steps,
            self.eval_before,
            eval_after,
            self.rewards,
            time.perf_counter() - t_start,
            {k: (self.suites_before.get(k), suites_after.get(k)) for k in self.inputs.suites},
        )
        (self.run_dir / "summary.json").write_text(json.dumps(_summary_dict(summary), indent=2))
        self.logs.close()
        return summary


@dataclass
class Restored:
    """A run's state at its checkpoint (the defaults: a fresh run)."""

    start: int = 0  # the first step to run
    rewards: list[float] = field(default_factory=list)
    eval_before: EvalResult | None = None
    suites_before: dict[str, EvalResult | None] = field(default_factory=dict)
    pending: list[RolloutBatch] = field(default_factory=list)  # generated, not trained (a memory channel's)
    trained: list[str] = field(default_factory=list)  # entry ids trained on (a Redis channel's)
    in_flight: dict[str, Any] = field(default_factory=dict)  # Ray tickets out at the checkpoint


def restore_state(
    cfg: RunConfig,
    ckpt: Path | None,
    learner: Learner,
    sampler: Curriculum | None = None,
    buffer: ExperienceBuffer | None = None,
    *,
    quiet: bool = False,
    need_optimizer: bool = False,
) -> Restored:
    """Load checkpoint `ckpt` into the learner and (when given) the sampler and the buffer,
    and return the rest of its state. Training resumes through it, and replay --train
    (which needs the optimizer state: `need_optimizer`); it reads and never writes."""
    if ckpt is None:
        return Restored()
    blob, state = load_trainer_state(ckpt)
    if "optimizer" not in blob["learner"]:
        if need_optimizer:
            raise ConfigError(f"{ckpt} was saved without the optimizer state (train.save_optimizer: false): "
                              "the update cannot be reproduced")  # fmt: skip
        if not quiet:
            print(f"note: {ckpt} was saved without the optimizer state: AdamW starts afresh", file=sys.stderr)
    learner.load_state_dict(blob["learner"])
    if sampler is not None:
        sampler.load_state_dict(state["sampler"])
    queue = json.loads((ckpt / "queue.json").read_text()) if (ckpt / "queue.json").is_file() else {}
    if buffer is not None:
        buffer.load_state_dict(queue.get("buffer", buffer.state_dict()))
    return Restored(
        start=int(state["step"]),
        rewards=list(state["rewards"]),
        eval_before=_eval_from_dict(state.get("eval_before")),
        suites_before={k: _eval_from_dict(v) for k, v in state.get("suites_before", {}).items()},
        pending=[RolloutBatch.from_dict(p) for p in queue.get("pending", [])],
        trained=_queue_resume_check(cfg, ckpt, state.get("queue") or {"backend": "memory"}),
        in_flight=queue.get("in_flight", {}),
    )


def cut_records_after(cfg: RunConfig, step: int) -> None:
    """Drop what a run that died logged and traced after its checkpoint's `step`."""
    for log in ("metrics.jsonl", "trajectories.jsonl"):
        truncate_after_step(cfg.run_dir / log, step)
    TraceStore(trace_uri(cfg)).truncate_after(step)


def trace_uri(cfg: RunConfig) -> str:
    """Where the run's trace store lives: trace.uri, else beside storage.uri, else the run directory."""
    storage_traces = f"{cfg.storage.uri.rstrip('/')}/traces" if cfg.storage.uri else None
    return cfg.trace.uri or storage_traces or str(cfg.run_dir / "traces")


def build_run(
    cfg: RunConfig,
    *,
    resume: bool = False,
    quiet: bool = False,
    plain: bool = False,
    learner_factory: Callable[[Any, RunConfig, int], Learner] = Learner,
    rollouts_factory: Callable[[Parts, QueueChannel, dict[str, Any]], Rollouts] | None = None,
) -> Run:
    """Everything before the first step (see the module's docstring); a run that fails
    before its model loads leaves no run directory behind."""
    ckpt, store = _starting_point(cfg, resume, quiet)
    seed_everything(cfg.seed)
    inputs = check_run(cfg, model=policy_source(cfg, ckpt))  # tasks, split, model checked before loading
    model, tok = load_policy_at(cfg, ckpt)
    cfg.run_dir.mkdir(parents=True, exist_ok=True)  # only now: a run that failed to start leaves nothing
    (cfg.run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    if inputs.task_check is not None:  # what the task check quarantined, for the report and the user
        (cfg.run_dir / "task_check.json").write_text(json.dumps(inputs.task_check.to_dict(), indent=1) + "\n")
    learner = learner_factory(model, cfg, int(tok.pad_token_id))
    sampler = Curriculum(inputs.train_tasks, cfg.seed, cfg.curriculum, cfg.algo.group_size)
    b = cfg.buffer
    buffer = ExperienceBuffer(b.capacity, b.sampling, b.replay_ratio, max_age=_max_age(cfg), seed=cfg.seed)
    restored = restore_state(cfg, ckpt, learner, sampler, buffer, quiet=quiet)
    if ckpt is not None:
        cut_records_after(cfg, restored.start)
    channel = _open_channel(cfg, ckpt, restored, sampler)
    progress = Progress(cfg.train.steps, restored.start, quiet=quiet, plain=plain)
    producer = None
    if rollouts_factory is None:  # generation here (with rollout workers, they generate)
        episodes = episode_settings(cfg, group_size=cfg.algo.group_size)
        producer = RolloutProducer(cfg, model, tok, episodes, sampler)
        if cfg.engine.kind == "openai":  # a reloading server starts from whatever it holds: hand it this policy
            producer.publish(model, learner.version, copy_weights=False)
        producer.on_progress = lambda name, done, total: progress.phase("rollout", name, done, total)
    learner.on_progress = lambda name, done, total: progress.phase("learner", name, done, total)
    parts = Parts(cfg, inputs, model, tok, learner, sampler, buffer, restored.start)
    logs = Logs(TraceStore(trace_uri(cfg)), JsonlStore(cfg.run_dir / "metrics.jsonl"),
                JsonlStore(cfg.run_dir / "trajectories.jsonl"), progress)  # fmt: skip
    eval_before, suites_before = _evaluate_before(parts, logs, restored)
    history = [{"step": 0, "eval/pass_at_1": eval_before.pass_at_1}] if eval_before else []
    if restored.start:  # what the alert rules' windows start from
        history += [r for r in read_jsonl(cfg.run_dir / "metrics.jsonl") if r.get("event") == "step"]
    monitor = RunMonitor(cfg, logs.traces, history=history, resume_step=restored.start, note=progress.alert)
    if rollouts_factory is not None:  # rollout workers elsewhere (rlvr.dist.ray_runner)
        rollouts = rollouts_factory(parts, channel, restored.in_flight)
    else:  # started last: a thread driver begins generating at once
        assert producer is not None
        rollouts = make_driver(cfg, producer, channel, start=restored.start, version=learner.version)
    return Run(
        **{f.name: getattr(parts, f.name) for f in fields(Parts)}, logs=logs, monitor=monitor, rollouts=rollouts,
        rewards=restored.rewards, eval_before=eval_before, suites_before=suites_before, store=store,
    )  # fmt: skip


def _starting_point(cfg: RunConfig, resume: bool, quiet: bool) -> tuple[Path | None, CheckpointStore | None]:
    """(the checkpoint to resume from, the object storage copy), after the checks that
    need nothing loaded: a trainable engine, the run directory, --resume's checkpoint."""
    if cfg.engine.kind == "openai" and cfg.engine.openai.reload == "none":
        raise ConfigError(
            "engine.kind openai with engine.openai.reload none evaluates a served model (rlvr eval); training needs a "
            "server that takes each new policy version: a vLLM server started with VLLM_SERVER_DEV_MODE=1 and "
            "engine.openai.reload vllm, or engine.kind hf or vllm (docs/engines.md)"
        )
    run_dir, ckpt_root = cfg.run_dir, cfg.run_dir / "checkpoints"
    store = CheckpointStore(cfg.storage.uri) if cfg.storage.uri else None
    if store is not None:  # a newer checkpoint in storage than here: fetch it (a new machine, say)
        _fetch_newer(store, ckpt_root, resume or cfg.train.auto_resume, quiet)
    ckpt = latest_checkpoint(ckpt_root) if (resume or cfg.train.auto_resume) else None
    if resume and ckpt is None:
        raise ConfigError(f"--resume: no checkpoint in {ckpt_root} to resume from (run without --resume to start)")
    # queue/: the run's redis-server, which a Ray driver starts before the learner (rlvr.dist.ray_runner)
    if run_dir.exists() and any(p.name != "queue" for p in run_dir.iterdir()) and not resume and ckpt is None:
        raise FileExistsError(f"run directory {run_dir} is not empty; pass --resume or choose another name")
    if cfg.train.threads:
        torch.set_num_threads(cfg.train.threads)
    return ckpt, store


def _open_channel(cfg: RunConfig, ckpt: Path | None, restored: Restored, sampler: Curriculum) -> QueueChannel:
    """The run's channel with its backlog held: a memory checkpoint's untrained batches go
    back in; a stream's batches that the last process generated and did not train on are
    taken, and the sampler continues right after the newest of them."""
    try:
        channel = open_channel(cfg, cfg.run_dir, restored.trained, resuming=ckpt is not None)
    except BaseException:
        if ckpt is None:  # a run that failed to start leaves nothing
            shutil.rmtree(cfg.run_dir, ignore_errors=True)
        raise
    for untrained in restored.pending:  # a memory checkpoint's (also when it resumes onto Redis)
        channel.put(untrained, sampler.state_dict())
    backlog = channel.backlog()
    check_backlog([b for b, _ in backlog], restored.start)
    newest_state = backlog[-1][1] if backlog else None
    if newest_state is not None:
        sampler.load_state_dict(newest_state)  # as it was right after producing the newest of them
    channel.hold_backlog([b for b, _ in backlog])
    return channel


def _evaluate_before(
    parts: Parts, logs: Logs, restored: Restored
) -> tuple[EvalResult | None, dict[str, EvalResult | None]]:
    """Held-out pass@1 and the eval.sources suites before training (once: a resumed run
    keeps its checkpoint's)."""
    eval_before, suites_before = restored.eval_before, restored.suites_before
    if parts.cfg.eval.before_training and eval_before is None:
        eval_before = logs.evaluate(parts, parts.inputs.eval_tasks, 0, "before")
    if parts.cfg.eval.before_training and not suites_before:
        suites_before = _eval_suites(parts, logs, 0, "before")
    return eval_before, suites_before


def _eval_suites(parts: Parts, logs: Logs, step: int, when: str) -> dict[str, EvalResult | None]:
    """eval.sources, each evaluated whole: logged, traced and returned by suite."""
    return {name: logs.evaluate(parts, tasks, step, when, suite=name) for name, tasks in parts.inputs.suites.items()}


def _fetch_newer(store: CheckpointStore, ckpt_root: Path, resuming: bool, quiet: bool) -> None:
    """The newest checkpoint in storage, into the run directory when it has none as new.
    A fresh run (no --resume, no auto_resume) refuses storage that holds one."""
    there = store.steps()
    if not there:
        return
    if not resuming:
        raise ConfigError(
            f"storage.uri {store.uri} already holds checkpoints (the newest after step {there[-1]}): pass --resume "
            "(or train.auto_resume) to continue that run, or choose another storage.uri"
        )
    here = latest_checkpoint(ckpt_root)
    if here is not None and int(here.name.split("-")[1]) >= there[-1]:
        return
    ckpt_root.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"fetching checkpoint {there[-1]} from {store.uri}", file=sys.stderr)
    store.fetch(there[-1], ckpt_root)


def _queue_resume_check(cfg: RunConfig, ckpt: Path, recorded: dict[str, Any]) -> list[str]:
    """The ids of the batches checkpoint `ckpt` trained on (queue.backend redis); a run
    whose untrained batches wait in a Redis stream cannot resume without it."""
    if recorded.get("backend") == "redis" and cfg.queue.backend != "redis":
        raise ConfigError(
            f"{ckpt} was written by a run with queue.backend redis (stream {recorded.get('stream')!r}): the batches "
            "it generated but did not train on are in that stream. Resume with queue.backend=redis (and the same "
            "queue.url and queue.stream)"
        )
    return list(recorded.get("trained", []))


def policy_source(cfg: RunConfig, ckpt: Path | None) -> str:
    """What the policy loads from: the checkpoint's model, or (LoRA: the base model, whose
    adapters the checkpoint holds) the config's."""
    return str(ckpt / "model") if ckpt and not cfg.model.lora else cfg.model.name_or_path


def load_policy_at(cfg: RunConfig, ckpt: Path | None) -> tuple[Any, Any]:
    """(model, tokenizer) as training has them after checkpoint `ckpt` (None: at the start;
    call after seed_everything(cfg.seed), as train does, for the same fresh adapters)."""
    lora = cfg.model.lora
    model, tok = load_policy(
        policy_source(cfg, ckpt),
        dtype=cfg.model.dtype,
        cache_dir=cfg.model.cache_dir,
        seed=cfg.seed,
        device=cfg.model.device,
    )
    if lora:  # adapters on the base model; a checkpoint's adapter weights replace the fresh ones
        model = apply_lora(model, lora.r, lora.alpha, lora.dropout, lora.target_modules)
        if ckpt:
            load_adapter_state(model, load_file(str(ckpt / "adapter.safetensors")))
    return model, tok


def _max_age(cfg: RunConfig) -> int | None:
    """Replayed groups older than the staleness bound leave the buffer (async or replay)."""
    if cfg.buffer.replay_ratio > 1 or cfg.rollout.mode == "async":
        return max(cfg.rollout.max_staleness, cfg.buffer.replay_ratio)
    return None


def _eval_row(r: EvalResult) -> dict[str, Any]:
    row = {"pass_at_1": r.pass_at_1, "mean_reward": r.mean_reward, "by_difficulty": r.by_difficulty}
    return {**row, "by_domain": r.by_domain} if len(r.by_domain) > 1 else row


def _eval_to_dict(r: EvalResult | None) -> dict[str, Any] | None:
    return r.to_dict() if r is not None else None


def _eval_from_dict(d: dict[str, Any] | None) -> EvalResult | None:
    return EvalResult.from_dict(d) if d is not None else None


def _summary_dict(s: TrainSummary) -> dict[str, Any]:
    q = max(len(s.rewards) // 4, 1)
    return {
        "steps": s.steps,
        "elapsed_s": s.elapsed_s,
        "eval_before": _eval_to_dict(s.eval_before),
        "eval_after": _eval_to_dict(s.eval_after),
        "suites": {k: {"before": _eval_to_dict(b), "after": _eval_to_dict(a)} for k, (b, a) in s.suites.items()},
        "reward_first_quarter": sum(s.rewards[:q]) / q if s.rewards else None,
        "reward_last_quarter": sum(s.rewards[-q:]) / q if s.rewards else None,
        "rewards": s.rewards,
    }
