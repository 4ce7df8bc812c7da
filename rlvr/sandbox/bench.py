"""Sandbox throughput and latency: rlvr's pool against per-execution baselines.

    rlvr sandbox bench [--n 200]      (or: python bench/sandbox_throughput.py)

For a small Python function with three asserts, at concurrency 1 and 2, it prints
executions per second and per-execution p50/p99 latency for:
- in-process exec (no isolation at all: the floor for overhead),
- subprocess.run([python, "-c", ...]) per execution,
- bwrap --unshare-all ... python per execution (needs Debian's bubblewrap),
- rlvr's warm pool (full jail: namespaces, seccomp, cgroup, unprivileged user).
All in the same run, side by side. Timings on a shared 2-core machine are noisy: the
table shows medians, and the ratio to the bwrap baseline is the figure to quote.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from rlvr.sandbox import Limits, SandboxPool, execute

CODE = "def add(a, b):\n    return a + b\n"
TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
SCRIPT = CODE + "\n".join(TESTS) + "\n"


def in_process() -> None:
    ns: dict[str, object] = {}
    exec(SCRIPT, ns)


def plain_subprocess() -> None:
    subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True)


def bwrap() -> None:
    subprocess.run(
        [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            sys.executable,
            "-c",
            SCRIPT,
        ],
        check=True,
        capture_output=True,
    )


def measure(fn: Callable[[], None], n: int, concurrency: int) -> tuple[float, float, float]:
    """(executions per second, p50 ms, p99 ms)."""
    lat: list[float] = []

    def one(_: int) -> None:
        t = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - t)

    for _ in range(min(5, n)):  # warm-up
        fn()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(one, range(n)))
    wall = time.perf_counter() - t0
    lat.sort()
    return n / wall, statistics.median(lat) * 1000, lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="executions per cell")
    args = ap.parse_args(argv)
    pool = SandboxPool(2).start()
    print("protections:", ", ".join(k for k, v in pool.protections.items() if v))

    def rlvr_pool() -> None:
        r = execute(CODE, TESTS, Limits(timeout_s=5), pool=pool)
        assert r.passed == 3, r

    rows: list[tuple[str, Callable[[], None] | None]] = [
        ("in-process exec (no isolation)", in_process),
        ("subprocess.run(python -c)", plain_subprocess),
        ("bwrap --unshare-all python", bwrap if shutil.which("bwrap") else None),
        ("rlvr pool (full jail)", rlvr_pool),
    ]
    results: dict[tuple[str, int], tuple[float, float, float]] = {}
    print(f"\n{'method':<34}{'conc':>5}{'exec/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for conc in (1, 2):
        for name, fn in rows:
            if fn is None:
                print(f"{name:<34}{conc:>5}   not installed (apt-get install bubblewrap)")
                continue
            res = measure(fn, args.n, conc)
            results[(name, conc)] = res
            print(f"{name:<34}{conc:>5}{res[0]:>10.1f}{res[1]:>10.2f}{res[2]:>10.2f}")
    print()
    for conc in (1, 2):
        ours = results[("rlvr pool (full jail)", conc)]
        base = results.get(("bwrap --unshare-all python", conc))
        floor = results[("in-process exec (no isolation)", conc)]
        if base:
            print(f"concurrency {conc}: rlvr throughput = {ours[0] / base[0]:.1f}x bwrap's (target >= 10x)")
        print(f"concurrency {conc}: rlvr p50 overhead over in-process = {ours[1] - floor[1]:.2f} ms (target <= 2 ms)")
    pool.close()


if __name__ == "__main__":
    main()
