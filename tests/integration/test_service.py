"""The sandbox service through a real HTTP server on loopback, with the async client:
auth, size limits, validation, the OpenAPI document and the offline docs, the clients, and
the `rlvr sandbox serve` entry point. (SandboxFusion compatibility: test_service_fusion.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from rlvr.envs.base import run_sync
from rlvr.sandbox import Limits, SandboxPool
from rlvr.sandbox.client import AsyncSandboxClient, SandboxClient
from rlvr.sandbox.pool import SandboxError
from rlvr.sandbox.service import create_app

TOKEN = "test-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMIT = 200_000  # the test server's max_request_bytes
GOOD = "def f(x):\n    return x + 1\n"
TESTS = {"format": "call", "entry": "f", "cases": [{"args": [1], "expected": 2}, {"args": [2], "expected": 3}]}
DOUBLE = {"code": "print(int(input()) * 2)", "language": "python", "run_timeout": 5, "stdin": "21\n"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port, in a thread; yields its URL."""
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
    try:
        yield url
    finally:
        srv.should_exit = True
        t.join(timeout=10)


class CountingPool(SandboxPool):
    """A real pool that counts the runs it was asked for (to prove a request was not run)."""

    def __init__(self, max_concurrency: int) -> None:
        super().__init__(max_concurrency)
        self.runs = 0
        self._count_lock = threading.Lock()

    def run(self, code: str, probes: list[dict[str, str]], limits: Limits, language: str = "python") -> dict[str, Any]:
        with self._count_lock:
            self.runs += 1
        return super().run(code, probes, limits, language)


@pytest.fixture(scope="module")
def pool() -> Iterator[CountingPool]:
    p = CountingPool(4)
    p.start()
    yield p
    p.close()


@pytest.fixture(scope="module")
def server(pool: CountingPool) -> Iterator[str]:
    app = create_app(pool, token=TOKEN, max_request_bytes=LIMIT, per_client_concurrency=16)
    with running(app) as url:
        yield url


def _chunked(data: bytes, size: int = 16_384) -> Iterator[bytes]:
    """The body as an iterator: httpx then sends it chunked, with no Content-Length."""
    for i in range(0, len(data), size):
        yield data[i : i + size]


def test_health_openapi_and_auth(server: str) -> None:
    h = httpx.get(server + "/health").json()
    assert h["ok"] is True and "seccomp filter" in h["protections"]
    spec = httpx.get(server + "/openapi.json").json()
    assert {"/v1/run", "/v1/run_batch", "/run_code"} <= set(spec["paths"])
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": TESTS})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": TESTS}, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401


def test_health_reports_the_load_an_autoscaler_reads(server: str, pool: CountingPool) -> None:
    before = httpx.get(server + "/health").json()["load"]
    assert before["capacity"] == pool.max_concurrency and before["active"] == before["pending"] == 0
    for _ in range(2):
        assert httpx.post(server + "/v1/run", json={"code": GOOD, "tests": TESTS}, headers=AUTH).status_code == 200
    after = httpx.get(server + "/health").json()["load"]
    assert after["done"] == before["done"] + 2 and after["active"] == 0
    assert after["busy_s"] > before["busy_s"] and after["at_s"] > before["at_s"]


def test_request_size_and_bad_tests_are_refused(server: str) -> None:
    r = httpx.post(server + "/v1/run", json={"code": "x" * 300_000, "tests": TESTS}, headers=AUTH)
    assert r.status_code == 413 and f"over {LIMIT} bytes" in r.text
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": {"format": "nope"}}, headers=AUTH)
    assert r.status_code == 422 and "unknown test format" in r.text


def test_chunked_upload_over_the_limit_is_refused_and_not_run(server: str, pool: CountingPool) -> None:
    big = json.dumps({**DOUBLE, "code": DOUBLE["code"] + "\n#" + "x" * 300_000}).encode()
    headers = {**AUTH, "Content-Type": "application/json"}
    before = pool.runs
    r = httpx.post(server + "/run_code", content=_chunked(big), headers=headers)
    assert r.request.headers.get("transfer-encoding") == "chunked" and "content-length" not in r.request.headers
    assert r.status_code == 413 and f"over {LIMIT} bytes" in r.text
    assert pool.runs == before  # refused before anything was run
    # a chunked body under the limit is read whole and run
    r = httpx.post(server + "/run_code", content=_chunked(json.dumps(DOUBLE).encode(), 8), headers=headers)
    assert r.status_code == 200 and r.json()["run_result"]["stdout"] == "42\n"
    assert pool.runs == before + 1


