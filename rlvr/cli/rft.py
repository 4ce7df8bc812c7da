"""`rlvr rft CONFIG [key.path=value ...] [--resume] [--quiet] [--plain]`: rejection-sampling
fine-tuning (rft.rounds of: sample rft.samples per training task, keep what the reward
pays, fine-tune on it with the sft settings), then the table of held-out pass@1 before
and after, the samples kept per round, and the model directory written."""

from __future__ import annotations

import argparse
from typing import Any

from rlvr.cli.common import before_after_table, quiet_libraries, run_parser
from rlvr.config import load_config


def add_parser(sub: Any) -> None:
    run_parser(sub, "rft", "rejection-sampling fine-tuning (expert iteration)", per="round")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    from rlvr.config.run import check_command_keys

    check_command_keys(cfg, "rft", args.overrides)
    from rlvr.sft.rft import check_rft
    from rlvr.train.preflight import check_run

    check_rft(cfg)
    check_run(cfg, check_model_name=not args.resume)  # before torch is imported
    from rlvr.sft.rft import run_rft

    quiet_libraries()
    s = run_rft(cfg, resume=args.resume, quiet=args.quiet, plain=args.plain)
    from rich.console import Console

    title = f"rlvr rft: {cfg.name} ({s.rounds} rounds, {s.elapsed_s / 60:.1f} min)"
    table = before_after_table(title, s.eval_before, s.eval_after)
    console = Console()
    console.print(table)
    kept = ", ".join(f"{k}/{n}" for k, n in zip(s.kept, s.sampled, strict=True))
    console.print(f"samples kept per round: {kept}")
    console.print(f"model: {s.model_dir}  (rlvr train ... model.name_or_path={s.model_dir})")
    return 0
