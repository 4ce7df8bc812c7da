"""The `rlvr` command.

rlvr train CONFIG [key.path=value ...] [--resume] [--quiet]
rlvr eval CONFIG [key.path=value ...] [--checkpoint DIR] [--engine hf|vllm|openai --base-url URL] [--json]
rlvr config CONFIG [key.path=value ...]        print the resolved config
rlvr config --keys                             every key, its default and its meaning
rlvr score TASK_FILE COMPLETION_FILE [--config CONFIG] [--task-id ID] [--json]
rlvr sandbox run|check|serve|bench ...
rlvr traces|replay|report|dashboard|export RUN ...   read a run (rlvr/cli/runs.py)
rlvr --version

CONFIG may also be given as `--config CONFIG`, and overrides may come anywhere on the
line (before or after flags). Exit codes: 0 success; 1 `sandbox run`: some test failed
(`sandbox check`: a protection is not active); 2 a usage or input error (a one-line
message, no traceback); 3 the sandbox or the generation engine failed (one line); 4 an alert stopped the
run (docs/alerts.md; a checkpoint was saved); 70 an internal error
(a bug: the traceback is printed); 130 interrupted; 141 the output pipe closed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version
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
    p.add_argument("--version", action="version", version=f"rlvr {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    t = sub.add_parser("train", help="train a policy", epilog=_keys_help(), formatter_class=fmt)
    _config_args(t)
    t.add_argument("--resume", action="store_true", help="continue from the run directory's latest checkpoint")
    t.add_argument("--quiet", action="store_true", help="no progress display")
    t.add_argument("--plain", action="store_true", help="one plain line per step (for logs), even on a terminal")
    e = sub.add_parser("eval", help="pass@1 on the held-out split", epilog=_keys_help(), formatter_class=fmt)
    _config_args(e)
    e.add_argument(
        "--checkpoint",
        help="what to evaluate: a run directory (its latest checkpoint), a checkpoint directory or its model/",
    )
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument(
        "--engine", choices=["hf", "vllm", "openai"], help="what generates (engine.kind; default: the config's)"
    )
    e.add_argument("--base-url", help="--engine openai: the server, e.g. http://127.0.0.1:8000/v1 (engine.base_url)")
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
    run.add_argument("--parallel-tests", type=int, default=2, help="test processes side by side (1: one at a time)")
    run.add_argument(
        "--test-isolation",
        choices=["shared", "process"],
        default="shared",
        help="tests one after another in one fork of the loaded code (shared), or each in its own (process)",
    )
    run.add_argument(
        "--cpus", type=float, default=None, help="cores the run's processes may use together (default: no cap)"
    )
    run.add_argument("--json", action="store_true", help="print one JSON object")
    sbs.add_parser("check", help="print each protection and whether it is active here")
    srv = sbs.add_parser("serve", help="serve the sandbox over HTTP (OpenAPI at /docs)")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8080)
    srv.add_argument("--token-env", default="RLVR_SANDBOX_TOKEN", help="environment variable holding the bearer token")
    srv.add_argument("--concurrency", type=int, default=8, help="submissions executed at once")
    srv.add_argument("--per-client", type=int, default=64, help="submissions in flight per client")
    bench = sbs.add_parser(
        "bench", help="CPU per run, throughput and latency beside per-run baselines (bench/sandbox_throughput.py)"
    )
    bench.add_argument("--n", type=int, default=300, help="runs per cell")
    bench.add_argument("--humaneval", action="store_true", help="also HumanEval's 164 solutions end to end")
    bench.add_argument("--json", help="write the results to this file")
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
    _config_args(c, required=False)
    c.add_argument("--keys", action="store_true", help="list every config key, its default and its meaning")
    from rlvr.cli import runs as cli_runs

    cli_runs.add_parsers(sub)  # traces, replay, report, dashboard, export
    return p


def _version() -> str:
    try:
        return version("rlvr")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _config_args(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument("config", nargs="?", help="YAML run config (or --config)")
    parser.add_argument("overrides", nargs="*", help="key.path=value overrides, anywhere on the line")
    parser.add_argument("--config", dest="config_opt", metavar="CONFIG", help="YAML run config")
    parser.set_defaults(config_required=required)


# key.path=value: a dotted identifier, then '='. Option values are never taken for one.
_OVERRIDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*=")
_VALUE_OPTIONS = {"--config", "--checkpoint", "--engine", "--base-url"}


def _split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """(arguments for argparse, key.path=value overrides) of a train/eval/config line,
    so that overrides may come before or after flags."""
    rest: list[str] = []
    overrides: list[str] = []
    expect_value = False
    for arg in argv:
        if expect_value:
            rest.append(arg)
            expect_value = False
        elif arg in _VALUE_OPTIONS:
            rest.append(arg)
            expect_value = True
        elif _OVERRIDE.match(arg):
            overrides.append(arg)
        else:
            rest.append(arg)
    return rest, overrides


def _resolve_config_arg(args: argparse.Namespace) -> None:
    """args.config from the positional or --config (not both; required where needed)."""
    positional, option = args.config, args.config_opt
    if positional and option:
        # a stray positional after --config is an override without '='
        raise ConfigError(f"'{positional}': give the config once (positional or --config), and overrides as key=value")
    args.config = positional or option
    if args.config is None and args.config_required and not getattr(args, "keys", False):
        raise ConfigError(
            f"rlvr {args.command}: a config file is needed (rlvr {args.command} CONFIG or --config CONFIG)"
        )


def _checkpoint_model_dir(path: str) -> str:
    """The model directory of a run directory's latest checkpoint, of a checkpoint, or
    the model directory itself."""
    from rlvr.train.checkpoint import latest_checkpoint

    p = Path(path)
    if not p.is_dir():
        raise ConfigError(f"--checkpoint {p}: no such directory")
    for root in (p / "checkpoints", p):  # a run directory, or its checkpoints/ folder
        latest = latest_checkpoint(root)
        if latest is not None and (latest / "model" / "config.json").is_file():
            return str(latest / "model")
    if (p / "model" / "config.json").is_file():
        return str(p / "model")
    if (p / "config.json").is_file():
        return str(p)
    raise ConfigError(
        f"--checkpoint {p}: no model found (a run directory with checkpoints/step-N/, a step-N/ checkpoint, "
        "or a model directory with config.json)"
    )


def _quiet_libraries() -> None:
    """The libraries' own progress bars (weights loading, GGUF conversion, shard writing)
    would interleave with rlvr's progress display: rlvr reports its own phases."""
    import huggingface_hub.utils
    import transformers.utils.logging

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()