def test_bearer_scheme_is_matched_in_any_case(server: str) -> None:
    for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
        r = httpx.post(server + "/run_code", json=DOUBLE, headers={"Authorization": f"{scheme} {TOKEN}"})
        assert r.status_code == 200 and r.json()["status"] == "Success", (scheme, r.text)
    for header in (f"Basic {TOKEN}", "Bearer", f"Bearer{TOKEN}", f"Token {TOKEN}", f"Bearer {TOKEN}x"):
        r = httpx.post(server + "/run_code", json=DOUBLE, headers={"Authorization": header})
        assert r.status_code == 401, header


def test_authentication_comes_before_reading_the_body(server: str, pool: CountingPool) -> None:
    before = pool.runs
    for body in (b"{not json", b'{"code": 1}', b""):
        r = httpx.post(server + "/run_code", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 401, (body, r.text)
    r = httpx.post(server + "/v1/run", content=_chunked(b"x" * 300_000), headers={"Content-Type": "application/json"})
    assert r.status_code == 401  # not 413: an unauthenticated caller learns nothing about the body
    assert pool.runs == before
    r = httpx.post(server + "/run_code", content=b"{not json", headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code == 422  # with the token, the body is parsed and its error reported


def test_openapi_declares_the_bearer_scheme(server: str) -> None:
    spec = httpx.get(server + "/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    bearer = [name for name, s in schemes.items() if s["type"] == "http" and s["scheme"].lower() == "bearer"]
    assert len(bearer) == 1
    for path in ("/v1/run", "/v1/run_batch", "/run_code"):
        op = spec["paths"][path]["post"]
        assert {bearer[0]: []} in op["security"], path
        assert {"401", "413", "429"} <= set(op["responses"]), path
    assert "security" not in spec["paths"]["/health"]["get"]


def test_docs_are_served_offline(server: str) -> None:
    for page in ("/docs", "/redoc"):
        r = httpx.get(server + page)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), page
        html = r.text
        assert not re.search(r"https?:|//[a-z0-9]", html, re.IGNORECASE), f"{page} names an external host"
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert assets and all(a.startswith("/docs/assets/") for a in assets), assets
        for asset in assets:  # no token needed, as for the page itself
            got = httpx.get(server + asset)
            assert got.status_code == 200 and len(got.content) > 1000, asset
        assert "/openapi.json" in html
    js = httpx.get(server + "/docs/assets/swagger-ui-bundle.js")
    assert "SwaggerUIBundle" in js.text


def test_run_code_limits_are_validated(server: str) -> None:
    bad: list[tuple[str, object]] = [
        ("run_timeout", 0),
        ("run_timeout", -1),
        ("run_timeout", 301),
        ("compile_timeout", 0),
        ("compile_timeout", -5),
        ("memory_limit_MB", 8),
        ("memory_limit_MB", 1_000_000),
        ("language", "cobol"),
    ]
    for field, value in bad:
        r = httpx.post(server + "/run_code", json={**DOUBLE, field: value}, headers=AUTH)
        assert r.status_code == 422, (field, value, r.text)
        assert [e for e in r.json()["detail"] if e["loc"][-1] == field], (field, r.text)
    for memory in (-1, 0, 256):  # SandboxFusion's "no limit" (the default here) and a real cap
        r = httpx.post(server + "/run_code", json={**DOUBLE, "memory_limit_MB": memory}, headers=AUTH)
        assert r.status_code == 200 and r.json()["status"] == "Success", (memory, r.text)
    r = httpx.post(server + "/v1/run", json={"code": GOOD, "tests": TESTS, "limits": {"timeout_s": 0}}, headers=AUTH)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "timeout_s"


def test_run_code_files_are_refused_clearly(server: str, pool: CountingPool) -> None:
    before = pool.runs
    r = httpx.post(server + "/run_code", json={**DOUBLE, "files": {"data.txt": "aGVsbG8="}}, headers=AUTH)
    assert r.status_code == 400 and r.json()["detail"].startswith("files:") and "data.txt" in r.text
    r = httpx.post(server + "/run_code", json={**DOUBLE, "fetch_files": ["out.txt"]}, headers=AUTH)
    assert r.status_code == 400 and r.json()["detail"].startswith("fetch_files:")
    assert pool.runs == before
    # entries without content are skipped, as SandboxFusion skips them
    r = httpx.post(server + "/run_code", json={**DOUBLE, "files": {"ignored.txt": None}}, headers=AUTH)
    assert r.status_code == 200 and r.json()["status"] == "Success"


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
    r = httpx.post(server + "/run_code", json=DOUBLE, headers=AUTH).json()
    assert r["status"] == "Success" and r["run_result"]["status"] == "Finished"
    assert r["run_result"]["stdout"] == "42\n" and r["run_result"]["return_code"] == 0
    assert r["compile_result"] is None and r["message"] == "" and r["files"] == {}
    r = httpx.post(
        server + "/run_code", json={"code": "raise SystemExit(3)", "language": "python"}, headers=AUTH
    ).json()
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == 3
    slow = {"code": "while True: pass", "language": "python", "run_timeout": 1}
    r = httpx.post(server + "/run_code", json=slow, headers=AUTH).json()
    assert r["status"] == "Failed" and r["run_result"]["status"] == "TimeLimitExceeded"


def test_training_env_can_use_the_remote_server(server: str) -> None:
    from rlvr.envs import EnvSettings, make_env
    from rlvr.types import Task

    task = Task(id="t", domain="python", prompt="p", tests={"format": "assert", "tests": ["assert f(1) == 2"]})
    env = make_env("python", EnvSettings(sandbox_url=server, sandbox_token=TOKEN))
    run_sync(env.reset(task))
    step = run_sync(env.step("```python\n" + GOOD + "```"))
    assert step.reward is not None and step.reward.total == 1.0


def test_run_code_in_cpp(server: str) -> None:
    code = "#include <iostream>\nint main() { int n; std::cin >> n; std::cout << n + 1 << std::endl; }\n"
    r = httpx.post(
        server + "/run_code", json={"code": code, "language": "cpp", "stdin": "41"}, headers=AUTH, timeout=60
    ).json()
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "42\n"
    assert r["compile_result"]["status"] == "Finished" and r["compile_result"]["return_code"] == 0


def _pump(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
    for line in stream or []:
        lines.put(line)


def _line_matching(lines: queue.Queue[str], pattern: str, timeout_s: float) -> re.Match[str]:
    """The first line from `lines` that matches, waiting at most timeout_s in all."""
    deadline = time.monotonic() + timeout_s
    seen: list[str] = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        seen.append(line)
        if m := re.search(pattern, line):
            return m
    raise AssertionError(f"no line matching {pattern!r} within {timeout_s}s; got {seen}")


def test_serve_says_where_it_listens() -> None:
    """The real entry point: `rlvr sandbox serve --port 0` logs its address once it listens."""
    env = {**os.environ, "RLVR_SANDBOX_TOKEN": "serve-token"}
    cmd = [sys.executable, "-m", "rlvr.cli", "sandbox", "serve", "--port", "0", "--concurrency", "1"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True).start()
    try:
        m = _line_matching(lines, r"listening on http://127\.0\.0\.1:(\d+) \(bearer token required", 60)
        url = f"http://127.0.0.1:{m.group(1)}"
        assert httpx.get(url + "/health").json()["ok"] is True
        r = httpx.post(url + "/run_code", json=DOUBLE, headers={"Authorization": "bearer serve-token"}, timeout=30)
        assert r.json()["status"] == "Success"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_pool_started_from_a_short_lived_thread_keeps_serving(capfd: pytest.CaptureFixture[str]) -> None:
    """Training starts the sandbox from environment worker threads that come and go: the
    server must outlive the thread that started it (and still stop with its process)."""
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
