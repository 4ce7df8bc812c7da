"""`rlvr sandbox serve`: the sandbox as an HTTP service (FastAPI).

Endpoints (OpenAPI at /openapi.json; docs at /docs and /redoc, served with their assets
from this service, so they work offline):
- GET  /health                   liveness and the active protections (no auth)
- POST /v1/run                   one submission against a test suite -> ExecutionResult
- POST /v1/run_batch             up to `max_batch` submissions -> results in order
- POST /run_code                 SandboxFusion-compatible: run a program with stdin and
                                 answer as SandboxFusion does (mapping: rlvr.sandbox.fusion)

Before any endpoint reads a body, a guard in front of the app checks, in this order:
- auth: with a server token, every path but /health, /openapi.json and the docs needs
  `Authorization: Bearer TOKEN` (the scheme in any case); otherwise 401, whatever the body;
- size: a body over `max_request_bytes` is refused with 413, counted on the bytes actually
  received (chunked uploads included), and nothing of it is run.

Limits are validated (422 naming the field): `/v1/run`'s `limits` and `/run_code`'s
`run_timeout`, `compile_timeout` (above 0, at most 300 s) and `memory_limit_MB` (32 to
16384; 0 or below, SandboxFusion's "no limit", means 512). `/run_code` runs C, C++,
Python and JavaScript (`nodejs`) with up to 1 MiB of stdout kept; its program gets
`run_timeout`, and compiling may take up to `compile_timeout` + `run_timeout` (one deadline
covers both). Its `files` and `fetch_files` are refused (400): the sandbox writes only the
program into a stdin run's work dir.

Each client (by token, else by address) runs at most `per_client_concurrency` submissions
at once; further ones wait their turn (backpressure) for up to `queue_timeout_s`, then get
a 429 answer. Submissions are never dropped silently: every request gets exactly one
response. The OpenAPI document declares the bearer scheme on the endpoints that need it;
`serve` prints the address it listens on (stderr) once the socket is listening.

Not protected here: the bearer token travels in clear text unless a TLS proxy is put in
front; there is no rate limit beyond the concurrency cap.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request, Security
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.security import HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rlvr.sandbox.api import execute
from rlvr.sandbox.executor import Limits
from rlvr.sandbox.fusion import COMPILED, LANGUAGES, RunCodeResponse, fusion_response
from rlvr.sandbox.pool import SandboxPool
from rlvr.sandbox.spec import Check, Probe, SpecError, Suite
from rlvr.sandbox.verdict import decide

MAX_TIMEOUT_S = 300.0
MIN_MEMORY_MB, DEFAULT_MEMORY_MB, MAX_MEMORY_MB = 32, 512, 16384
RUN_CODE_OUTPUT_BYTES = 1 << 20  # /run_code keeps up to 1 MiB of stdout (SandboxFusion has no cap)
DOCS_ASSETS = "/docs/assets"  # Swagger UI and ReDoc files, from the fastapi-offline package
OPEN_PATHS = {"/health", "/openapi.json", "/docs", "/redoc"}


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(5.0, gt=0, le=MAX_TIMEOUT_S)
    memory_mb: int = Field(DEFAULT_MEMORY_MB, ge=MIN_MEMORY_MB, le=MAX_MEMORY_MB)
    test_timeout_s: float | None = Field(None, gt=0, le=MAX_TIMEOUT_S)
    parallel_tests: int = Field(2, ge=1, le=16)
    test_isolation: Literal["shared", "process"] = "shared"
    cpus: float | None = Field(None, ge=0.01, le=1024)


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
    """SandboxFusion's /run_code request. Fields it has that rlvr does not use are accepted;
    `files` and `fetch_files` must be empty (entries whose content is null are skipped, as
    SandboxFusion skips them)."""

    code: str
    language: str = Field("python", description=f"one of: {', '.join(LANGUAGES)}")
    compile_timeout: float = Field(10.0, gt=0, le=MAX_TIMEOUT_S, description="seconds (C, C++)")
    run_timeout: float = Field(10.0, gt=0, le=MAX_TIMEOUT_S, description="seconds")
    memory_limit_MB: int = Field(
        -1, le=MAX_MEMORY_MB, description=f"{MIN_MEMORY_MB} to {MAX_MEMORY_MB}; 0 or below: {DEFAULT_MEMORY_MB}"
    )
    stdin: str | None = None
    files: dict[str, str | None] = Field(default_factory=dict, description="not supported: must be empty")
    fetch_files: list[str] = Field(default_factory=list, description="not supported: must be empty")

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        if value not in LANGUAGES:
            raise ValueError(f"language {value!r} is not supported here; valid: {', '.join(LANGUAGES)}")
        return value

    @field_validator("memory_limit_MB")
    @classmethod
    def _enough_memory(cls, value: int) -> int:
        if 0 < value < MIN_MEMORY_MB:
            raise ValueError(f"memory_limit_MB must be at least {MIN_MEMORY_MB} (or -1 for the default)")
        return value


def _limits(li: LimitsIn) -> Limits:
    return Limits(
        timeout_s=li.timeout_s,
        memory_mb=li.memory_mb,
        test_timeout_s=li.test_timeout_s,
        parallel_tests=li.parallel_tests,
        test_isolation=li.test_isolation,
        cpus=li.cpus,
    )


def _run_code_limits(req: RunCodeRequest, language: str) -> Limits:
    """One run: compilation may use the whole of compile_timeout + run_timeout (the harness
    has one deadline for both); the program itself gets run_timeout."""
    compile_s = req.compile_timeout if language in COMPILED else 0.0
    return Limits(
        timeout_s=req.run_timeout + compile_s,
        test_timeout_s=req.run_timeout,
        memory_mb=req.memory_limit_MB if req.memory_limit_MB > 0 else DEFAULT_MEMORY_MB,
        parallel_tests=1,
        output_bytes=RUN_CODE_OUTPUT_BYTES,
    )


def _unsupported_files(req: RunCodeRequest) -> str | None:
    """Why the request's files cannot be honoured, or None."""
    given = [path for path, content in req.files.items() if content is not None]
    if given:
        return f"files: extra files are not supported by this sandbox's /run_code (got {len(given)}: {given[:3]})"
    if req.fetch_files:
        return f"fetch_files: fetching files after the run is not supported (got {req.fetch_files[:3]})"
    return None


