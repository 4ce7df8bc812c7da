"""Clients for a remote `rlvr sandbox serve`: async (`AsyncSandboxClient`) and blocking
(`SandboxClient`, what training's environment threads use). Both retry connection
errors, 429 and 5xx answers with exponential backoff, and give up with SandboxError
after `retries` attempts; a request's own timeout covers the run's limit plus slack."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from rlvr.sandbox.executor import Limits
from rlvr.sandbox.pool import SandboxError
from rlvr.types import ExecutionResult

_RETRY_STATUS = {429, 500, 502, 503, 504}


def _payload(code: str, tests: dict[str, Any] | list[str], limits: Limits, language: str = "python") -> dict[str, Any]:
    spec = {"format": "assert", "tests": tests} if isinstance(tests, list) else tests
    return {
        "code": code,
        "tests": spec,
        "language": language,
        "limits": {
            "timeout_s": limits.timeout_s,
            "memory_mb": limits.memory_mb,
            "test_timeout_s": limits.test_timeout_s,
            "parallel_tests": limits.parallel_tests,
            "test_isolation": limits.test_isolation,
            "cpus": limits.cpus,
        },
    }


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _check(resp: httpx.Response) -> dict[str, Any]:
    if resp.status_code in (401, 413, 422):
        raise SandboxError(f"sandbox server refused the request ({resp.status_code}): {resp.text[:500]}")
    resp.raise_for_status()
    data: dict[str, Any] = resp.json()
    return data


class AsyncSandboxClient:
    def __init__(self, base_url: str, token: str | None = None, retries: int = 4, backoff_s: float = 0.2) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retries = retries
        self.backoff_s = backoff_s
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=_headers(token), timeout=None)

    async def _post(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        last: Exception | None = None
        for attempt in range(self.retries):
            try:
                resp = await self._client.post(path, json=body, timeout=timeout)
                if resp.status_code not in _RETRY_STATUS:
                    return _check(resp)
                last = SandboxError(f"sandbox server answered {resp.status_code}")
            except httpx.TransportError as e:
                last = e
            await asyncio.sleep(self.backoff_s * 2**attempt)
        raise SandboxError(f"sandbox server unreachable after {self.retries} attempts: {last}")

    async def run(
        self, code: str, tests: dict[str, Any] | list[str], limits: Limits | None = None, language: str = "python"
    ) -> ExecutionResult:
        limits = limits or Limits()
        data = await self._post("/v1/run", _payload(code, tests, limits, language), limits.timeout_s + 60)
        return ExecutionResult.from_dict(data)

    async def run_batch(
        self, jobs: list[tuple[str, dict[str, Any] | list[str]]], limits: Limits | None = None
    ) -> list[ExecutionResult]:
        limits = limits or Limits()
        body = {"submissions": [_payload(c, t, limits) for c, t in jobs]}
        data = await self._post("/v1/run_batch", body, limits.timeout_s * len(jobs) + 60)
        return [ExecutionResult.from_dict(r) for r in data["results"]]

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> AsyncSandboxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class SandboxClient:
    def __init__(self, base_url: str, token: str | None = None, retries: int = 4, backoff_s: float = 0.2) -> None:
        self.retries = retries
        self.backoff_s = backoff_s
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=_headers(token), timeout=None)

    def run(
        self, code: str, tests: dict[str, Any] | list[str], limits: Limits | None = None, language: str = "python"
    ) -> ExecutionResult:
        limits = limits or Limits()
        last: Exception | None = None
        for attempt in range(self.retries):
            try:
                payload = _payload(code, tests, limits, language)
                resp = self._client.post("/v1/run", json=payload, timeout=limits.timeout_s + 60)
                if resp.status_code not in _RETRY_STATUS:
                    return ExecutionResult.from_dict(_check(resp))
                last = SandboxError(f"sandbox server answered {resp.status_code}")
            except httpx.TransportError as e:
                last = e
            time.sleep(self.backoff_s * 2**attempt)
        raise SandboxError(f"sandbox server unreachable after {self.retries} attempts: {last}")

    def close(self) -> None:
        self._client.close()
