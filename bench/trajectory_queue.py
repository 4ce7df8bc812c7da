"""The trajectory queue alone (issue 15): how many groups per second go through it, and
how long one waits between `put` and `ack`.

8 producer processes each put synthetic 10 KB entries one at a time (as rollout workers
put groups); 1 consumer process takes up to 500 at a time and acknowledges them. Each
entry carries the monotonic time of its put, so the consumer measures put -> ack latency.
Sustained throughput is acknowledged entries per second over the measuring window (after
a warm-up). Backends side by side: `redis` (a local redis-server started here, with its
append-only file, fsync everysec and always) and `memory` (rlvr.pipeline.redis_queue.MemoryQueue,
threads in one process: the in-process path, no durability) as the baseline.

    .venv/bin/python bench/trajectory_queue.py                 # about a minute
    .venv/bin/python bench/trajectory_queue.py --seconds 5     # shorter
    .venv/bin/python bench/trajectory_queue.py --smoke         # 2 producers, 1 s (the test suite)

Target (issue 15): >= 5,000 entries/s sustained on this machine through Redis. redis-py
parses replies with hiredis when it is installed (rlvr[dist] installs it): without it the
consumer's parsing was the limit here (3,300 entries/s).

A producer or consumer that dies, or a backend whose consumer acknowledged nothing in the
window, is an error naming it, never a figure (nor a bench waiting forever for a process
that is gone). --smoke runs 2 producers for a 1 s window after 0.5 s of warm-up, writes
nothing, and prints the rows as one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import queue
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlvr.pipeline.redis_queue import MemoryQueue, RedisQueue  # noqa: E402
from rlvr.pipeline.redis_server import LocalRedis  # noqa: E402

HEADER = struct.Struct("<q")  # the put's monotonic time, ns
SMOKE = {"producers": 2, "seconds": 1.0, "warmup": 0.5}
"""--smoke: producers, the measuring window and the warm-up, in seconds."""


def payload(size: int) -> bytes:
    return HEADER.pack(time.monotonic_ns()) + b"t" * (size - HEADER.size)


def produce(q: Any, k: int, size: int, stop_at: float) -> int:
    n = 0
    while time.monotonic() < stop_at:
        q.put(f"p{k}-{n}", payload(size))
        n += 1
    return n


def consume(q: Any, warm_until: float, stop_at: float) -> dict[str, Any]:
    lat_ms: list[float] = []
    counted, seen = 0, 0
    while time.monotonic() < stop_at + 1.0:
        batch = q.take(500, block_s=0.2)
        if not batch:
            if time.monotonic() >= stop_at:
                break
            continue
        q.ack([e.entry_id for e in batch])
        now = time.monotonic_ns()
        seen += len(batch)
        if warm_until <= time.monotonic() <= stop_at:
            counted += len(batch)
            lat_ms += [(now - HEADER.unpack_from(e.payload)[0]) / 1e6 for e in batch]
    return {"counted": counted, "seen": seen, "lat_ms": lat_ms}


def _wait_start(ready: Any, go: Any, t0: Any) -> float:
    ready.put("ready")
    go.wait()
    return float(t0.value)


def _redis_producer(url: str, k: int, size: int, times: tuple[float, float], sync: tuple, out: Any) -> None:
    q = RedisQueue(url, consumer=f"producer-{k}")
    start = _wait_start(*sync)
    out.put(produce(q, k, size, start + times[0] + times[1]))
    q.close()


def _redis_consumer(url: str, times: tuple[float, float], sync: tuple, out: Any) -> None:
    q = RedisQueue(url, consumer="learner-0")
    start = _wait_start(*sync)
    out.put(consume(q, start + times[0], start + times[0] + times[1]))
    q.close()


def run_redis(fsync: str, producers: int, size: int, seconds: float, warmup: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, LocalRedis(Path(tmp), fsync=fsync) as server:
        RedisQueue(server.url).close()  # the stream and its group exist before anyone reads
        ctx = mp.get_context("spawn")
        out: Any = ctx.Queue()
        ready: Any = ctx.Queue()
        go, t0 = ctx.Event(), ctx.Value("d", 0.0)
        sync, times = (ready, go, t0), (warmup, seconds)
        procs = [ctx.Process(target=_redis_consumer, args=(server.url, times, sync, out))]
        procs += [
            ctx.Process(target=_redis_producer, args=(server.url, k, size, times, sync, out)) for k in range(producers)
        ]
        for p in procs:
            p.start()
        name = f"redis, fsync {fsync}"
        for _ in procs:  # every process has imported and connected
            _get(ready, procs, name, 120)
        t0.value = time.monotonic() + 0.1
        go.set()
        results = [_get(out, procs, name, warmup + seconds + 120) for _ in procs]
        for p in procs:
            p.join()
        cons = next(r for r in results if isinstance(r, dict))
        put = sum(r for r in results if isinstance(r, int))
        return summary(name, cons, put, seconds)


def _get(q: Any, procs: list[Any], name: str, timeout: float) -> Any:
    """The next item of `q`; a process of `procs` that died first, or no item within
    `timeout` seconds, is an error naming the backend."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return q.get(timeout=0.5)
        except queue.Empty:
            dead = [(p.name, p.exitcode) for p in procs if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                for p in procs:
                    p.kill()
                what = f"{dead[0][0]} exited with status {dead[0][1]}" if dead else f"nothing within {timeout:.0f} s"
                raise SystemExit(f"{name}: {what}: there is no figure") from None


def run_memory(producers: int, size: int, seconds: float, warmup: float) -> dict[str, Any]:
    q = MemoryQueue()
    start = time.monotonic()
    warm_until, stop_at = start + warmup, start + warmup + seconds
    counts: list[int] = []
    threads = [
        threading.Thread(target=lambda k=k: counts.append(produce(q.consumer(f"p{k}"), k, size, stop_at)))
        for k in range(producers)
    ]
    for t in threads:
        t.start()
    cons = consume(q.consumer("learner-0"), warm_until, stop_at)
    for t in threads:
        t.join()
    if len(counts) != producers:
        raise SystemExit(
            f"memory: {producers - len(counts)} of {producers} producer threads failed: there is no figure"
        )
    return summary("memory (in-process, threads)", cons, sum(counts), seconds)


def summary(name: str, cons: dict[str, Any], put: int, seconds: float) -> dict[str, Any]:
    lat = sorted(cons["lat_ms"])
    if not cons["counted"] or cons["seen"] > put:
        raise SystemExit(f"{name}: {cons['counted']} entries acknowledged in the window, {cons['seen']} of {put} "
                         "put in all: the queue did not carry them, there is no figure")  # fmt: skip

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")

    return {
        "backend": name,
        "entries_per_s": cons["counted"] / seconds,
        "put": put,
        "acked": cons["seen"],
        "latency_ms": {"p50": pct(0.5), "p99": pct(0.99), "max": lat[-1] if lat else float("nan")},
        "mean_latency_ms": statistics.fmean(lat) if lat else float("nan"),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--producers", type=int, default=8)
    ap.add_argument("--size", type=int, default=10_000, help="bytes per entry")
    ap.add_argument("--seconds", type=float, default=10.0, help="measuring window per backend")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "trajectory_queue.json"))
    ap.add_argument("--smoke", action="store_true", help="2 producers, a 1 s window; nothing written, JSON last")
    args = ap.parse_args(argv)
    if args.smoke:
        args.producers, args.seconds, args.warmup = SMOKE["producers"], SMOKE["seconds"], SMOKE["warmup"]
    rows = [run_memory(args.producers, args.size, args.seconds, args.warmup)]
    for fsync in ("everysec", "always"):
        rows.append(run_redis(fsync, args.producers, args.size, args.seconds, args.warmup))
    print(f"\n{args.producers} producers, 1 consumer, {args.size} B entries, {args.seconds:.0f} s window")
    print(f"{'backend':32}{'entries/s':>11}{'MB/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'put':>9}{'acked':>9}")
    for r in rows:
        print(
            f"{r['backend']:32}{r['entries_per_s']:>11.0f}{r['entries_per_s'] * args.size / 1e6:>8.1f}"
            f"{r['latency_ms']['p50']:>9.2f}{r['latency_ms']['p99']:>9.2f}{r['put']:>9}{r['acked']:>9}"
        )
    machine = {"cpus": os.cpu_count(), "machine": platform.processor() or platform.machine()}
    if args.smoke:  # a check, not a figure: nothing recorded
        print(json.dumps({"setting": {**vars(args), "json": None}, "machine": machine, "rows": rows}))
        return
    setting = {k: v for k, v in vars(args).items() if k != "smoke"}
    Path(args.json).write_text(json.dumps({"setting": setting, "machine": machine, "rows": rows}, indent=1) + "\n")
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
