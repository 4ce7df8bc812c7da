"""What the supervised commands share (`rlvr sft`, `rlvr rft`): where a run starts (a
fresh, empty run directory, or its latest checkpoint with --resume), the policy as a
checkpoint left it (LoRA adapters applied), pass@1 on tasks logged and traced as
`rlvr train` logs it, and cutting what a killed run logged after its checkpoint."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from safetensors.torch import load_file

from rlvr.config import ConfigError, RunConfig
from rlvr.rollout.evaluate import EvalResult, evaluate
from rlvr.rollout.lora import adapter_state, apply_lora, load_adapter_state, merged_copy
from rlvr.rollout.models import load_policy
from rlvr.trace.parquet import TraceStore
from rlvr.trace.store import JsonlStore, truncate_after_step
from rlvr.train.build import trace_uri
from rlvr.train.checkpoint import latest_checkpoint, save_checkpoint
from rlvr.train.progress import Progress


def starting_point(cfg: RunConfig, resume: bool) -> Path | None:
    """The checkpoint to resume from, after the run directory's checks."""
    root = cfg.run_dir / "checkpoints"
    ckpt = latest_checkpoint(root) if resume else None
    if resume and ckpt is None:
        raise ConfigError(f"--resume: no checkpoint in {root} to resume from (run without --resume to start)")
    if not resume and cfg.run_dir.exists() and any(cfg.run_dir.iterdir()):
        raise FileExistsError(f"run directory {cfg.run_dir} is not empty; pass --resume or choose another name")
    return ckpt


def model_source(cfg: RunConfig, ckpt: Path | None) -> str:
    return str(ckpt / "model") if ckpt and not cfg.model.lora else cfg.model.name_or_path


def load_model(cfg: RunConfig, ckpt: Path | None) -> tuple[Any, Any]:
    """The policy as the run has it at `ckpt` (None: at the start), LoRA adapters applied."""
    m, lora = cfg.model, cfg.model.lora
    model, tok = load_policy(
        model_source(cfg, ckpt), dtype=m.dtype, cache_dir=m.cache_dir, seed=cfg.seed, device=m.device
    )
    if lora:
        model = apply_lora(model, lora.r, lora.alpha, lora.dropout, lora.target_modules)
        if ckpt:
            load_adapter_state(model, load_file(str(ckpt / "adapter.safetensors")))
    return model, tok


def evaluate_tasks(
    cfg: RunConfig,
    model: Any,
    tok: Any,
    tasks: list[Any],
    step: int,
    when: str,
    metrics: JsonlStore,
    traces: TraceStore,
    progress: Progress,
) -> dict[str, Any]:
    progress.note(f"evaluating the {'initial' if when == 'before' else 'fine-tuned'} policy on {len(tasks)} tasks")
    r = evaluate(model, tok, tasks, cfg)
    summary = {"pass_at_1": r.pass_at_1, "mean_reward": r.mean_reward, "num_tasks": r.num_tasks,
               "by_difficulty": {str(k): v for k, v in r.by_difficulty.items()}, "by_domain": r.by_domain}  # fmt: skip
    metrics.append({"event": "eval", "when": when, **summary})
    traces.write_eval(step, when, summary, r.trajectories)
    return summary


def cut_after(cfg: RunConfig, step: int) -> None:
    """What a run that died logged after its checkpoint's step."""
    truncate_after_step(cfg.run_dir / "metrics.jsonl", step)
    TraceStore(trace_uri(cfg)).truncate_after(step)


def eval_result(d: dict[str, Any] | None) -> EvalResult | None:
    if d is None:
        return None
    by_difficulty = {int(k): v for k, v in d["by_difficulty"].items()}
    return EvalResult(d["pass_at_1"], d["mean_reward"], d["num_tasks"], by_difficulty, by_domain=d["by_domain"])


def save_stage(
    cfg: RunConfig, model: Any, tok: Any, trainer_state: dict[str, Any], state: dict[str, Any], step: int
) -> Path:
    """A checkpoint after `step`: the weights (LoRA merged, the adapters beside them),
    the trainer's state, the RNG states and `state` (JSON: the figures a resumed run
    reports)."""
    lora = cfg.model.lora
    return save_checkpoint(
        cfg.run_dir / "checkpoints",
        step,
        merged_copy(model) if lora else model,
        tok,
        trainer_state,
        state,
        keep=cfg.sft.keep_checkpoints,
        tensors={"adapter.safetensors": adapter_state(model)} if lora else None,
    )


def write_model_dir(cfg: RunConfig, model: Any, tok: Any) -> Path:
    """The run's final model as a plain model directory, `<run>/model` (LoRA merged), that
    `rlvr train model.name_or_path=...` starts from; written beside and renamed into place."""
    out, tmp = cfg.run_dir / "model", cfg.run_dir / "model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    (merged_copy(model) if cfg.model.lora else model).save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out
