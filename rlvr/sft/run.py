"""`rlvr sft`: a supervised fine-tuning run, on the same model loading, LoRA, checkpoints,
trace store, metric sinks, alerts, display and evaluation as `rlvr train`.

    examples = load_examples(sft.data)              # files, datasets, task references
    train, held_out = split_held_out(examples)      # by a hash of each example
    steps = schedule(train lengths, seed)           # every step's batch, fixed by the seed
    evaluate before: held-out loss, pass@1 on the tasks' held-out split
    for step in steps[start:]:
        stats = trainer.step(batch)                 # mean NLL of the replies' tokens
        log, alerts, maybe save a checkpoint
    evaluate after; the final model in <run>/model (LoRA merged)

The run directory is laid out as a training run's (config.yaml, metrics.jsonl, traces/,
checkpoints/step-N/, summary.json) plus `model/`, a model directory that
`rlvr train model.name_or_path=<run>/model` starts from. A checkpoint holds the
weights, AdamW and the schedule, and the RNG states; the schedule of batches is
recomputed from the seed, so `--resume` after a kill continues with the same batches and
ends with the weights of an uninterrupted run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from rlvr.config import ConfigError, RunConfig
from rlvr.envs.settings import env_settings
from rlvr.rollout.evaluate import EvalResult
from rlvr.sft.data import TASKS, Loaded, check_sources, load_examples, split_held_out
from rlvr.sft.encode import Encoded, ExampleError, encode
from rlvr.sft.plan import schedule
from rlvr.sft.stage import Stage, eval_result, load_model, model_source, open_stage, starting_point
from rlvr.sft.trainer import SftTrainer
from rlvr.trace.monitor import RunStopped
from rlvr.train.build import seed_everything
from rlvr.train.checkpoint import load_trainer_state, weights_fingerprint
from rlvr.train.preflight import RunInputs, check_run


@dataclass
class SftSummary:
    run_dir: Path
    steps: int
    examples: int  # trained on
    held_out: int
    loss_before: float | None  # held-out loss
    loss_after: float | None
    eval_before: EvalResult | None
    eval_after: EvalResult | None
    losses: list[float]  # each step's training loss
    left_out: dict[str, int]
    elapsed_s: float
    model_dir: Path
    by_source: dict[str, int] = field(default_factory=dict)


@dataclass
class SftData:
    train: list[Encoded]
    held_out: list[Encoded]
    loaded: Loaded


def prepare_data(cfg: RunConfig, inputs: RunInputs | None, tok: Any) -> SftData:
    """The examples of sft.data, encoded, split into training and held-out ones; those
    over sft.max_length are left out and counted."""
    s = cfg.sft
    tasks = inputs.train_tasks if inputs is not None else []
    loaded = load_examples(
        s.data, tasks=tasks, settings=env_settings(cfg), check_references=s.check_references,
        max_turns=cfg.rollout.max_turns,
    )  # fmt: skip
    train_ex, held_ex = split_held_out(loaded.examples, s.held_out)
    encoded: dict[int, Encoded] = {}
    for ex in [*train_ex, *held_ex]:
        try:
            enc = encode(tok, ex.messages, tools=ex.tools, response_prefix=cfg.prompt.response_prefix)
        except ExampleError as e:
            raise ConfigError(f"sft.data: {ex.id}: {e}") from None
        if enc.length > s.max_length:
            loaded.leave_out(f"examples over sft.max_length ({s.max_length} tokens)")
            continue
        encoded[id(ex)] = enc
    train = [encoded[id(e)] for e in train_ex if id(e) in encoded]
    held = [encoded[id(e)] for e in held_ex if id(e) in encoded]
    if not train:
        why = "; ".join(f"{n} {k}" for k, n in loaded.left_out.items()) or "the sources are empty"
        raise ConfigError(f"sft.data: no example left to train on ({why})")
    return SftData(train, held, loaded)


def run_sft(cfg: RunConfig, *, resume: bool = False, quiet: bool = False, plain: bool = False) -> SftSummary:
    """The whole supervised run (see the module's docstring)."""
    t_start = time.perf_counter()
    s = cfg.sft
    check_sources(s.data)
    ckpt = starting_point(cfg, resume)
    seed_everything(cfg.seed)
    evaluating = cfg.eval.before_training or cfg.eval.after_training
    inputs = check_run(cfg, model=model_source(cfg, ckpt)) if evaluating or TASKS in s.data else None
    eval_tasks = inputs.eval_tasks if inputs is not None else []
    if s.threads:
        torch.set_num_threads(s.threads)
    model, tok = load_model(cfg, ckpt)
    data = prepare_data(cfg, inputs, tok)
    plan = schedule([e.length for e in data.train], s.batch_size, seed=cfg.seed, epochs=s.epochs, max_steps=s.max_steps)
    trainer = SftTrainer(model, s, int(tok.pad_token_id), len(plan))
    state: dict[str, Any] = {}
    if ckpt is not None:
        blob, state = load_trainer_state(ckpt)
        trainer.load_state_dict(blob["learner"])
    start = trainer.steps_done
    run = open_stage(cfg, model, tok, total=len(plan), start=start, quiet=quiet, plain=plain)
    trainer.on_progress = lambda name, done, total: run.progress.phase("learner", name, done, total)
    if ckpt is None:
        state = _before(run, trainer, data, eval_tasks)
    losses: list[float] = list(state.get("losses", []))
    try:
        with run.progress:
            for step in range(start, len(plan)):
                t0 = time.perf_counter()
                stats = trainer.step([data.train[i] for i in plan[step]])
                row = _row(step + 1, stats, time.perf_counter() - t0, model)
                losses.append(stats["loss"])
                if s.eval_every and (step + 1) % s.eval_every == 0 and data.held_out:
                    row["sft/held_out_loss"] = trainer.mean_loss(data.held_out)
                alerts = run.log_step(step + 1, row, _stats_text(row))
                stop = next((a for a in alerts if a.action == "stop"), None)
                due = (s.checkpoint_every and (step + 1) % s.checkpoint_every == 0) or step + 1 == len(plan)
                if due or stop or any(a.action == "checkpoint" for a in alerts):
                    run.save(trainer.state_dict(), {"stage": "sft", **state, "losses": losses}, step + 1)
                if stop:
                    raise RunStopped(stop)
        return _finish(run, trainer, data, eval_tasks, state, losses, t_start)
    finally:
        run.close()


def _before(run: Stage, trainer: SftTrainer, data: SftData, eval_tasks: list[Any]) -> dict[str, Any]:
    """The figures before training (kept in every checkpoint, so a resumed run reports
    them): what was read and left out, the held-out loss, pass@1."""
    loaded = data.loaded
    run.progress.note(
        f"sft: {len(data.train)} training examples, {len(data.held_out)} held out"
        + "".join(f"; left out: {n} {why}" for why, n in loaded.left_out.items())
    )
    state: dict[str, Any] = {"left_out": loaded.left_out, "by_source": loaded.by_source}
    run.metrics.append(
        {"event": "sft_data", "train": len(data.train), "held_out": len(data.held_out), **state,
         "train_tokens": sum(e.trained for e in data.train)}
    )  # fmt: skip
    state["loss_before"] = trainer.mean_loss(data.held_out) if data.held_out else None
    if run.cfg.eval.before_training and eval_tasks:
        state["eval_before"] = run.evaluate(eval_tasks, 0, "before")
    run.metrics.append({"event": "held_out_loss", "when": "before", "loss": state["loss_before"]})
    return state


def _row(step: int, stats: dict[str, float], seconds: float, model: Any) -> dict[str, Any]:
    return {
        "event": "step",
        "step": step,
        **{f"train/{k}": v for k, v in stats.items()},
        "time/train_s": seconds,
        "time/tokens_per_s": stats["tokens"] / max(seconds, 1e-9),
        "weights_fingerprint": weights_fingerprint(model),
    }


def _stats_text(row: dict[str, Any]) -> str:
    held = f"  held-out {row['sft/held_out_loss']:.3f}" if "sft/held_out_loss" in row else ""
    return f"loss {row['train/loss']:.3f}{held}  {row['time/tokens_per_s']:.0f} tok/s  lr {row['train/lr']:.2e}"


def _finish(
    run: Stage,
    trainer: SftTrainer,
    data: SftData,
    eval_tasks: list[Any],
    state: dict[str, Any],
    losses: list[float],
    t_start: float,
) -> SftSummary:
    """Held-out loss and pass@1 after training, the final model directory, summary.json."""
    cfg = run.cfg
    loss_after = trainer.mean_loss(data.held_out) if data.held_out else None
    run.metrics.append({"event": "held_out_loss", "when": "after", "loss": loss_after})
    steps = trainer.steps_done
    eval_after = run.evaluate(eval_tasks, steps, "after") if cfg.eval.after_training and eval_tasks else None
    out = run.write_model()
    summary = SftSummary(
        cfg.run_dir, steps, len(data.train), len(data.held_out), state.get("loss_before"), loss_after,
        eval_result(state.get("eval_before")), eval_result(eval_after), losses, dict(state.get("left_out", {})),
        time.perf_counter() - t_start, out, dict(state.get("by_source", {})),
    )  # fmt: skip
    (cfg.run_dir / "summary.json").write_text(
        json.dumps(
            {"stage": "sft", "steps": steps, "examples": summary.examples, "held_out": summary.held_out,
             "loss_before": summary.loss_before, "loss_after": loss_after, "eval_before": state.get("eval_before"),
             "eval_after": eval_after, "left_out": summary.left_out, "by_source": summary.by_source,
             "elapsed_s": summary.elapsed_s, "model_dir": str(out), "losses": losses},
            indent=2,
        )
    )  # fmt: skip
    return summary