def cmd_train(args: argparse.Namespace) -> int:
    from rlvr.train.preflight import check_run

    cfg = load_config(args.config, args.overrides)
    # Plugins, tasks, split, sinks and model name checked before torch is even imported, so
    # a mistake is answered in about a second. (On --resume the model is the checkpoint's:
    # checked, with everything else again, once the run is assembled.)
    check_run(cfg, check_model_name=not args.resume)
    from rlvr.learner import collectives as dist
    from rlvr.train.loop import train

    _quiet_libraries()

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


def cmd_eval(args: argparse.Namespace) -> int:
    from rlvr.rollout.evaluate import evaluate
    from rlvr.train.preflight import check_run

    flags = [f"engine.kind={args.engine}"] if args.engine else []
    flags += [f"engine.base_url={args.base_url}"] if args.base_url else []
    cfg = load_config(args.config, [*args.overrides, *flags])
    source = _checkpoint_model_dir(args.checkpoint) if args.checkpoint else cfg.model.name_or_path
    eval_tasks = check_run(cfg, evaluating=True, model=source).eval_tasks
    from rlvr.rollout.models import load_policy  # the model stack, once the inputs are known to be good

    _quiet_libraries()
    if cfg.engine.kind == "openai":  # the server holds the weights; the tokenizer makes the token ids
        from rlvr.rollout.models import load_tokenizer

        model, tok = None, load_tokenizer(source, cfg.model.cache_dir)
        source = f"{cfg.engine.served_model or source} at {cfg.engine.base_url}"
    else:
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
    from rlvr.types import RunStatus

    if args.sandbox_command == "serve":
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

        extra = (["--humaneval"] if args.humaneval else []) + (["--json", args.json] if args.json else [])
        bench_main(["--n", str(args.n), *extra])
        return 0
    if args.sandbox_command == "check":
        with SandboxPool(1) as pool:
            rows = pool.protections
        width = max(len(k) for k in rows)
        for name, active in rows.items():
            print(f"{name:<{width}}  {'active' if active else 'NOT ACTIVE'}")
        if not any(active for name, active in rows.items() if name.startswith("cgroup")):
            print(
                "no writable cgroup hierarchy: memory and time limits hold through rlimits (address space, "
                "CPU seconds, processes) and the wall clock; peak memory and CPU time come from rusage"
            )
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
    if not args.timeout > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.memory_mb < 32:
        raise ConfigError(f"--memory-mb must be at least 32 (MiB), got {args.memory_mb}")
    if args.cpus is not None and not 0.01 <= args.cpus <= 1024:
        raise ConfigError(f"--cpus must be between 0.01 and 1024 cores, got {args.cpus}")
    limits = Limits(
        timeout_s=args.timeout,
        memory_mb=args.memory_mb,
        parallel_tests=args.parallel_tests,
        test_isolation=args.test_isolation,
        cpus=args.cpus,
    )
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
    if result.status is RunStatus.SANDBOX_ERROR:
        return 3
    return 0 if result.total > 0 and result.passed == result.total else 1


