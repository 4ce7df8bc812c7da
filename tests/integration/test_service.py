"""The sandbox service through a real HTTP server on loopback, with the async client."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from rlvr.envs.base import run_sync
from rlvr.sandbox import SandboxPool
from rlvr.sandbox.client import AsyncSandboxClient, SandboxClient
from rlvr.sandbox.pool import SandboxError
from rlvr.sandbox.service import create_app

TOKEN = "test-token-123"
GOOD = "def f(x):\n    return x + 1\n"
TESTS = {"format": "call", "entry": "f", "cases": [{"args": [1], "expected": 2}, {"args": [2], "expected": 3}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    pool = SandboxPool(4).start()
    app = create_app(pool, token=TOKEN, max_request_bytes=200_000, per_client_concurrency=16)
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    yield url
    srv.should_exit = True
    t.join(timeout=10)
    pool.close()


def test_health_openapi_and_auth(server: str) -> None:
    h = httpx.get(server + "/health").json()
    assert h["ok"] is True and "seccomp filter" in h["protections"]
    spec = httpx.get(server + "/openapi.json").json()
    assert {"/v1/run", "/v1/run_batch", "/run_code"} <= set(spec["paths"])
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": TESTS})
    assert r.status_code == 401
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": TESTS}, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401


def test_request_size_and_bad_tests_are_refused(server: str) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = httpx.post(server + "/v1/run", json={"code": "x" * 300_000, "tests": TESTS}, headers=auth)
    assert r.status_code == 413
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": {"format": "nope"}}, headers=auth)
    assert r.status_code == 422 and "unknown test format" in r.text


def test_sync_and_async_clients(server: str) -> None:
    res = SandboxClient(server, TOKEN).run(GOOD, TESTS)
    assert res.passed == 2 and res.status.value == "OK"

    async def go() -> list[int]:
        async with AsyncSandboxClient(server, TOKEN) as c:
            single = await c.run(GOOD, ["assert f(1) == 2", "assert f(1) == 3"])
            batch = await c.run_batch([(GOOD, TESTS), ("def f(x):\n    return 0\n", TESTS)])
            return [single.passed, *[b.passed for b in batch]]

    assert asyncio.run(go()) == [1, 2, 0]
    with pytest.raises(SandboxError, match="refused"):
        SandboxClient(server, "wrong").run(GOOD, TESTS)


def test_client_retries_then_fails_cleanly() -> None:
    with pytest.raises(SandboxError, match="unreachable after 2 attempts"):
        SandboxClient(f"http://127.0.0.1:{_free_port()}", retries=2, backoff_s=0.01).run(GOOD, TESTS)


def test_sandboxfusion_run_code_compatibility(server: str) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"code": "print(int(input()) * 2)", "language": "python", "run_timeout": 5, "stdin": "21\n"}
    r = httpx.post(server + "/run_code", json=body, headers=auth).json()
    assert r["status"] == "Success" and r["run_result"]["status"] == "Finished"
    assert r["run_result"]["stdout"] == "42\n" and r["run_result"]["return_code"] == 0
    r = httpx.post(
        server + "/run_code", json={"code": "raise SystemExit(3)", "language": "python"}, headers=auth
    ).json()
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == 3
    slow = {"code": "while True: pass", "language": "python", "run_timeout": 1}
    r = httpx.post(server + "/run_code", json=slow, headers=auth).json()
    assert r["run_result"]["status"] == "TimeLimitExceeded"


def test_training_env_can_use_the_remote_server(server: str) -> None:
    from rlvr.envs import EnvSettings, make_env
    from rlvr.types import Task

    task = Task(id="t", domain="python", prompt="p", tests={"format": "assert", "tests": ["assert f(1) == 2"]})
    env = make_env("python", EnvSettings(sandbox_url=server, sandbox_token=TOKEN))
    run_sync(env.reset(task))
    step = run_sync(env.step("```python\n" + GOOD + "```"))
    assert step.reward is not None and step.reward.total == 1.0


def test_run_code_in_cpp(server: str) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    code = "#include <iostream>\nint main() { int n; std::cin >> n; std::cout << n + 1 << std::endl; }\n"
    r = httpx.post(
        server + "/run_code", json={"code": code, "language": "cpp", "stdin": "41"}, headers=auth, timeout=60
    ).json()
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "42\n"


def test_pool_started_from_a_short_lived_thread_keeps_serving(capfd: pytest.CaptureFixture[str]) -> None:
    """Training starts the sandbox from environment worker threads that come and go: the
    server must outlive the thread that started it (and still stop with its process)."""
    import threading

    from rlvr.sandbox import execute

    pool = SandboxPool(2)
    t = threading.Thread(target=pool.start)
    t.start()
    t.join()
    assert pool._proc is not None
    first_server = pool._proc.pid
    time.sleep(1.5)  # longer than the server's owner check
    results: list[int] = []
    t2 = threading.Thread(target=lambda: results.append(execute(GOOD, ["assert f(1) == 2"], pool=pool).passed))
    t2.start()
    t2.join()
    assert results == [1]
    assert "got no answer" not in capfd.readouterr().err  # served first time, not by a retry
    assert pool._proc is not None and pool._proc.pid == first_server  # by the same server
    proc = pool._proc
    pool.close()
    assert proc is not None and proc.poll() is not None
