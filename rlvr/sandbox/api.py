"""The sandbox's public entry points: run a submission against a test suite."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.sandbox.executor import Limits
from rlvr.sandbox.pool import SandboxPool, default_pool
from rlvr.sandbox.spec import SpecError, Suite, parse_suite
from rlvr.sandbox.verdict import decide
from rlvr.types import ExecutionResult

Tests = list[str] | dict[str, Any] | Suite


def _suite(tests: Tests) -> Suite:
    if isinstance(tests, Suite):
        return tests
    if isinstance(tests, list):
        return parse_suite({"format": "assert", "tests": tests})
    return parse_suite(tests)


LANGUAGES = ("python", "c", "cpp", "javascript")


def execute(
    code: str,
    tests: Tests,
    limits: Limits | None = None,
    pool: SandboxPool | None = None,
    language: str = "python",
) -> ExecutionResult:
    """Run `code` against `tests` (a list of asserts, a TESTS.json object, or a Suite).
    Only the probes enter the sandbox; the verdicts are decided here. C, C++ and
    JavaScript programs are compiled (C, C++) and tested through stdin/stdout."""
    if language not in LANGUAGES:
        raise SpecError(f"unknown language '{language}'; valid: {', '.join(LANGUAGES)}")
    suite = _suite(tests)
    if language != "python" and suite.format != "stdio":
        raise SpecError(f"{language} programs are tested with format 'stdio', not '{suite.format}'")
    raw = (pool or default_pool()).run(code, [p.to_wire() for p in suite.probes], limits or Limits(), language)
    return decide(suite, raw)


def execute_many(
    jobs: list[tuple[str, Tests]],
    limits: Limits | None = None,
    workers: int = 4,
    pool: SandboxPool | None = None,
    language: str = "python",
) -> list[ExecutionResult]:
    """Several submissions concurrently; results in input order."""
    with ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(lambda j: execute(j[0], j[1], limits, pool, language), jobs))
