"""What the supervised commands share (`rlvr sft`, `rlvr rft`): where a run starts (a
fresh, empty run directory, or its latest checkpoint with --resume), the policy as a
checkpoint left it (LoRA adapters applied), and `Stage`: the run as it goes, with where
its records go (metrics.jsonl, the trace store, the sinks and alerts, the display) and
what it does besides its updates (evaluate, log a step, checkpoint, write the model)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from safetensors.torch import load_file

from rlvr.config import ConfigError, RunConfig
from rlvr.rollout.evaluate import EvalResult, evaluate
from rlvr.rollout.lora import adapter_state, apply_lora, load_adapter_state, merged_copy
from rlvr.rollout.models import load_policy
from rlvr.trace.alerts import Alert
from rlvr.trace.monitor import RunMonitor
from rlvr.trace.parquet import TraceStore
from rlvr.trace.store import JsonlStore, read_jsonl, truncate_after_step
from rlvr.train.build import trace_uri
from rlvr.train.checkpoint import latest_checkpoint, save_checkpoint
from rlvr.train.progress import Progress
from rlvr.types import Trajectory


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


def cut_after(cfg: RunConfig, step: int) -> None:
    """What a run that died logged after its checkpoint's step."""
    truncate_after_step(cfg.run_dir / "metrics.jsonl", step)
    TraceStore(trace_uri(cfg)).truncate_after(step)


def eval_result(d: dict[str, Any] | None) -> EvalResult | None:
    return EvalResult.from_dict(d) if d is not None else None


@dataclass
class Stage:
    """A supervised command's run as it goes: its config, the policy, and where its records
    go. `open_stage` makes it; `close` ends its sinks."""

    cfg: RunConfig
    model: Any
    tok: Any
    metrics: JsonlStore
    traces: TraceStore
    progress: Progress
    monitor: RunMonitor

    def evaluate(self, tasks: list[Any], step: int, when: str) -> dict[str, Any]:
        """pass@1 of the policy on `tasks` ('before', 'after'), logged and traced as
        `rlvr train` does it; the summary as plain data (for state.json)."""
        what = "initial" if when == "before" else "fine-tuned"
        self.progress.note(f"evaluating the {what} policy on {len(tasks)} tasks")
        r = evaluate(self.model, self.tok, tasks, self.cfg)
        summary = r.to_dict()
        self.metrics.append({"event": "eval", "when": when, **summary})
        self.traces.write_eval(step, when, summary, r.trajectories)
        return summary

    def log_step(
        self, step: int, row: dict[str, Any], text: str, trajectories: list[tuple[Trajectory, bool]] | None = None
    ) -> list[Alert]:
        """One step's (or round's) record everywhere: metrics.jsonl, the trace store (with
        its trajectories, each marked trained or not), the display (`text`), the sinks
        and the alert rules; the alerts it raised."""
        self.metrics.append(row)
        self.traces.write_step(step, trajectories or [], row)
        self.progress.show(step, text, f"{'round' if trajectories is not None else 'step'} {step}: {text}")
        return self.monitor.step(step, row)

    def save(self, trainer_state: dict[str, Any], state: dict[str, Any], step: int) -> Path:
        """A checkpoint after `step`: the weights (LoRA merged, the adapters beside them),
        the trainer's state, the RNG states and `state` (JSON: what a resumed run reports)."""
        lora = self.cfg.model.lora
        return save_checkpoint(
            self.cfg.run_dir / "checkpoints",
            step,
            merged_copy(self.model) if lora else self.model,
            self.tok,
            trainer_state,
            state,
            keep=self.cfg.sft.keep_checkpoints,
            tensors={"adapter.safetensors": adapter_state(self.model)} if lora else None,
        )

    def write_model(self) -> Path:
        """The final model as a plain model directory, `<run>/model` (LoRA merged), that
        `rlvr train model.name_or_path=...` starts from; written beside, renamed into place."""
        out, tmp = self.cfg.run_dir / "model", self.cfg.run_dir / "model.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        (merged_copy(self.model) if self.cfg.model.lora else self.model).save_pretrained(str(tmp))
        self.tok.save_pretrained(str(tmp))
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
        return out

    def close(self) -> None:
        self.monitor.close()
        self.metrics.close()


def open_stage(cfg: RunConfig, model: Any, tok: Any, *, total: int, start: int, quiet: bool, plain: bool) -> Stage:
    """The run directory (its resolved config written), its records opened (what a killed
    run logged after checkpoint `start` cut first), the display for `total` steps, and the
    monitor, its alert windows continuing from the steps already done."""
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    (cfg.run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    if start:
        cut_after(cfg, start)
    traces = TraceStore(trace_uri(cfg))
    history = [r for r in read_jsonl(cfg.run_dir / "metrics.jsonl") if r.get("event") == "step"] if start else []
    metrics = JsonlStore(cfg.run_dir / "metrics.jsonl")
    progress = Progress(total, start, quiet=quiet, plain=plain)
    monitor = RunMonitor(cfg, traces, history=history, resume_step=start, note=progress.alert)
    return Stage(cfg, model, tok, metrics, traces, progress, monitor)
