"""Load: 5,000 mixed submissions, a fifth of them hostile, at concurrency 64 through the
HTTP server. Every submission gets exactly one result, none is lost or mixed up with
another, and afterwards no process, cgroup or temporary directory is left behind."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from rlvr.sandbox import SandboxPool
from rlvr.sandbox.service import create_app
from tests.security.test_escape import sandbox_processes

N = 5000
CONCURRENCY = 64
# Each hostile program also defines f correctly after its attack: it must still get no pass.
HOSTILE = [
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "x = bytearray(8 * 1024 ** 3)\n",
    "import os\nos._exit(0)\n",
    "import time\ntime.sleep(100)\n",
    "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(100)\nwhile True:\n    pass\n",
]


def _submission(i: int) -> tuple[str, dict[str, object], int]:
    """(code, tests, expected number passed). The expected answer differs per submission,
    so a result delivered to the wrong request would be caught."""
    tests = {"format": "call", "entry": "f", "cases": [{"args": [i], "expected": i * 3}]}
    if i % 5 == 0:
        return HOSTILE[(i // 5) % len(HOSTILE)] + "def f(x):\n    return x * 3\n", tests, 0
    if i % 5 == 1:
        return "def f(x):\n    return x * 2\n", tests, 1 if i == 0 else 0
    return "def f(x):\n    return x * 3\n", tests, 1


def _cgroup_dirs() -> set[str]:
    out = set()
    for ctrl in ("memory", "pids", "cpuacct", ""):
        base = Path("/sys/fs/cgroup") / ctrl
        if base.is_dir():
            out.update(str(p) for p in base.rglob("rlvr-sandbox-*"))
    return out


def _tmp_dirs() -> set[str]:
    return {p for p in os.listdir("/tmp") if p.startswith("rlvr-sandbox-")}


def serve(pool: SandboxPool, token: str) -> tuple[uvicorn.Server, threading.Thread, str]:
    """The service over `pool` on a free loopback port, in a thread; (server, thread, url)
    once it answers. Also used by bench/sandbox_service.py."""
    app = create_app(pool, token=token, per_client_concurrency=CONCURRENCY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", backlog=1024, timeout_keep_alive=120)
    srv = uvicorn.Server(cfg)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            httpx.get(url + "/health")
            return srv, thread, url
        except httpx.TransportError:
            time.sleep(0.05)


def test_five_thousand_mixed_submissions() -> None:
    cgroups_before, tmp_before = _cgroup_dirs(), _tmp_dirs()
    pool = SandboxPool(8).start()
    srv, thread, url = serve(pool, "load")

    async def drive() -> list[tuple[int, int, str]]:
        sem = asyncio.Semaphore(CONCURRENCY)
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer load"}, limits=limits, timeout=120
        ) as client:

            async def one(i: int) -> tuple[int, int, str]:
                code, tests, _ = _submission(i)
                body = {"code": code, "tests": tests, "limits": {"timeout_s": 1.0, "memory_mb": 128}}
                async with sem:
                    r = await client.post("/v1/run", json=body)
                r.raise_for_status()
                data = r.json()
                return i, int(data["passed"]), str(data["status"])

            return await asyncio.gather(*(one(i) for i in range(N)))

    t0 = time.monotonic()
    try:
        results = asyncio.run(drive())
    finally:
        elapsed = time.monotonic() - t0
        srv.should_exit = True
        thread.join(timeout=10)
        pool.close()

    assert sorted(i for i, _, _ in results) == list(range(N))  # exactly one result each
    wrong = [(i, p, s) for i, p, s in results if p != _submission(i)[2]]
    assert wrong == []
    assert not any(s == "SANDBOX_ERROR" for _, _, s in results)
    time.sleep(0.5)
    assert sandbox_processes() == []
    assert _cgroup_dirs() - cgroups_before == set()
    assert _tmp_dirs() - tmp_before == set()
    print(f"\n{N} submissions in {elapsed:.1f}s ({N / elapsed:.0f}/s) at concurrency {CONCURRENCY}")
