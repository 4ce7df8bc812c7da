"""`rlvr tasks check [SOURCE] [--config CONFIG] [--sample N] [--json] [--allow-quarantine]
[--strict] [--no-cache]`: the task check a training run makes before it starts (its
reference earns full credit, doing nothing earns at most 0, generic exploits no more than
a wrong answer; docs/tasks.md), on every task of a set, with each quarantined task and
its reasons. Without SOURCE, the config's own task set: tasks.source and its domain
records (`domains: [...]`), as a run reads it.

Exit 0 when the set may train (no domain has more than half its tasks quarantined, or
--allow-quarantine), 1 otherwise, or with --strict when any task is quarantined."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rlvr.cli.common import FMT, config_args, keys_help


def add_parser(sub: Any) -> None:
    tp = sub.add_parser("tasks", help="check a task set before training on it; mine mutants from a run")
    tps = tp.add_subparsers(dest="tasks_command", required=True)
    c = tps.add_parser("check", help="score each task's reference, do-nothing replies and generic exploits")
    c.add_argument(
        "source", nargs="?", help="'bundled:NAME', a JSONL file, or any tasks.source (default: --config's task set)"
    )
    c.add_argument("--config", dest="config_file", help="YAML run config: its reward, sandbox and plugins")
    c.add_argument("--sample", type=int, help="check only N tasks of each domain (as tasks.check=sample does)")
    c.add_argument("--workers", type=int, default=4, help="tasks checked at once (default 4)")
    c.add_argument("--json", action="store_true", help="print the report as one JSON object")
    c.add_argument("--allow-quarantine", action="store_true", help="exit 0 even when a domain would stop a run")
    c.add_argument("--strict", action="store_true", help="exit 1 when any task is quarantined")
    c.add_argument("--no-cache", action="store_true", help="check every task again (the cache is still written)")
    k = tps.add_parser(
        "calibrate",
        help="sample a model's replies to each training task and record what they earned (and the level)",
        epilog=keys_help(),
        formatter_class=FMT,
    )
    config_args(k)
    k.add_argument("--out", required=True, help="where the task set is written (JSONL): every task, calibrated or not")
    k.add_argument("--samples", type=int, help="replies sampled per task (default: the run's group size, at least 4)")
    k.add_argument("--checkpoint", help="the model to measure: a run or checkpoint directory (default: the config's)")
    k.add_argument("--levels", action="store_true", help="also set each measured task's difficulty from its credit")
    k.add_argument("--held-out", action="store_true", help="measure the held-out tasks too (default: training only)")
    k.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    m = tps.add_parser(
        "mine-mutants", help="add a run's failing solutions to the test-writing tasks as realistic mutants"
    )
    m.add_argument("run_dir", help="a run directory whose trajectories hold replies to Python function tasks")
    m.add_argument("--tasks", default="bundled:test_writing", help="the test-writing tasks (default: the bundled)")
    m.add_argument("--functions", default="bundled:python_functions", help="the function tasks the run attempted")
    m.add_argument("--out", help="where the tasks are written (default: --tasks, when it is a file)")
    m.add_argument("--per-task", type=int, default=3, help="mined mutants added to a task at most (default 3)")
    m.add_argument("--family", choices=("train", "hidden"), default="train", help="paid (train) or evaluated only")


def run(args: argparse.Namespace) -> int:
    if args.tasks_command == "mine-mutants":
        return mine_mutants(args)
    if args.tasks_command == "calibrate":
        from rlvr.cli.calibrate import calibrate

        return calibrate(args)
    from rlvr.config import ConfigError, RunConfig, load_config, load_plugins

    cfg = load_config(args.config_file, []) if args.config_file else RunConfig()
    if args.sample is not None and args.sample < 1:
        raise ConfigError(f"--sample: {args.sample} is not a positive number of tasks")
    if args.workers < 1:
        raise ConfigError(f"--workers: {args.workers} is not a positive number")
    load_plugins(cfg)
    from rlvr.envs.base import check_task
    from rlvr.envs.task_check import check_task_set
    from rlvr.tasks import load_tasks
    from rlvr.tasks.check import VerdictCache, default_cache_dir
    from rlvr.train.preflight import check_ready, sampled_check, widened_lines

    if args.source is None:
        if not args.config_file:
            raise ConfigError("rlvr tasks check: name a SOURCE, or a --config whose task set is checked")
        from rlvr.train.preflight import run_tasks, task_set_name

        tasks = run_tasks(cfg)
        args.source = task_set_name(cfg)
    else:
        tasks = load_tasks(args.source, check=check_task)
    try:
        check_ready(tasks)
    except ConfigError as e:
        raise ConfigError(f"{args.source}: {e}") from None
    cache = VerdictCache(default_cache_dir())
    if args.sample:
        report = sampled_check(tasks, args.sample, cfg, cache, refresh=args.no_cache, workers=args.workers)
    else:
        report = check_task_set(tasks, cfg, cache=cache, refresh=args.no_cache, workers=args.workers)
    failing = report.failing_domains()
    for line in widened_lines(report):
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps({"source": args.source, **report.to_dict()}))
    else:
        n = len(report.verdicts)
        head = f"{args.source}: {n} tasks checked" + (f" (a sample of {len(tasks)})" if n < len(tasks) else "")
        print(f"{head}, {report.cached} from the cache, {len(report.quarantined)} quarantined")
        for line in report.lines():
            print(line)
        if failing:
            print(
                f"a run stops on this set: more than half of the checked {', '.join(failing)} tasks are quarantined "
                "(tasks.allow_quarantine=true trains on the rest)",
                file=sys.stderr,
            )
    if args.strict and report.quarantined:
        return 1
    return 1 if failing and not args.allow_quarantine else 0


def mine_mutants(args: argparse.Namespace) -> int:
    """`rlvr tasks mine-mutants RUN`: rlvr.tasks.generators.minedmutants, then the file written."""
    from pathlib import Path

    from rlvr.config import ConfigError

    if args.per_task < 1:
        raise ConfigError(f"--per-task: {args.per_task} is not a positive number")
    out = args.out or (args.tasks if Path(args.tasks).is_file() else None)
    if out is None:
        raise ConfigError(f"--out: {args.tasks} is not a file to rewrite; name where the tasks go")
    import rlvr.envs  # noqa: F401  (the environments check the tasks as they are read)
    from rlvr.tasks.generators.minedmutants import mine_run
    from rlvr.tasks.loader import write_tasks

    try:
        tasks, why = mine_run(Path(args.run_dir), args.tasks, args.functions, per_task=args.per_task,
                              family=args.family)  # fmt: skip
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError(str(e)) from None
    write_tasks(tasks, Path(out))
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(why.items()) if k not in ("candidates", "added"))
    print(
        f"{why['candidates']} candidate mutants from {args.run_dir}; {why['added']} added ({args.family})"
        + (f"; dropped: {dropped}" if dropped else "")
    )
    print(f"{len(tasks)} tasks written to {out}")
    return 0
