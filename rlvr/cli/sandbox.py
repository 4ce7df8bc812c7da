"""`rlvr sandbox run|check|serve|bench`: run code in the sandbox, show which protections
are active here, serve it over HTTP, measure it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError


def add_parser(sub: Any) -> None:
    sb = sub.add_parser("sandbox", help="run code in the sandbox; check which protections are active")
    sbs = sb.add_subparsers(dest="sandbox_command", required=True)
    r = sbs.add_parser("run", help="run FILE against TESTS.json and print the verdicts")
    r.add_argument("file", help="the program (Python source)")
    r.add_argument("--tests", required=True, help="TESTS.json: formats assert, call or stdio")
    r.add_argument(
        "--language",
        default="python",
        choices=["python", "c", "cpp", "javascript"],
        help="language of FILE (compiled languages: stdio tests)",
    )
    r.add_argument("--timeout", type=float, default=5.0, help="wall-clock limit of the whole run, seconds")
    r.add_argument("--memory-mb", type=int, default=512, help="memory limit of each test's process, MiB")
    r.add_argument("--parallel-tests", type=int, default=2, help="test processes side by side (1: one at a time)")
    r.add_argument(
        "--test-isolation",
        choices=["shared", "process"],
        default="shared",
        help="tests one after another in one fork of the loaded code (shared), or each in its own (process)",
    )
    r.add_argument(
        "--cpus", type=float, default=None, help="cores the run's processes may use together (default: no cap)"
    )
    r.add_argument("--json", action="store_true", help="print one JSON object")
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


def run(args: argparse.Namespace) -> int:
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
