"""A staged run (`stages: [sft, rl]`, run by `rlvr train`): each stage in its own
directory, <run>/<stage>, each starting from the model the stage before it wrote.

    model = model.name_or_path
    for stage in stages:
        if <run>/<stage>/summary.json exists: it is done (a resumed run skips it)
        run the stage (sft: rlvr sft, rft: rlvr rft, rl: rlvr train) from `model`,
            resuming it when its directory has a checkpoint and --resume was given
        model = <run>/<stage>/model

Held-out pass@1 is measured before the first stage and after each (a later stage's
"before" is the earlier one's "after", so it is not measured twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.train.checkpoint import latest_checkpoint


@dataclass
class StageResult:
    stage: str
    run_dir: Path
    pass_before: float | None
    pass_after: float | None
    skipped: bool  # finished by an earlier run
    model_dir: Path | None  # what the next stage starts from


def stage_config(cfg: RunConfig, stage: str, model: str, first: bool) -> RunConfig:
    """The stage's own config: its directory, the model it starts from, and (after the
    first stage) no evaluation before it."""
    update: dict[str, Any] = {
        "name": f"{cfg.name}/{stage}",
        "stages": [],
        "model": cfg.model.model_copy(update={"name_or_path": model}),
    }
    if not first:
        update["eval"] = cfg.eval.model_copy(update={"before_training": False})
    return cfg.model_copy(update=update)


def run_stages(cfg: RunConfig, *, resume: bool = False, quiet: bool = False, plain: bool = False) -> list[StageResult]:
    """Every stage in order (see the module's docstring)."""
    if not cfg.stages:
        raise ConfigError("stages: empty (rlvr train runs RL alone then)")
    root = cfg.run_dir
    if root.exists() and any(root.iterdir()) and not resume:
        raise FileExistsError(f"run directory {root} is not empty; pass --resume or choose another name")
    model = cfg.model.name_or_path
    results: list[StageResult] = []
    for i, stage in enumerate(cfg.stages):
        sc = stage_config(cfg, stage, model, first=i == 0)
        done = (sc.run_dir / "summary.json").is_file()
        if done:
            results.append(_finished(stage, sc))
        else:
            again = resume and latest_checkpoint(sc.run_dir / "checkpoints") is not None
            if not again and sc.run_dir.exists():  # started, killed before its first checkpoint
                import shutil

                shutil.rmtree(sc.run_dir)
            results.append(_run(stage, sc, again, quiet, plain))
        if results[-1].model_dir is not None:
            model = str(results[-1].model_dir)
    return results


def _run(stage: str, cfg: RunConfig, resume: bool, quiet: bool, plain: bool) -> StageResult:
    if stage == "sft":
        from rlvr.sft.run import run_sft

        s = run_sft(cfg, resume=resume, quiet=quiet, plain=plain)
        return StageResult(stage, cfg.run_dir, _p(s.eval_before), _p(s.eval_after), False, s.model_dir)
    if stage == "rft":
        from rlvr.sft.rft import run_rft

        r = run_rft(cfg, resume=resume, quiet=quiet, plain=plain)
        return StageResult(stage, cfg.run_dir, _p(r.eval_before), _p(r.eval_after), False, r.model_dir)
    from rlvr.train.loop import train

    t = train(cfg, resume=resume, quiet=quiet, plain=plain)
    last = latest_checkpoint(cfg.run_dir / "checkpoints")
    return StageResult(stage, cfg.run_dir, _p(t.eval_before), _p(t.eval_after), False,
                       last / "model" if last else None)  # fmt: skip


def _finished(stage: str, cfg: RunConfig) -> StageResult:
    """A stage an earlier run finished: its figures from its summary.json."""
    import json

    s = json.loads((cfg.run_dir / "summary.json").read_text())
    model: Path | None = cfg.run_dir / "model"
    if stage == "rl":
        last = latest_checkpoint(cfg.run_dir / "checkpoints")
        model = last / "model" if last else None
    before, after = s.get("eval_before") or {}, s.get("eval_after") or {}
    return StageResult(stage, cfg.run_dir, before.get("pass_at_1"), after.get("pass_at_1"), True, model)


def _p(r: Any) -> float | None:
    return None if r is None else float(r.pass_at_1)
