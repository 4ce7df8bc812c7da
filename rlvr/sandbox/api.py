"""The sandbox's public entry points: run a submission against a test suite."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.sandbox.executor import Limits
from rlvr.sandbox.pool import SandboxPool, default_pool
from rlvr.sandbox.spec import Probe, SpecError, Suite, parse_suite
from rlvr.sandbox.verdict import decide, events
from rlvr.sandbox.wire import WireError, decode
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
    Only the probes enter the sandbox, in a secret random order; the verdicts are decided
    here and come back in the suite's order. C, C++ and
    JavaScript programs are compiled (C, C++) and tested through stdin/stdout."""
    if language not in LANGUAGES:
        raise SpecError(f"unknown language '{language}'; valid: {', '.join(LANGUAGES)}")
    suite = _suite(tests)
    if language != "python" and suite.format != "stdio":
        raise SpecError(f"{language} programs are tested with format 'stdio', not '{suite.format}'")
    order = _secret_order(len(suite.probes))
    sent = Suite(suite.format, [suite.probes[j] for j in order], [suite.checks[j] for j in order], suite.expected_tests)
    raw = (pool or default_pool()).run(code, [p.to_wire() for p in sent.probes], limits or Limits(), language)
    result = decide(sent, raw)
    if len(result.tests) == len(order):  # back in the suite's order
        ordered = list(result.tests)
        for k, j in enumerate(order):
            ordered[j] = result.tests[k]
        result.tests = ordered
    return result


def _secret_order(n: int) -> list[int]:
    """The order the tests run in: a fresh random permutation every run, unknown to the
    submission. Each test runs in its own fork, so for honest code the order changes
    nothing; it stops a submission that counts its calls (in a file every test process
    can see) from knowing which test it is answering."""
    order = list(range(n))
    random.SystemRandom().shuffle(order)
    return order


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


class SandboxFailure(RuntimeError):
    """The sandbox itself failed (not the code it ran)."""


def observe(
    code: str, exprs: list[str], limits: Limits | None = None, pool: SandboxPool | None = None
) -> list[tuple[bool, Any]]:
    """The value of each Python expression after `code` runs, each in its own fork, as the
    tests see them: (True, value) decoded outside the process, or (False, why) for an
    expression that raised, timed out or returned nothing readable. For computing expected
    values from a trusted reference (rlvr.rewards.hidden_tests); `SandboxFailure` when the
    sandbox failed."""
    probes = [Probe(f"observe {i}", "expr", expr=e).to_wire() for i, e in enumerate(exprs)]
    raw = (pool or default_pool()).run(code, probes, limits or Limits(), "python")
    if "sandbox_error" in raw:
        raise SandboxFailure(str(raw["sandbox_error"])[-500:])
    out: list[tuple[bool, Any]] = [(False, "no result") for _ in exprs]
    for ev in events(raw):
        kind, i = ev.get("e"), ev.get("i")
        if kind == "load_error":
            return [(False, f"the code did not load: {str(ev.get('msg', ''))[:200]}") for _ in exprs]
        if not (isinstance(i, int) and 0 <= i < len(exprs)):
            continue
        if kind == "value":
            try:
                out[i] = (True, decode(ev.get("v")))
            except WireError as e:
                out[i] = (False, f"unreadable: {e}")
        elif kind in ("error", "timeout"):
            out[i] = (False, str(ev.get("msg", kind))[:200])
    return out
