"""`rlvr sandbox serve`: the sandbox as an HTTP service (FastAPI).

Endpoints (OpenAPI at /openapi.json, docs at /docs):
- GET  /health                   liveness and the active protections (no auth)
- POST /v1/run                   one submission against a test suite -> ExecutionResult
- POST /v1/run_batch             up to `max_batch` submissions -> results in order
- POST /run_code                 SandboxFusion-compatible: run a program with stdin
Auth: `Authorization: Bearer TOKEN` when the server has a token. Bodies larger than
`max_request_bytes` are refused (413). Each client (by token, else by address) runs at
most `per_client_concurrency` submissions at once; further ones wait their turn
(backpressure) for up to `queue_timeout_s`, then get 429. Submissions are never dropped
silently: every request gets exactly one response.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import defaultdict
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from rlvr.sandbox.api import execute
from rlvr.sandbox.executor import Limits
from rlvr.sandbox.pool import SandboxPool
from rlvr.sandbox.spec import Check, Probe, SpecError, Suite
from rlvr.sandbox.verdict import decide


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(5.0, gt=0, le=300)
    memory_mb: int = Field(512, ge=32, le=16384)
    test_timeout_s: float | None = Field(None, gt=0, le=300)
    parallel_tests: int = Field(2, ge=1, le=16)


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str
    tests: dict[str, Any]
    language: Literal["python", "c", "cpp", "javascript"] = "python"
    limits: LimitsIn = Field(default_factory=lambda: LimitsIn())


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    submissions: list[RunRequest]


class RunCodeRequest(BaseModel):
    """SandboxFusion's /run_code request (fields it has that rlvr ignores are accepted)."""

    code: str
    language: str = "python"
    compile_timeout: float = 10.0
    run_timeout: float = 10.0
    memory_limit_MB: int = -1
    stdin: str | None = ""
    files: dict[str, str | None] = Field(default_factory=dict)
    fetch_files: list[str] = Field(default_factory=list)


_FUSION_LANGUAGES = {
    "python": "python",
    "c": "c",
    "cpp": "cpp",
    "nodejs": "javascript",
    "javascript": "javascript",
    "js": "javascript",
}


def _limits(li: LimitsIn) -> Limits:
    return Limits(
        timeout_s=li.timeout_s,
        memory_mb=li.memory_mb,
        test_timeout_s=li.test_timeout_s,
        parallel_tests=li.parallel_tests,
    )


def create_app(
    pool: SandboxPool,
    *,
    token: str | None = None,
    max_request_bytes: int = 4 << 20,
    per_client_concurrency: int = 64,
    queue_timeout_s: float = 600.0,
    max_batch: int = 256,
) -> FastAPI:
    app = FastAPI(title="rlvr sandbox", version="1", description=__doc__)
    client_slots: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(per_client_concurrency))

    @app.middleware("http")
    async def limit_size(request: Request, call_next: Any) -> Any:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_request_bytes:
            return JSONResponse({"detail": f"request body over {max_request_bytes} bytes"}, status_code=413)
        return await call_next(request)

    async def client_id(request: Request) -> str:
        auth = request.headers.get("authorization", "")
        if token is not None:
            given = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
            if not secrets.compare_digest(given.encode(), token.encode()):
                raise HTTPException(status_code=401, detail="missing or wrong bearer token")
            return "token:" + given[:8]
        return "addr:" + (request.client.host if request.client else "?")

    async def run_one(client: str, req: RunRequest) -> dict[str, Any]:
        slot = client_slots[client]
        try:
            await asyncio.wait_for(slot.acquire(), timeout=queue_timeout_s)
        except TimeoutError:
            raise HTTPException(status_code=429, detail="too many submissions in flight for this client") from None
        try:
            result = await run_in_threadpool(execute, req.code, req.tests, _limits(req.limits), pool, req.language)
            return result.to_dict()
        except SpecError as e:
            raise HTTPException(status_code=422, detail=f"tests: {e}") from None
        finally:
            slot.release()

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "protections": pool.protections}

    @app.post("/v1/run")
    async def run(req: RunRequest, client: str = Depends(client_id)) -> dict[str, Any]:
        return await run_one(client, req)

    @app.post("/v1/run_batch")
    async def run_batch(req: BatchRequest, client: str = Depends(client_id)) -> dict[str, Any]:
        if len(req.submissions) > max_batch:
            raise HTTPException(status_code=413, detail=f"at most {max_batch} submissions per batch")
        results = await asyncio.gather(*(run_one(client, s) for s in req.submissions), return_exceptions=True)
        out: list[dict[str, Any]] = []
        for r in results:
            if isinstance(r, HTTPException):
                out.append({"status": "SANDBOX_ERROR" if r.status_code >= 500 else "REJECTED", "error": r.detail})
            elif isinstance(r, BaseException):
                out.append({"status": "SANDBOX_ERROR", "error": f"{type(r).__name__}: {r}"})
            else:
                out.append(r)
        return {"results": out}

    @app.post("/run_code")
    async def run_code(req: RunCodeRequest, client: str = Depends(client_id)) -> dict[str, Any]:
        language = _FUSION_LANGUAGES.get(req.language)
        if language is None:
            return {
                "status": "SandboxError",
                "message": f"language '{req.language}' is not supported ({', '.join(_FUSION_LANGUAGES)})",
                "compile_result": None,
                "run_result": None,
                "executor_pod_name": None,
                "files": {},
            }
        limits = Limits(timeout_s=req.run_timeout, memory_mb=req.memory_limit_MB if req.memory_limit_MB > 0 else 512)
        suite = Suite("stdio", [Probe("run", "stdio", stdin=req.stdin or "")], [Check("completes")])
        slot = client_slots[client]
        await slot.acquire()
        try:
            raw = await run_in_threadpool(pool.run, req.code, [p.to_wire() for p in suite.probes], limits, language)
        finally:
            slot.release()
        return _fusion_response(raw, decide(suite, raw))

    return app


def _fusion_response(raw: dict[str, Any], result: Any) -> dict[str, Any]:
    import json

    base: dict[str, Any] = {"compile_result": None, "executor_pod_name": None, "files": {}}
    if "sandbox_error" in raw or result.status.value == "SANDBOX_ERROR":
        return {**base, "status": "SandboxError", "message": result.error, "run_result": None}
    stdout, code = "", 0
    for line in raw.get("events", []):
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(ev, dict) and ev.get("e") == "stdout" and ev.get("i") == 0:
            stdout, code = str(ev.get("out", "")), int(ev.get("exit", 0))
            break
    timed_out = result.status.value == "TIMEOUT"
    run_result = {
        "status": "TimeLimitExceeded" if timed_out else "Finished",
        "execution_time": result.wall_time_s,
        "return_code": None if timed_out else code,
        "stdout": stdout,
        "stderr": result.stderr,
    }
    ok = not timed_out and code == 0
    return {
        **base,
        "status": "Success" if ok else "Failed",
        "message": "" if ok else result.error,
        "run_result": run_result,
    }


def serve(host: str, port: int, token: str | None, concurrency: int, per_client: int) -> None:
    import uvicorn

    with SandboxPool(concurrency) as pool:
        app = create_app(pool, token=token, per_client_concurrency=per_client)
        # keep-alive longer than any client waits between requests: an idle-close racing a
        # reused connection would otherwise surface as a transport error on the client
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_keep_alive=120, backlog=2048)
