"""The `rlvr` command.

rlvr train CONFIG [key.path=value ...] [--resume] [--quiet]
rlvr eval CONFIG [key.path=value ...] [--checkpoint DIR] [--json]
rlvr config CONFIG [key.path=value ...]        print the resolved config
rlvr config --keys                             every key, its default and its meaning
rlvr score TASK_FILE COMPLETION_FILE [--config CONFIG] [--task-id ID] [--json]
rlvr sandbox run|check|serve|bench ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from rlvr.config import ConfigError, RunConfig, describe_fields, load_config, load_plugins


def _keys_help() -> str:
    lines = ["config keys (set in the YAML file or as key.path=value):"]
    for key, default, desc in describe_fields(RunConfig):
        lines.append(f"  {key} = {default}\n      {desc}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rlvr", description="Reinforcement learning from verifiable rewards.")
    sub = p.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    t = sub.add_parser("train", help="train a policy", epilog=_keys_help(), formatter_class=fmt)
    t.add_argument("config", help="YAML run config")
    t.add_argument("overrides", nargs="*", help="key.path=value overrides")
    t.add_argument("--resume", action="store_true", help="continue from the run directory's latest checkpoint")
    t.add_argument("--quiet", action="store_true", help="no progress display")
    e = sub.add_parser("eval", help="pass@1 on the held-out split", epilog=_keys_help(), formatter_class=fmt)
    e.add_argument("config")
    e.add_argument("overrides", nargs="*")
    e.add_argument("--checkpoint", help="a checkpoint directory (or its model/ subdirectory) to evaluate")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    sb = sub.add_parser("sandbox", help="run code in the sandbox; check which protections are active")
    sbs = sb.add_subparsers(dest="sandbox_command", required=True)
    run = sbs.add_parser("run", help="run FILE against TESTS.json and print the verdicts")
    run.add_argument("file", help="the program (Python source)")
    run.add_argument("--tests", required=True, help="TESTS.json: formats assert, call or stdio")
    run.add_argument(
        "--language",
        default="python",
        choices=["python", "c", "cpp", "javascript"],
        help="language of FILE (compiled languages: stdio tests)",
    )
    run.add_argument("--timeout", type=float, default=5.0, help="wall-clock limit of the whole run, seconds")
    run.add_argument("--memory-mb", type=int, default=512, help="memory limit of each test's process, MiB")
    run.add_argument(
        "--parallel-tests", type=int, default=2, help="tests run side by side, each in its own fork (1: one by one)"
    )
    run.add_argument("--json", action="store_true", help="print one JSON object")
    sbs.add_parser("check", help="print each protection and whether it is active here")
    srv = sbs.add_parser("serve", help="serve the sandbox over HTTP (OpenAPI at /docs)")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8080)
    srv.add_argument("--token-env", default="RLVR_SANDBOX_TOKEN", help="environment variable holding the bearer token")
    srv.add_argument("--concurrency", type=int, default=8, help="submissions executed at once")
    srv.add_argument("--per-client", type=int, default=64, help="submissions in flight per client")
    bench = sbs.add_parser("bench", help="print the throughput table (bench/sandbox_throughput.py)")
    bench.add_argument("--n", type=int, default=200)
    sc = sub.add_parser(
        "score",
        help="the full reward breakdown and hack flags of one completion for one task",
        description="Judge COMPLETION_FILE (the assistant's whole reply) on one task exactly as "
        "training does, and print every reward component, the combined reward and the hack flags.",
    )
    sc.add_argument("task_file", help="task file: JSONL (use --task-id if it has several) or one task as .json")
    sc.add_argument("completion_file", help="the reply to score, as plain text ('-' for stdin)")
    sc.add_argument("--config", help="run config whose reward section applies (default: the defaults)")
    sc.add_argument("--task-id", help="which task of a multi-task file")
    sc.add_argument(
        "--tokens", action="store_true", help="count the reply's tokens with the config's model (length component)"
    )
    sc.add_argument("--json", action="store_true", help="print one JSON object")
    c = sub.add_parser("config", help="print the resolved config, or every key with --keys")
    c.add_argument("config", nargs="?")
    c.add_argument("overrides", nargs="*")
    c.add_argument("--keys", action="store_true")
    return p


def _checkpoint_model_dir(path: str) -> str:
    p = Path(path)
    if (p / "model" / "config.json").is_file():
        return str(p / "model")
    if (p / "config.json").is_file():
        return str(p)
    raise ConfigError(f"--checkpoint {p}: no model found (expected {p}/model/config.json)")


def cmd_train(args: argparse.Namespace) -> int:
    from rlvr.train.loop import train

    cfg = load_config(args.config, args.overrides)
    load_plugins(cfg)
    s = train(cfg, resume=args.resume, quiet=args.quiet)
    console = Console()
    table = Table(title=f"rlvr: {cfg.name} ({s.steps} steps, {s.elapsed_s / 60:.1f} min)")
    table.add_column("held-out eval")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    b, a = s.eval_before, s.eval_after
    fmt = lambda r, f: f"{f(r):.3f}" if r is not None else "-"  # noqa: E731
    table.add_row("pass@1", fmt(b, lambda r: r.pass_at_1), fmt(a, lambda r: r.pass_at_1))
    table.add_row("mean reward", fmt(b, lambda r: r.mean_reward), fmt(a, lambda r: r.mean_reward))
    q = max(len(s.rewards) // 4, 1)
    table.add_row(
        "train reward (first / last quarter)", f"{sum(s.rewards[:q]) / q:.3f}", f"{sum(s.rewards[-q:]) / q:.3f}"
    )
    console.print(table)
    console.print(f"run directory: {s.run_dir}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from rlvr.evaluate import evaluate, pick_eval_tasks
    from rlvr.models import load_policy
    from rlvr.tasks import load_tasks, split_tasks

    cfg = load_config(args.config, args.overrides)
    load_plugins(cfg)
    source = _checkpoint_model_dir(args.checkpoint) if args.checkpoint else cfg.model.name_or_path
    tasks = load_tasks(cfg.tasks.source, cfg.tasks.min_difficulty, cfg.tasks.max_difficulty)
    _, eval_tasks = split_tasks(tasks, cfg.tasks.eval_fraction)
    eval_tasks = pick_eval_tasks(eval_tasks, cfg.eval.num_tasks)
    model, tok = load_policy(
        source, dtype=cfg.model.dtype, cache_dir=cfg.model.cache_dir, seed=cfg.seed, device=cfg.model.device
    )
    r = evaluate(model, tok, eval_tasks, cfg)
    out = {
        "model": source,
        "pass_at_1": r.pass_at_1,
        "mean_reward": r.mean_reward,
        "num_tasks": r.num_tasks,
        "by_difficulty": r.by_difficulty,
        "by_domain": r.by_domain,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{source}: pass@1 {r.pass_at_1:.3f} on {r.num_tasks} held-out tasks (mean reward {r.mean_reward:.3f})")
        for d, v in r.by_difficulty.items():
            print(f"  difficulty {d}: {v:.3f}")
        if len(r.by_domain) > 1:
            for dom, v in r.by_domain.items():
                print(f"  domain {dom}: {v:.3f}")
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    from rlvr.sandbox import Limits, SandboxPool, execute
    from rlvr.sandbox.spec import SpecError

    if args.sandbox_command == "serve":
        import os

        from rlvr.sandbox.service import serve

        token = os.environ.get(args.token_env) or None
        if token is None:
            print(
                f"warning: ${args.token_env} is not set: the server accepts requests without a token", file=sys.stderr
            )
        serve(args.host, args.port, token, args.concurrency, args.per_client)
        return 0
    if args.sandbox_command == "bench":
        from rlvr.sandbox.bench import main as bench_main

        bench_main(["--n", str(args.n)])
        return 0
    if args.sandbox_command == "check":
        with SandboxPool(1) as pool:
            rows = pool.protections
        width = max(len(k) for k in rows)
        for name, active in rows.items():
            print(f"{name:<{width}}  {'active' if active else 'NOT ACTIVE'}")
        return 0 if all(rows.values()) else 1
    code_path, tests_path = Path(args.file), Path(args.tests)
    for p in (code_path, tests_path):
        if not p.is_file():
            raise ConfigError(f"file not found: {p}")
    try:
        tests = json.loads(tests_path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{tests_path}: not valid JSON: {e}") from None
    if isinstance(tests, dict) and tests.get("format") == "pytest" and "file" in tests and "source" not in tests:
        test_file = tests_path.parent / str(tests.pop("file"))
        if not test_file.is_file():
            raise ConfigError(f"{tests_path}: pytest file not found: {test_file}")
        tests["source"] = test_file.read_text()
    if args.parallel_tests < 1:
        raise ConfigError(f"--parallel-tests must be at least 1, got {args.parallel_tests}")
    limits = Limits(timeout_s=args.timeout, memory_mb=args.memory_mb, parallel_tests=args.parallel_tests)
    try:
        with SandboxPool(1) as pool:
            result = execute(code_path.read_text(), tests, limits, pool=pool, language=args.language)
    except SpecError as e:
        raise ConfigError(f"{tests_path}: {e}") from None
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(
            f"{result.status.value}: {result.passed}/{result.total} tests passed "
            f"({result.wall_time_s * 1000:.0f} ms, {result.peak_memory_mb:.0f} MiB)"
        )
        for t in result.tests:
            print(f"  {t.status.value:<7} {t.name}" + (f"  -- {t.message}" if t.message else ""))
        if result.error:
            print(f"error: {result.error}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from rlvr.scoring import load_one_task, report, score_completion

    cfg = load_config(args.config)
    load_plugins(cfg)
    task = load_one_task(args.task_file, args.task_id)
    if args.completion_file == "-":
        completion = sys.stdin.read()
    else:
        cp = Path(args.completion_file)
        if not cp.is_file():
            raise ConfigError(f"completion file not found: {cp}")
        completion = cp.read_text()
    num_tokens = None
    if args.tokens:
        from rlvr.models import load_tokenizer

        tok = load_tokenizer(cfg.model.name_or_path, cfg.model.cache_dir)
        num_tokens = len(tok(completion, add_special_tokens=False)["input_ids"])
    out = report(score_completion(task, completion, cfg, num_tokens))
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    console = Console()
    table = Table(title=f"{out['task_id']} ({out['domain']}): reward {out['total']:.3f}")
    table.add_column("component")
    table.add_column("value", justify="right")
    table.add_column("details")
    details = out["details"]
    for name, value in out["components"].items():
        table.add_row(name, f"{value:.3f}", json.dumps(details.get(name, ""), default=str)[:100])
    console.print(table)
    if details.get("gated_out"):
        console.print(f"gated out: {', '.join(details['gated_out'])}")
    if out["flags"]:
        console.print(f"[red]hack flags: {', '.join(out['flags'])}[/red]")
        for h in details.get("hacks", []):
            console.print(f"  line {h['line']}: {h['name']}: {h['what']}")
    ex = out["execution"]
    if ex:
        console.print(f"sandbox: {ex['status']}, {ex['passed']}/{ex['total']} tests passed")
        for t in ex["tests"]:
            if t["status"] != "PASSED":
                console.print(f"  {t['status']:<7} {t['name']}  -- {t['message'][:200]}")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    if args.keys:
        print(_keys_help())
        return 0
    cfg = load_config(args.config, args.overrides)
    print(yaml.safe_dump(cfg.model_dump(), sort_keys=False), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sys.path.insert(0, str(Path.cwd()))  # plugins named by module resolve from where rlvr runs
    try:
        commands = {
            "train": cmd_train,
            "eval": cmd_eval,
            "config": cmd_config,
            "sandbox": cmd_sandbox,
            "score": cmd_score,
        }
        return commands[args.command](args)
    except (ConfigError, FileExistsError) as e:
        print(f"rlvr: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a named failure from the library: report it plainly
        from rlvr.models import ModelLoadError
        from rlvr.tasks import TaskLoadError

        if isinstance(e, (ModelLoadError, TaskLoadError)):
            print(f"rlvr: error: {e}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
