"""`rlvr train CONFIG [key.path=value ...] [--resume] [--quiet] [--plain]`: a training run
(in this process, under torchrun with the sharded learner, or on Ray), then the table of
held-out pass@1 before and after; with `stages` (e.g. [sft, rl]) each stage in turn."""

from __future__ import annotations

import argparse
from typing import Any

from rlvr.cli.common import quiet_libraries, run_parser
from rlvr.config import load_config


def add_parser(sub: Any) -> None:
    run_parser(sub, "train", "train a policy")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    from rlvr.config.run import check_command_keys

    check_command_keys(cfg, "train", args.overrides)
    from rlvr.train.preflight import check_run  # the environments: after the config's own checks

    # Plugins, tasks, split, sinks and model name checked before torch is even imported, so
    # a mistake is answered in about a second. (On --resume the model is the checkpoint's:
    # checked, with everything else again, once the run is assembled.)
    check_run(cfg, check_model_name=not args.resume)
    from rlvr.learner import collectives as dist
    from rlvr.train.loop import train

    quiet_libraries()
    if cfg.stages:
        return _staged(cfg, args)

    if dist.launched():  # torchrun --nproc-per-node N -m rlvr.cli train ...: the sharded learner
        from rlvr.train.sharded import run_launched

        launched = run_launched(cfg, resume=args.resume, quiet=args.quiet, plain=args.plain)
        if launched is None:
            return 0  # ranks other than 0 followed rank 0's learner; rank 0 reports
        s = launched
    elif cfg.dist.backend == "ray":  # the roles on Ray actors (docs/distributed.md)
        from rlvr.dist.ray_runner import run_on_ray

        s = run_on_ray(cfg, resume=args.resume, quiet=args.quiet)
    else:
        s = train(cfg, resume=args.resume, quiet=args.quiet, plain=args.plain)
    from rich.console import Console  # the parser is built for every command: rich only when printing
    from rich.table import Table

    console = Console()
    steps = lambda n: f"{n} step" + ("s" if n != 1 else "")  # noqa: E731
    table = Table(title=f"rlvr: {cfg.name} ({steps(s.steps)}, {s.elapsed_s / 60:.1f} min)")
    table.add_column("")
    table.add_column("at the start", justify="right")
    table.add_column("at the end", justify="right")
    b, a = s.eval_before, s.eval_after
    fmt = lambda r, f: f"{f(r):.3f}" if r is not None else "-"  # noqa: E731
    n = next((r.num_tasks for r in (b, a) if r is not None), 0)
    table.add_row(f"held-out pass@1 ({n} tasks, greedy)", fmt(b, lambda r: r.pass_at_1), fmt(a, lambda r: r.pass_at_1))
    table.add_row("held-out mean reward", fmt(b, lambda r: r.mean_reward), fmt(a, lambda r: r.mean_reward))
    for name, (sb, sa) in s.suites.items():
        n = next((r.num_tasks for r in (sb, sa) if r is not None), 0)
        label = f"{name} pass@1 ({n} tasks, greedy)"
        table.add_row(label, fmt(sb, lambda r: r.pass_at_1), fmt(sa, lambda r: r.pass_at_1))
    q = max(len(s.rewards) // 4, 1)
    first, last = sum(s.rewards[:q]) / q, sum(s.rewards[-q:]) / q
    table.add_row(f"train reward (mean of the first / last {steps(q)})", f"{first:.3f}", f"{last:.3f}")
    console.print(table)
    console.print(f"run directory: {s.run_dir}")
    return 0


def _staged(cfg: Any, args: argparse.Namespace) -> int:
    """`stages: [...]`: each stage in turn (rlvr.sft.stages), then pass@1 after each."""
    from rlvr.config import ConfigError
    from rlvr.learner import collectives as dist

    if dist.launched() or cfg.dist.backend == "ray":
        raise ConfigError("stages: a staged run runs in one process (not under torchrun or on Ray)")
    from rich.console import Console
    from rich.table import Table

    from rlvr.sft.stages import run_stages

    results = run_stages(cfg, resume=args.resume, quiet=args.quiet, plain=args.plain)
    table = Table(title=f"rlvr: {cfg.name} (stages: {', '.join(cfg.stages)})")
    table.add_column("held-out pass@1 (greedy)")
    table.add_column("", justify="right")
    table.add_column("run directory")
    fmt = lambda v: f"{v:.3f}" if v is not None else "-"  # noqa: E731
    table.add_row("at the start", fmt(results[0].pass_before), "")
    for r in results:
        table.add_row(f"after {r.stage}" + (" (done earlier)" if r.skipped else ""), fmt(r.pass_after), str(r.run_dir))
    Console().print(table)
    return 0
