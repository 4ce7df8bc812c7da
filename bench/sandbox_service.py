"""The sandbox service under load, through HTTP on loopback (what a training cluster's
rollout workers do): throughput of 5,000 mixed submissions (a fifth hostile: fork and
memory bombs, early exits, sleepers, daemons) on /v1/run at concurrency 64, and the
latency of SandboxFusion's /run_code (a short program) at concurrency 64: p50, p99.
The mixed load runs twice, back to back: without a CPU cap per run, and with a quarter of
a core per run (`limits.cpus`: spinning hostile runs then hold less of the machine).

    python bench/sandbox_service.py [--n 5000] [--run-code 1000] [--json PATH]
    python bench/sandbox_service.py --smoke   # 20 mixed, 10 /run_code; JSON last (the test suite)

The pool has 8 slots, as in tests/security/test_load.py. Every answer is checked (a
result mixed up with another's, a lost one or a SANDBOX_ERROR fails the bench).
--smoke sends 20 mixed submissions per variant and 10 /run_code requests, writes nothing,
and prints the results as one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlvr.sandbox import SandboxPool  # noqa: E402
from tests.security.test_load import CONCURRENCY, _submission, serve  # noqa: E402

CPUS = 0.25  # the capped variant: each run gets a quarter of a core

SMOKE = {"n": 20, "run_code": 10}
"""--smoke: submissions per mixed variant (four of them hostile), and /run_code requests."""

RUN_CODE = "import sys\nn = int(sys.stdin.read())\nprint(sum(i * i for i in range(n)))\n"


async def _drive(url: str, n: int, body_of: Any, check: Any, path: str) -> list[float]:
    sem = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": "Bearer bench"}, limits=limits, timeout=120
    ) as c:

        async def one(i: int) -> float:
            async with sem:
                t = time.perf_counter()
                r = await c.post(path, json=body_of(i))
                lat = time.perf_counter() - t
            r.raise_for_status()
            check(i, r.json())
            return lat

        return list(await asyncio.gather(*(one(i) for i in range(n))))


def _summary(lat: list[float], wall: float) -> dict[str, float]:
    lat = sorted(lat)
    return {
        "n": len(lat),
        "seconds": wall,
        "per_s": len(lat) / wall,
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="mixed submissions on /v1/run")
    ap.add_argument("--run-code", type=int, default=1000, help="requests on /run_code")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--smoke", action="store_true", help="a few requests per endpoint; JSON on the last line")
    args = ap.parse_args(argv)
    if args.smoke:
        args.n, args.run_code = SMOKE["n"], SMOKE["run_code"]
    pool = SandboxPool(8).start()
    srv, thread, url = serve(pool, "bench")
    out: dict[str, Any] = {"concurrency": CONCURRENCY, "pool_slots": 8}
    try:

        def run_check(i: int, data: dict[str, Any]) -> None:
            if data["status"] == "SANDBOX_ERROR" or int(data["passed"]) != _submission(i)[2]:
                raise AssertionError(f"submission {i}: {data['status']} passed={data['passed']}")

        for key, cpus in (("v1_run_mixed", None), ("v1_run_mixed_cpu_capped", CPUS)):

            def run_body(i: int, cpus: float | None = cpus) -> dict[str, Any]:
                code, tests, _ = _submission(i)
                return {"code": code, "tests": tests, "limits": {"timeout_s": 1.0, "memory_mb": 128, "cpus": cpus}}

            t0 = time.perf_counter()
            lat = asyncio.run(_drive(url, args.n, run_body, run_check, "/v1/run"))
            out[key] = _summary(lat, time.perf_counter() - t0)

        def code_body(i: int) -> dict[str, Any]:
            return {"code": RUN_CODE, "language": "python", "stdin": str(1000 + i), "run_timeout": 5}

        def code_check(i: int, data: dict[str, Any]) -> None:
            want = str(sum(k * k for k in range(1000 + i)))
            if data["status"] != "Success" or data["run_result"]["stdout"].strip() != want:
                raise AssertionError(f"/run_code {i}: {data['status']} {data['run_result']}")

        t0 = time.perf_counter()
        lat = asyncio.run(_drive(url, args.run_code, code_body, code_check, "/run_code"))
        out["run_code"] = _summary(lat, time.perf_counter() - t0)
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        pool.close()
    print(f"{'endpoint':<48}{'n':>6}{'per s':>9}{'p50 ms':>9}{'p99 ms':>9}")
    for name, key in (
        (f"/v1/run, {args.n:,} mixed (1/5 hostile), no CPU cap", "v1_run_mixed"),
        (f"/v1/run, {args.n:,} mixed, cpus {CPUS} per run", "v1_run_mixed_cpu_capped"),
        ("/run_code, short program", "run_code"),
    ):
        r = out[key]
        print(f"{name:<48}{r['n']:>6}{r['per_s']:>9.1f}{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    if args.smoke:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
