"""`rlvr rft CONFIG [key.path=value ...] [--resume] [--quiet] [--plain]`: rejection-sampling
fine-tuning (rft.rounds of: sample rft.samples per training task, keep what the reward
pays, fine-tune on it with the sft settings), then the table of held-out pass@1 before
and after, the samples kept per round, and the model directory written."""

from __future__ import annotations

import argparse
from typing import Any

from rlvr.cli.common import FMT, config_args, keys_help, quiet_libraries
from rlvr.config import load_config


def add_parser(sub: Any) -> None:
    t = sub.add_parser(
        "rft", help="rejection-sampling fine-tuning (expert iteration)", epilog=keys_help(), formatter_class=FMT
    )
    config_args(t)
    t.add_argument("--resume", action="store_true", help="continue from the run directory's latest checkpoint")
    t.add_argument("--quiet", action="store_true", help="no progress display")
    t.add_argument("--plain", action="store_true", help="one plain line per round (for logs), even on a terminal")


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
    from rich.table import Table

    table = Table(title=f"rlvr rft: {cfg.name} ({s.rounds} rounds, {s.elapsed_s / 60:.1f} min)")
    table.add_column("")
    table.add_column("at the start", justify="right")
    table.add_column("at the end", justify="right")
    b, a = s.eval_before, s.eval_after
    n = next((r.num_tasks for r in (b, a) if r is not None), 0)
    if n:
        fmt = lambda r: f"{r.pass_at_1:.3f}" if r is not None else "-"  # noqa: E731
        table.add_row(f"held-out pass@1 ({n} tasks, greedy)", fmt(b), fmt(a))
    console = Console()
    console.print(table)
    kept = ", ".join(f"{k}/{n}" for k, n in zip(s.kept, s.sampled, strict=True))
    console.print(f"samples kept per round: {kept}")
    console.print(f"model: {s.model_dir}  (rlvr train ... model.name_or_path={s.model_dir})")
    return 0
