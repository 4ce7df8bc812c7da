"""`rlvr tasks calibrate CONFIG --out FILE [--samples K] [--checkpoint DIR] [--levels]
[--held-out] [--json] [key=value ...]`: K replies to each of the config's training tasks
from the model a run would start from (or a checkpoint's), scored as a training step
scores them, recorded in each task's `metadata.calibration` (rlvr.tasks.calibration), and
the whole task set written to FILE. Train on FILE (`tasks.source=FILE`) and the
curriculum starts each task's estimate from that evidence; with --levels each measured
task's difficulty is the level its credit stands for."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlvr.config import ConfigError, load_config

if TYPE_CHECKING:
    from rlvr.types import Task

WHOLE_RANGE = {"min_difficulty": 1, "max_difficulty": 10**6}


def calibrate(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    if args.samples is None:
        args.samples = max(4, cfg.algo.group_size)
    if args.samples < 1:
        raise ConfigError(f"--samples: {args.samples} is not a positive number of replies")
    if cfg.domains:
        raise ConfigError(
            "rlvr tasks calibrate: the config has domain records (domains: [...]); calibrate one task set at a "
            "time, as tasks.source (e.g. tasks.source=FILE domains=[])"
        )
    out = Path(args.out)
    if out.is_dir():
        raise ConfigError(f"--out: {out} is a directory; name the JSONL file to write")
    from rlvr.cli.common import checkpoint_model_dir, generating_model
    from rlvr.tasks.loader import split_tasks, write_tasks
    from rlvr.train.preflight import check_run, run_tasks

    source = checkpoint_model_dir(args.checkpoint) if args.checkpoint else cfg.model.name_or_path
    check_run(cfg, evaluating=False, model=source)  # the run's own checks: a bad input says so before any model loads
    # every task of the source is written; those in the config's difficulty range are measured
    everything = run_tasks(cfg.model_copy(update={"tasks": cfg.tasks.model_copy(update=WHOLE_RANGE)}))
    train, held_out = split_tasks(run_tasks(cfg), cfg.tasks.eval_fraction)
    chosen = train + held_out if args.held_out else train
    if not chosen:
        raise ConfigError(
            f"{cfg.tasks.source}: no training tasks to calibrate (tasks.eval_fraction {cfg.tasks.eval_fraction})"
        )
    from rlvr.rollout.calibrate import sample_calibrations

    t0 = time.perf_counter()
    model, tok, name = generating_model(cfg, source)

    def progress(done: int, total: int) -> None:
        if not args.json:
            print(f"  {done}/{total} tasks sampled ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    result = sample_calibrations(
        model, tok, chosen, cfg, samples=args.samples, model_name=name, set_level=args.levels, on_progress=progress
    )
    if not result.measured:
        raise ConfigError(
            f"no task was calibrated: every task had a reply that failed to run ({result.failed_replies} replies); "
            f"{out} is not written"
        )
    measured = {t.id: t for t in result.tasks}
    written = [measured.get(t.id, t) for t in everything]
    partial = out.with_name(out.name + ".partial")
    write_tasks(written, partial)
    os.replace(partial, out)  # a reader (or --out being the source) never sees half a file
    summary = _summary(result.tasks, chosen, cfg.algo.group_size)
    lo, hi = cfg.tasks.min_difficulty, cfg.tasks.max_difficulty
    outside = sum(not lo <= t.difficulty <= hi for t in result.tasks)
    report = {
        "source": cfg.tasks.source,
        "model": name,
        "samples": args.samples,
        "measured": result.measured,
        "asked": len(chosen),
        "split": "all" if args.held_out else "train",
        "written": len(written),
        "out": str(out),
        "failed_replies": result.failed_replies,
        "outside_range": outside,
        **summary,
        "generate_s": round(result.generate_s, 1),
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"{cfg.tasks.source}: {result.measured} of {len(chosen)} {report['split']} tasks calibrated with {name}, "
        f"{args.samples} replies each, in {report['elapsed_s']:.0f} s"
        + (
            f" ({result.failed_replies} replies failed to run: their tasks keep no record)"
            if result.failed_replies
            else ""
        )
    )
    if args.samples < cfg.algo.group_size:
        print(
            f"  note: {args.samples} replies a task, fewer than the run's group of {cfg.algo.group_size}: with "
            "curriculum.evidence=informative the records understate a group's chance to teach"
        )
    print(
        f"  mean credit {summary['mean_credit']:.3f}; every reply solved {summary['all_solved']}, "
        f"none earned credit {summary['none_earned']}, mixed {summary['mixed']}"
    )
    print(f"  a group of {cfg.algo.group_size} is informative with chance {summary['p_informative']:.3f} on average")
    if args.levels:
        before, after = summary["levels_before"], summary["levels_after"]
        print(f"  levels before {_counts(before)}; after {_counts(after)}")
    if outside:
        print(
            f"  {outside} tasks are now outside tasks.min_difficulty..max_difficulty ({lo}..{hi}): a run with these "
            f"settings leaves them out (level 4: no reply earned credit; tasks.max_difficulty=4 keeps them)"
        )
    print(f"{len(written)} tasks written to {out}")
    return 0


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(c.items(), key=lambda kv: int(kv[0])))


def _summary(measured: list[Task], asked: list[Task], group_size: int) -> dict[str, Any]:
    from rlvr.tasks.calibration import of, p_informative

    cals = [c for t in measured if (c := of(t)) is not None]
    return {
        "mean_credit": statistics.fmean(c.credit for c in cals) if cals else 0.0,
        "all_solved": sum(all(c.solved) for c in cals),
        "none_earned": sum(c.credit == 0 for c in cals),
        "mixed": sum(not all(c.solved) and c.credit > 0 for c in cals),
        "p_informative": statistics.fmean(p_informative(c.rewards, group_size) for c in cals) if cals else 0.0,
        "levels_before": {str(k): v for k, v in Counter(t.difficulty for t in asked).items()},
        "levels_after": {str(k): v for k, v in Counter(t.difficulty for t in measured).items()},
    }