def cmd_score(args: argparse.Namespace) -> int:
    from rlvr.envs.scoring import load_one_task, report, score_completion
    from rlvr.rewards.hacks import BEHAVIOURAL

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
        from rlvr.rollout.models import load_tokenizer

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
            where = f"line {h['line']}" if h["line"] else ("run" if h["name"] in BEHAVIOURAL else "code")
            console.print(f"  {where}: {h['name']} ({h.get('severity', 'strong')}): {h['what']}")
        if details.get("hack_action"):
            console.print(f"[red]{details['hack_action']}[/red]")
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
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides: list[str] = []
    if argv and argv[0] in ("train", "eval", "config"):
        argv, overrides = _split_overrides(argv)
    args = _parser().parse_args(argv)
    sys.path.insert(0, str(Path.cwd()))  # plugins named by module resolve from where rlvr runs
    commands = {
        "train": cmd_train,
        "eval": cmd_eval,
        "config": cmd_config,
        "sandbox": cmd_sandbox,
        "score": cmd_score,
    }
    from rlvr.cli import runs as cli_runs

    commands.update(dict.fromkeys(cli_runs.COMMANDS, cli_runs.run))
    try:
        if "config_opt" in args:
            args.overrides = [*args.overrides, *overrides]
            _resolve_config_arg(args)
        return commands[args.command](args)
    except KeyboardInterrupt:
        print("rlvr: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`rlvr config --keys | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:
        if _is_user_error(e):
            print(f"rlvr: error: {e}", file=sys.stderr)
            return 2
        from rlvr.sandbox.pool import SandboxError

        if isinstance(e, SandboxError):  # this machine's sandbox, not the input: say where to look
            print(f"rlvr: sandbox error: {e} (`rlvr sandbox check` lists the protections here)", file=sys.stderr)
            return 3
        from rlvr.rollout.engine import EngineError
        from rlvr.rollout.runner import RolloutError

        if isinstance(e, EngineError | RolloutError):  # the generation engine (a server, vLLM), not rlvr
            print(f"rlvr: generation failed: {e}", file=sys.stderr)
            return 3
        from rlvr.pipeline.redis_queue import QueueError

        if isinstance(e, QueueError) or type(e).__module__.startswith("redis"):  # queue.backend redis
            print(
                f"rlvr: trajectory queue error: {e} (nothing acknowledged is lost: once Redis is reachable, the "
                "same command resumes from the last checkpoint and the batches still in the stream)",
                file=sys.stderr,
            )
            return 3
        from rlvr.trace.monitor import RunStopped

        if isinstance(e, RunStopped):  # an alert rule with action 'stop' (docs/alerts.md)
            print(f"rlvr: {e}; checkpoint saved, continue with --resume once fixed", file=sys.stderr)
            return 4
        traceback.print_exc()
        print(
            f"rlvr: internal error ({type(e).__name__}): this is a bug in rlvr, not in your input; "
            "please report it with the traceback above",
            file=sys.stderr,
        )
        return 70


def _is_user_error(e: BaseException) -> bool:
    """Errors that name a problem in the user's input or setup: one line, no traceback."""
    from rlvr.rollout.model_names import ModelLoadError
    from rlvr.sandbox.spec import SpecError
    from rlvr.tasks import TaskLoadError
    from rlvr.trace.parquet import StoreError

    return isinstance(e, (ConfigError, FileExistsError, ModelLoadError, TaskLoadError, SpecError, StoreError))


if __name__ == "__main__":
    sys.exit(main())
