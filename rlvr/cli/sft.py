"""`rlvr sft CONFIG [key.path=value ...] [--resume] [--quiet] [--plain]`: supervised
fine-tuning on sft.data (chat files, datasets directories, the tasks' references), then
the table of held-out loss and pass@1 before and after, and the model directory written."""

from __future__ import annotations

import argparse
from typing import Any

from rlvr.cli.common import before_after_table, quiet_libraries, run_parser
from rlvr.config import load_config


def add_parser(sub: Any) -> None:
    run_parser(sub, "sft", "supervised fine-tuning (the stage before RL)")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    from rlvr.config.run import check_command_keys

    check_command_keys(cfg, "sft", args.overrides)
    from rlvr.sft.data import check_sources

    check_sources(cfg.sft.data)
    from rlvr.train.preflight import check_run  # the environments: after the config's own checks

    if cfg.eval.before_training or cfg.eval.after_training or "tasks" in cfg.sft.data:
        check_run(cfg, check_model_name=not args.resume)  # before torch is imported
    from rlvr.sft.run import run_sft

    quiet_libraries()
    s = run_sft(cfg, resume=args.resume, quiet=args.quiet, plain=args.plain)
    from rich.console import Console

    title = f"rlvr sft: {cfg.name} ({s.steps} steps on {s.examples} examples, {s.elapsed_s / 60:.1f} min)"
    table = before_after_table(title, s.eval_before, s.eval_after)
    loss = lambda v: f"{v:.4f}" if v is not None else "-"  # noqa: E731
    table.add_row(f"held-out loss ({s.held_out} examples, per reply token)", loss(s.loss_before), loss(s.loss_after))
    if s.losses:
        q = max(len(s.losses) // 4, 1)
        first, last = sum(s.losses[:q]) / q, sum(s.losses[-q:]) / q
        table.add_row(f"training loss (mean of the first / last {q} steps)", f"{first:.4f}", f"{last:.4f}")
    console = Console()
    console.print(table)
    for why, count in s.left_out.items():
        console.print(f"left out: {count} {why}")
    console.print(f"model: {s.model_dir}  (rlvr train ... model.name_or_path={s.model_dir})")
    return 0
