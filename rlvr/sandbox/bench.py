"""Sandbox cost: CPU per run, throughput and latency, rlvr's pool beside per-run baselines.

    rlvr sandbox bench [--n 300] [--humaneval] [--json PATH]
    (or: python bench/sandbox_throughput.py)
    python bench/sandbox_throughput.py --smoke   # 5 runs per cell, 4 HumanEval problems (the test suite)

First, the structural floor: the CPU of one run's structure (fork + exit; as PID 1 of a
new PID namespace; in a cgroup; with its own mount, IPC and UTS namespaces; its three
mounts; dropped privileges; the seccomp filter; one test process forked), step by step,
in a process holding what the fork server holds, with the jail's own functions, each
step checked inside the child before it is timed (`structural_floor`); rlvr's CPU per
run is then printed as a multiple of it (goal: <= 1.5x). A step this machine cannot do
is one line saying why, never a figure.

For a small Python function with three asserts, at concurrency 1 and 2, it prints runs
per second, p50/p99 latency and CPU milliseconds per run for:
- fork + exit of a warm interpreter (the floor: what any fresh process costs),
- in-process exec (no isolation at all),
- subprocess.run([python, "-c", ...]) per run (what SandboxFusion does),
- bwrap --unshare-all ... python per run (needs Debian's bubblewrap),
- rlvr's pool with shared test isolation (the default) and with process isolation.
CPU per run is measured from the pool's own cgroup (the server and every jail; created
for the bench) or from rusage for the baselines; all in the same run, side by side.
With --humaneval it also runs HumanEval's 164 canonical solutions with their full tests
at concurrency 2 through rlvr, one bwrap per problem and one subprocess per problem.
Timings on a shared machine are noisy: the table shows medians; compare within one run.
A run that fails (a baseline's, or a canonical solution through any method) is an error
(BaselineFailed; the CLI: exit 3, one line), never a figure. --smoke prints the results as
one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.sandbox import Limits, SandboxPool, execute
from rlvr.sandbox.floors import BaselineFailed, fork_exit_floor, print_structure, structural_floor

CODE = "def add(a, b):\n    return a + b\n"
TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
SCRIPT = CODE + "\n".join(TESTS) + "\n"
SMOKE_N, SMOKE_HUMANEVAL = 5, 4
"""--smoke: runs per cell, and HumanEval problems (the first ones) per method."""
BWRAP = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]


def in_process() -> None:
    ns: dict[str, object] = {}
    exec(SCRIPT, ns)


def _done(what: str, r: subprocess.CompletedProcess[bytes], check: bool) -> bool:
    if check and r.returncode != 0:
        last = (r.stderr.decode(errors="replace").strip().splitlines() or ["(no output)"])[-1]
        raise BaselineFailed(f"{what}: a run failed (exit {r.returncode}): {last[:300]}")
    return r.returncode == 0


def plain_subprocess(script: str = SCRIPT, timeout: float = 30, *, check: bool = False) -> bool:
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=timeout)
    return _done("subprocess.run(python -c)", r, check)


def bwrap_argv(script: str) -> list[str]:
    """bwrap with a private /tmp, the interpreter bound back in when it lives under /tmp
    (a checkout's virtual environment there, as in CI's clone): hidden, every run would
    fail at exec and be timed as a fast one."""
    keep = {os.path.realpath(p) for p in (sys.prefix, os.path.dirname(sys.executable), sys.base_prefix)}
    rebind = [a for p in sorted(keep) if p == "/tmp" or p.startswith("/tmp/") for a in ("--ro-bind", p, p)]
    return [*BWRAP, "--tmpfs", "/tmp", *rebind, sys.executable, "-c", script]


def bwrap(script: str = SCRIPT, timeout: float = 30, *, check: bool = False) -> bool:
    r = subprocess.run(bwrap_argv(script), capture_output=True, timeout=timeout)
    return _done("bwrap --unshare-all python", r, check)


class CpuMeter:
    """CPU seconds spent by this process and its waited-for children, and by the
    processes of a cgroup made for the pool's server (so every jail is counted)."""

    def __init__(self) -> None:
        self.dir: str | None = None
        self.v2 = os.path.isfile("/sys/fs/cgroup/cgroup.controllers")
        with contextlib.suppress(OSError):
            if os.geteuid() == 0:
                own = _own_cgroup("cpuacct" if not self.v2 else None)
                base = "/sys/fs/cgroup" if self.v2 else "/sys/fs/cgroup/cpuacct"
                d = os.path.join(base, own.lstrip("/"), f"rlvr-bench-{os.getpid()}")
                os.makedirs(d, exist_ok=True)
                self.dir = d

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Children started within are created in the meter's cgroup."""
        if self.dir is None:
            yield
            return
        before = _own_cgroup("cpuacct" if not self.v2 else None)
        base = "/sys/fs/cgroup" if self.v2 else "/sys/fs/cgroup/cpuacct"
        _write(os.path.join(self.dir, "cgroup.procs"), str(os.getpid()))
        try:
            yield
        finally:
            _write(os.path.join(base, before.lstrip("/"), "cgroup.procs"), str(os.getpid()))

    def group_cpu(self) -> float | None:
        if self.dir is None:
            return None
        if self.v2:
            with open(os.path.join(self.dir, "cpu.stat")) as f:
                usage = dict(line.split() for line in f if line.strip())
            return int(usage["usage_usec"]) / 1e6
        with open(os.path.join(self.dir, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    def close(self) -> None:
        if self.dir:
            with contextlib.suppress(OSError):
                os.rmdir(self.dir)


def _own_cgroup(controller: str | None) -> str:
    with open("/proc/self/cgroup") as f:
        for line in f.read().splitlines():
            hid, ctrls, path = line.split(":", 2)
            if (controller is None and hid == "0") or (controller and controller in ctrls.split(",")):
                return path
    return "/"


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _process_cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def measure(fn: Callable[[], Any], n: int, concurrency: int, cpu: Callable[[], float | None]) -> dict[str, float]:
    """Runs per second, p50/p99 ms and CPU ms per run (None when it cannot be measured)."""
    lat: list[float] = []

    def one(_: int) -> None:
        t = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - t)

    for _ in range(min(10, n)):  # warm-up
        fn()
    c0 = cpu()
    t0 = time.perf_counter()
    if concurrency == 1:
        for k in range(n):
            one(k)
    else:
        with ThreadPoolExecutor(concurrency) as ex:
            list(ex.map(one, range(n)))
    wall = time.perf_counter() - t0
    c1 = cpu()
    lat.sort()
    out = {
        "runs_per_s": n / wall,
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000,
    }
    if c0 is not None and c1 is not None:
        out["cpu_ms"] = (c1 - c0) / n * 1000
    return out


def _humaneval(
    concurrency: int, rows: dict[str, Callable[[dict[str, Any]], bool]], limit: int | None = None
) -> dict[str, Any]:
    """Seconds for each method to run the canonical solutions (the first `limit`) with
    their full tests. A canonical solution passes: a method under which one did not did
    not do the work, and its time is not a figure (BaselineFailed)."""
    from rlvr.tasks.humaneval import load_humaneval

    problems = load_humaneval()[:limit]
    out: dict[str, Any] = {}
    for name, fn in rows.items():
        t0 = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as ex:
            ok = list(ex.map(fn, problems))
        out[name] = {"seconds": time.perf_counter() - t0, "passed": sum(ok), "problems": len(problems)}
        print(f"  {name:<36}{out[name]['seconds']:>9.2f} s{sum(ok):>6}/{len(problems)} passed", flush=True)
        if sum(ok) != len(problems):
            failed = [p["task_id"] for p, good in zip(problems, ok, strict=True) if not good]
            raise BaselineFailed(
                f"HumanEval through {name}: {len(failed)} of {len(problems)} canonical solutions failed "
                f"({', '.join(failed[:5])}): its time is not a figure"
            )
    return out


def _row(name: str, conc: int, res: dict[str, float]) -> None:
    cpu_ms = f"{res['cpu_ms']:.2f}" if "cpu_ms" in res else "n/a"
    line = f"{name:<34}{conc:>5}{res['runs_per_s']:>10.1f}{res['p50_ms']:>10.2f}{res['p99_ms']:>10.2f}"
    print(f"{line}{cpu_ms:>12}", flush=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300, help="runs per cell")
    ap.add_argument("--humaneval", action="store_true", help="also HumanEval's 164 canonical solutions end to end")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_N} runs per cell and {SMOKE_HUMANEVAL} HumanEval problems; the results as JSON on the last line",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.n, args.humaneval = min(args.n, SMOKE_N), True
    meter = CpuMeter()
    # CPU per run counts everything: this process (the caller: building the request,
    # deciding verdicts, spawning the baselines) and every process it starts (the pool's
    # server and jails, subprocess and bwrap), all in a cgroup made for the bench.
    cpu: Callable[[], float | None] = meter.group_cpu if meter.dir is not None else _process_cpu
    pools: dict[str, SandboxPool] = {}
    try:
        return _bench(args, meter, cpu, pools)
    finally:  # a failed run (BaselineFailed) leaves no pool or cgroup behind
        for pool in pools.values():
            pool.close()
        meter.close()


