"""`rlvr export`: a run's trajectories as reward-model / DPO data or as SFT data
(rlvr.trace.export does the work; docs/export.md has the columns).

rlvr export RUN --format preference --out pairs.jsonl [--min-margin M] [--max-pairs-per-group K]
rlvr export RUN --format sft --out best.parquet
    common: [--steps A:B] [--trained-only | --include-dropped]
"""

from __future__ import annotations

import argparse
from typing import Any

from rlvr.trace.export import FORMATS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="a run's trajectories as preference pairs (reward model / DPO) or SFT data",
        description="preference: within each group (same step, same prompt), pairs (higher reward, lower reward) "
        "in TRL's conversational preference layout (prompt, chosen, rejected) with margin and both reward "
        "breakdowns. sft: each task's best passing trajectory as messages. Flagged (hack) and failed "
        "trajectories are never chosen. Output: .jsonl or .parquet (docs/export.md).",
    )
    p.add_argument("run", metavar="RUN", help="a run directory, or a trace store's path or URL")
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt", help="what to write")
    p.add_argument("--out", required=True, metavar="FILE", help="output file: .jsonl or .parquet")
    p.add_argument(
        "--min-margin",
        type=float,
        metavar="M",
        help="preference: least reward difference of a pair (default: any difference > 0)",
    )
    p.add_argument(
        "--max-pairs-per-group",
        type=int,
        metavar="K",
        help="preference: at most K pairs per group, the largest margins first (default: every pair)",
    )
    p.add_argument("--steps", metavar="A:B", help="training steps to read: A:B (both included), A:, :B or N")
    kept = p.add_mutually_exclusive_group()
    kept.add_argument(
        "--trained-only", dest="trained_only", action="store_true", help="only trajectories that were trained on"
    )
    kept.add_argument(
        "--include-dropped",
        dest="trained_only",
        action="store_false",
        help="also the dropped groups' trajectories (the default: a group dropped for having no signal is "
        "often all-passing, the best SFT data)",
    )
    p.set_defaults(trained_only=False)


def run(args: argparse.Namespace) -> int:
    from rlvr.config.base import ConfigError
    from rlvr.trace.export import export, output_kind, parse_steps
    from rlvr.trace.parquet import run_store_uri

    if args.fmt == "sft" and (args.min_margin is not None or args.max_pairs_per_group is not None):
        raise ConfigError("--min-margin and --max-pairs-per-group apply to --format preference only")
    if args.min_margin is not None and not args.min_margin > 0:
        raise ConfigError(f"--min-margin must be > 0 (ties are never pairs), got {args.min_margin}")
    if args.max_pairs_per_group is not None and args.max_pairs_per_group < 1:
        raise ConfigError(f"--max-pairs-per-group must be at least 1, got {args.max_pairs_per_group}")
    output_kind(args.out)  # a bad extension is an error before any reading
    steps = parse_steps(args.steps)
    summary = export(
        run_store_uri(args.run),
        args.fmt,
        args.out,
        min_margin=args.min_margin,
        max_pairs_per_group=args.max_pairs_per_group,
        steps=steps,
        trained_only=args.trained_only,
    )
    print(summary.line(args.out))
    return 0