# ---- the guard: auth, then the body-size limit, before the app reads anything ----------


class _ClientGone(Exception):
    """The client disconnected before its body was complete."""


def _bearer(headers: Headers) -> str | None:
    """The credentials of an `Authorization: Bearer ...` header (scheme in any case)."""
    scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else None


async def _reply(scope: Scope, send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    await JSONResponse({"detail": detail}, status_code=status, headers=headers)(scope, _nothing, send)


async def _nothing() -> Message:
    return {"type": "http.disconnect"}  # a reply never reads the request


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as more than `limit` bytes have arrived (the rest is
    left unread; the server discards it)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then defers to the server."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class Guard:
    """ASGI middleware in front of the app: authenticates, then reads the body within the
    size limit, then lets the app route and parse. The client's identity (for the
    per-client concurrency cap) is left in `scope["state"]["client"]`."""

    def __init__(self, app: ASGIApp, token: str | None, max_request_bytes: int) -> None:
        self.app = app
        self.token = token
        self.max_request_bytes = max_request_bytes

    def _client(self, scope: Scope, headers: Headers) -> str | None:
        """Who is calling, or None if the token is missing or wrong."""
        path = str(scope.get("path", ""))
        if self.token is None or path in OPEN_PATHS or path.startswith(DOCS_ASSETS + "/"):
            client = scope.get("client")
            return "addr:" + (str(client[0]) if client else "?")
        given = _bearer(headers)
        if given is None or not secrets.compare_digest(given.encode(), self.token.encode()):
            return None
        return "token"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        client = self._client(scope, headers)
        if client is None:
            detail = "missing or wrong bearer token (send 'Authorization: Bearer TOKEN')"
            await _reply(scope, send, 401, detail, {"WWW-Authenticate": "Bearer"})
            return
        scope.setdefault("state", {})["client"] = client
        too_large = f"request body over {self.max_request_bytes} bytes"
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_request_bytes:
            await _reply(scope, send, 413, too_large)
            return
        try:
            body = await _read_body(receive, self.max_request_bytes)
        except _ClientGone:
            return
        if body is None:
            await _reply(scope, send, 413, too_large)
            return
        await self.app(scope, _replay(body, receive), send)


# ---- the app ---------------------------------------------------------------------------

_REFUSALS: dict[int | str, dict[str, Any]] = {
    401: {"description": "missing or wrong bearer token"},
    413: {"description": "request body over the size limit, or too many submissions in a batch"},
    429: {"description": "this client's submissions waited too long for a free slot"},
}


def _client_id(request: Request) -> str:
    return str(request.state.client)


def _add_docs(app: FastAPI) -> None:
    """Swagger UI at /docs and ReDoc at /redoc, with every asset served from here."""
    app.mount(DOCS_ASSETS, StaticFiles(packages=[("fastapi_offline", "static")]), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", ""))
        return get_swagger_ui_html(
            openapi_url=f"{root}/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            oauth2_redirect_url=None,
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", ""))
        return get_redoc_html(
            openapi_url=f"{root}/openapi.json",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            with_google_fonts=False,
        )


class Load:
    """Submissions in this server: running or waiting for a slot of the pool (`active`),
    finished (`done`), and the seconds the pool's slots were busy (`busy_s`), so that a
    reader of two snapshots gets executions/s and utilisation over the interval."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.active, self.done = capacity, 0, 0
        self._busy_s, self._since = 0.0, time.monotonic()

    def _tick(self) -> None:
        now = time.monotonic()
        self._busy_s += min(self.active, self.capacity) * (now - self._since)
        self._since = now

    @asynccontextmanager
    async def counting(self) -> AsyncIterator[None]:
        self._tick()
        self.active += 1
        try:
            yield
        finally:
            self._tick()
            self.active -= 1
            self.done += 1

    def snapshot(self) -> dict[str, float]:
        self._tick()
        return {
            "capacity": self.capacity,
            "active": self.active,
            "pending": max(self.active - self.capacity, 0),
            "done": self.done,
            "busy_s": round(self._busy_s, 6),
            "at_s": round(self._since, 6),
        }


def create_app(
    pool: SandboxPool,
    *,
    token: str | None = None,
    max_request_bytes: int = 4 << 20,
    per_client_concurrency: int = 64,
    queue_timeout_s: float = 600.0,
    max_batch: int = 256,
) -> FastAPI:
    app = FastAPI(title="rlvr sandbox", version="1", description=__doc__, docs_url=None, redoc_url=None)
    app.add_middleware(Guard, token=token, max_request_bytes=max_request_bytes)
    _add_docs(app)
    client_slots: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(per_client_concurrency))
    # what /health reports to an autoscaler (rlvr.dist.sandbox_scaler); a stand-in pool may not say its size
    load = Load(int(getattr(pool, "max_concurrency", 1)))
    # The guard enforces the token; this declares it in the OpenAPI document (and gives
    # Swagger UI its Authorize button).
    secured = [Security(HTTPBearer(auto_error=False, description="the server's token"))] if token else []

    @asynccontextmanager
    async def turn(client: str) -> AsyncIterator[None]:
        """Wait for one of this client's slots (backpressure), at most queue_timeout_s."""
        slot = client_slots[client]
        try:
            await asyncio.wait_for(slot.acquire(), timeout=queue_timeout_s)
        except TimeoutError:
            raise HTTPException(status_code=429, detail="too many submissions in flight for this client") from None
        try:
            yield
        finally:
            slot.release()

    async def run_one(client: str, req: RunRequest) -> dict[str, Any]:
        async with turn(client), load.counting():
            try:
                result = await run_in_threadpool(execute, req.code, req.tests, _limits(req.limits), pool, req.language)
            except SpecError as e:
                raise HTTPException(status_code=422, detail=f"tests: {e}") from None
        return result.to_dict()

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "protections": pool.protections, "load": load.snapshot()}

    @app.post("/v1/run", dependencies=secured, responses=_REFUSALS)
    async def run(req: RunRequest, client: str = Depends(_client_id)) -> dict[str, Any]:
        return await run_one(client, req)

    @app.post("/v1/run_batch", dependencies=secured, responses=_REFUSALS)
    async def run_batch(req: BatchRequest, client: str = Depends(_client_id)) -> dict[str, Any]:
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

    @app.post("/run_code", dependencies=secured, responses={**_REFUSALS, 400: {"description": "files given"}})
    async def run_code(req: RunCodeRequest, client: str = Depends(_client_id)) -> RunCodeResponse:
        refusal = _unsupported_files(req)
        if refusal is not None:
            raise HTTPException(status_code=400, detail=refusal)
        language = LANGUAGES[req.language]
        suite = Suite("stdio", [Probe("run", "stdio", stdin=req.stdin or "")], [Check("completes")])
        probes = [p.to_wire() for p in suite.probes]
        async with turn(client), load.counting():
            raw = await run_in_threadpool(pool.run, req.code, probes, _run_code_limits(req, language), language)
        return fusion_response(raw, decide(suite, raw), language)

    return app


def _listening(sock: socket.socket, host: str, token: str | None, concurrency: int) -> str:
    port = sock.getsockname()[1]
    where = f"[{host}]" if ":" in host else host
    auth = "bearer token required" if token else "NO token required"
    return f"rlvr sandbox: listening on http://{where}:{port} ({auth}; {concurrency} runs at once; docs at /docs)"


def serve(
    host: str,
    port: int,
    token: str | None,
    concurrency: int,
    per_client: int,
) -> None:
    """Run the service until interrupted; says on stderr where it listens once it does."""
    import uvicorn

    with SandboxPool(concurrency) as pool:
        app = create_app(pool, token=token, per_client_concurrency=per_client)
        # keep-alive longer than any client waits between requests: an idle-close racing a
        # reused connection would otherwise surface as a transport error on the client
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_keep_alive=120, backlog=2048)
        sock = config.bind_socket()
        sock.listen(config.backlog)
        print(_listening(sock, host, token, concurrency), file=sys.stderr, flush=True)
        uvicorn.Server(config).run(sockets=[sock])