def _bench(
    args: argparse.Namespace, meter: CpuMeter, cpu: Callable[[], float | None], pools: dict[str, SandboxPool]
) -> dict[str, Any]:
    with meter.inside():
        pools.update({mode: SandboxPool(2).start() for mode in ("shared", "process")})
        print("protections:", ", ".join(k for k, v in pools["shared"].protections.items() if v))
        structure = structural_floor(args.n)
        print_structure(structure)

        def rlvr(mode: str) -> Callable[[], None]:
            limits = Limits(timeout_s=5, test_isolation=mode)

            def run() -> None:
                r = execute(CODE, TESTS, limits, pool=pools[mode])
                assert r.passed == 3, r

            return run

        have_bwrap = shutil.which("bwrap") is not None
        rows: list[tuple[str, Callable[[], Any] | None]] = [
            ("in-process exec (no isolation)", in_process),
            ("subprocess.run(python -c)", lambda: plain_subprocess(check=True)),
            ("bwrap --unshare-all python", (lambda: bwrap(check=True)) if have_bwrap else None),
            ("rlvr pool, shared tests", rlvr("shared")),
            ("rlvr pool, process per test", rlvr("process")),
        ]
        results: dict[str, dict[str, float]] = {}
        print(f"\n{'method':<34}{'conc':>5}{'runs/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'CPU ms/run':>12}")
        results["fork + exit (floor) @1"] = fork_exit_floor(args.n)
        _row("fork + exit (floor)", 1, results["fork + exit (floor) @1"])
        for conc in (1, 2):
            for name, fn in rows:
                if fn is None:
                    print(f"{name:<34}{conc:>5}   not installed (apt-get install bubblewrap)")
                    continue
                results[f"{name} @{conc}"] = measure(fn, args.n, conc, cpu)
                _row(name, conc, results[f"{name} @{conc}"])
    print()
    floor = results["fork + exit (floor) @1"].get("cpu_ms")
    over_structure: dict[str, float] = {}
    for conc in (1, 2):
        ours = results[f"rlvr pool, shared tests @{conc}"]
        base = results.get(f"bwrap --unshare-all python @{conc}")
        if "cpu_ms" in ours:
            line = f"concurrency {conc}: rlvr CPU per run {ours['cpu_ms']:.2f} ms"
            if structure["cpu_ms"]:
                over_structure[str(conc)] = ours["cpu_ms"] / structure["cpu_ms"]
                line += f" = {over_structure[str(conc)]:.2f}x the structural floor ({structure['cpu_ms']:.2f} ms)"
                line += ", goal <= 1.5x"
            else:
                line += " (no structural floor measured here)"
            if floor:
                line += f"; {ours['cpu_ms'] / floor:.1f}x the fork + exit floor"
            print(line)
        if base:
            print(f"concurrency {conc}: rlvr throughput = {ours['runs_per_s'] / base['runs_per_s']:.1f}x bwrap's")
    print(f"concurrency 1: rlvr p50 {results['rlvr pool, shared tests @1']['p50_ms']:.2f} ms, target <= 4 ms")
    out: dict[str, Any] = {
        "n": args.n,
        "cells": results,
        "protections": pools["shared"].protections,
        "structural_floor": structure,
        "rlvr_over_structural_floor": over_structure,
    }
    if args.humaneval:
        count = SMOKE_HUMANEVAL if args.smoke else 164
        print(f"\nHumanEval: {count} canonical solutions with their full tests, concurrency 2")
        from rlvr.tasks.humaneval import humaneval_tests

        he_limits = Limits(timeout_s=10)

        def solution(p: dict[str, Any]) -> str:
            return str(p["prompt"] + p["canonical_solution"])

        def he_rlvr(p: dict[str, Any]) -> bool:
            r = execute(solution(p), humaneval_tests(p["test"], p["entry_point"]), he_limits, pool=pools["shared"])
            return r.total > 0 and r.passed == r.total

        def he_script(p: dict[str, Any]) -> str:
            return solution(p) + "\n" + p["test"] + f"\ncheck({p['entry_point']})\n"

        he_rows: dict[str, Callable[[dict[str, Any]], bool]] = {
            "rlvr pool (per-test verdicts)": he_rlvr,
            "subprocess per problem": lambda p: plain_subprocess(he_script(p)),
        }
        if have_bwrap:
            he_rows["bwrap per problem"] = lambda p: bwrap(he_script(p))
        out["humaneval"] = _humaneval(2, he_rows, SMOKE_HUMANEVAL if args.smoke else None)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    if args.smoke:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
