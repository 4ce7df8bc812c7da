"""Deciding verdicts from a run's raw observations and the checks only the supervisor holds."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from typing import Any

from rlvr.sandbox.spec import Suite, judge
from rlvr.sandbox.wire import WireError, decode
from rlvr.types import ExecutionResult, RunStatus, TestResult, TestStatus


def _signame(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def events(raw: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The run's event lines as objects; lines that are not JSON objects are skipped
    (a submission may write anything to the descriptor). Their text fields (messages,
    output) come back as valid UTF-8: JSON's `\\ud800` escapes decode to lone surrogates,
    which an exception message can carry (an input holding one, or a submission's own)
    and which the trace store cannot write, so each is kept as its escape. The observed
    value (`v`) is left to the wire, which carries strings exactly."""
    for line in raw.get("events", []):
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            yield {k: utf8_text(x) if isinstance(x, str) and k != "v" else x for k, x in ev.items()}


def utf8_text(s: str) -> str:
    """`s` with every lone surrogate written as its escape (`\\ud83d`): text any UTF-8 writer takes."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def _result(raw: dict[str, Any], status: RunStatus, tests: list[TestResult], error: str) -> ExecutionResult:
    return ExecutionResult(
        status=status,
        tests=tests,
        stdout=str(raw.get("stdout", "")),
        stderr=str(raw.get("stderr", "")),
        wall_time_s=float(raw.get("wall_time_s", 0.0)),
        cpu_time_s=float(raw.get("cpu_time_s", 0.0)),
        peak_memory_mb=float(raw.get("peak_memory_mb", 0.0)),
        error=error[-2000:],
    )


def _decide_pytest(suite: Suite, raw: dict[str, Any]) -> ExecutionResult:
    """One TestResult per collected test; only 'passed' passes; the collected count must
    equal the expected count, or every test fails."""
    results: dict[str, TestResult] = {}
    collected: int | None = None
    timed_out = bool(raw.get("timed_out"))
    for ev in events(raw):
        if ev.get("e") == "collected" and collected is None:
            collected = int(ev.get("n", 0))
        elif ev.get("e") == "timeout":
            timed_out = True
        elif ev.get("e") == "pytest":
            nid, outcome = str(ev.get("id")), str(ev.get("outcome"))
            if nid in results and results[nid].status is not TestStatus.PASSED:
                continue  # a failure in setup/call/teardown sticks
            verdict = TestStatus.PASSED if outcome == "passed" else TestStatus.FAILED
            msg = "" if verdict is TestStatus.PASSED else f"{outcome} in {ev.get('when')}: {ev.get('msg', '')}"[-2000:]
            results[nid] = TestResult(nid, verdict, msg)
    tests = list(results.values())
    expected = suite.expected_tests or 0
    status, error = RunStatus.OK, ""
    if timed_out:
        status, error = RunStatus.TIMEOUT, "time limit exceeded"
    if collected != expected:
        error = f"collected {collected} tests, expected {expected}"
        tests = [TestResult(t.name, TestStatus.FAILED, error) for t in tests]
    while len(tests) < expected:
        tests.append(
            TestResult(
                f"missing test {len(tests) + 1}", TestStatus.TIMEOUT if timed_out else TestStatus.ERROR, "no result"
            )
        )
    return _result(raw, status, tests, error)


def decide(suite: Suite, raw: dict[str, Any]) -> ExecutionResult:
    n = len(suite.probes)
    names = [p.name for p in suite.probes]
    if suite.format == "pytest" and "sandbox_error" not in raw:
        return _decide_pytest(suite, raw)
    if "sandbox_error" in raw:
        return ExecutionResult(
            RunStatus.SANDBOX_ERROR,
            [TestResult(names[i], TestStatus.ERROR, "sandbox failure") for i in range(n)],
            error=str(raw["sandbox_error"])[-2000:],
        )
    per: dict[int, TestResult] = {}
    status, error = RunStatus.OK, ""
    loaded = suite.format == "stdio"
    violations: list[str] = []  # the harness never does these; a submission writing events does
    answered: set[int] = set()
    for ev in events(raw):
        kind, i = ev.get("e"), ev.get("i")
        if kind in ("value", "error", "stdout") and isinstance(i, int) and 0 <= i < n:
            if not loaded:
                violations.append(f"a result for test {names[i]!r} before the submission loaded")
            elif i in answered:
                violations.append(f"two results for test {names[i]!r}")
                per[i] = TestResult(names[i], TestStatus.FAILED, "two results for one test: one was forged")
            answered.add(i)
        elif kind == "loaded" and loaded and suite.format != "stdio":
            violations.append("the submission reported loaded twice")
        if kind == "sandbox_error":
            return ExecutionResult(
                RunStatus.SANDBOX_ERROR,
                [TestResult(names[j], TestStatus.ERROR, "sandbox failure") for j in range(n)],
                error=str(ev.get("msg", ""))[-2000:],
            )
        if kind == "compile_error":
            status, error = RunStatus.COMPILE_ERROR, str(ev.get("msg", ""))
        elif kind == "load_error":
            msg = str(ev.get("msg", ""))
            status, error = (RunStatus.MEMORY if msg.startswith("MemoryError") else RunStatus.RUNTIME_ERROR), msg
        elif kind == "loaded":
            loaded = True
        if not (isinstance(i, int) and 0 <= i < n) or i in per or not loaded:
            continue
        check = suite.checks[i]
        if kind == "value":
            try:
                ok, msg = judge(check, decode(ev.get("v")))
            except WireError as e:
                ok, msg = False, f"unreadable result: {e}"
            per[i] = TestResult(names[i], TestStatus.PASSED if ok else TestStatus.FAILED, msg)
        elif kind == "error":
            msg = str(ev.get("msg", ""))[:2000]
            per[i] = TestResult(
                names[i], TestStatus.FAILED if msg.startswith("AssertionError") else TestStatus.ERROR, msg
            )
        elif kind == "stdout":
            if ev.get("truncated"):
                per[i] = TestResult(names[i], TestStatus.FAILED, "output limit exceeded")
                status = RunStatus.OUTPUT_LIMIT
            else:
                ok, msg = judge(check, str(ev.get("out", "")))
                exit_code = ev.get("exit", 0)
                if exit_code != 0:
                    why = f"killed by {_signame(exit_code)}" if exit_code < 0 else f"exited with {exit_code}"
                    ok, msg = False, why + (f"; {msg}" if msg else "")
                per[i] = TestResult(names[i], TestStatus.PASSED if ok else TestStatus.FAILED, msg)
        elif kind == "timeout":
            per[i] = TestResult(names[i], TestStatus.TIMEOUT, "time limit exceeded")
        elif kind == "end":
            code = int(ev.get("status", 0))
            why = f"killed by {_signame(code)}" if code < 0 else f"exited with {code} before reporting a result"
            if code == -signal.SIGXCPU:  # its CPU limit reached before the wall deadline (a busy machine)
                per[i] = TestResult(names[i], TestStatus.TIMEOUT, "CPU time limit exceeded")
            elif "MemoryError" in raw.get("stderr", "") or raw.get("oom"):
                per[i] = TestResult(names[i], TestStatus.ERROR, f"out of memory ({why})")
            else:
                per[i] = TestResult(names[i], TestStatus.ERROR, why)
    timed_out = bool(raw.get("timed_out"))
    for i in range(n):
        if i not in per:
            if status in (RunStatus.COMPILE_ERROR, RunStatus.RUNTIME_ERROR, RunStatus.MEMORY):
                per[i] = TestResult(names[i], TestStatus.ERROR, "not run: the submission did not load")
            else:
                per[i] = TestResult(names[i], TestStatus.TIMEOUT if timed_out else TestStatus.ERROR, "no result")
    tests = [per[i] for i in range(n)]
    exit_code = int(raw.get("exit", 0))
    if status is RunStatus.OK:
        if timed_out or any(t.status is TestStatus.TIMEOUT for t in tests):
            status, error = RunStatus.TIMEOUT, "time limit exceeded"
        elif raw.get("oom") or any("out of memory" in t.message or t.message.startswith("MemoryError") for t in tests):
            status, error = RunStatus.MEMORY, "memory limit exceeded"
        elif exit_code < 0 or exit_code >= 128:
            sig = _signame(exit_code if exit_code < 0 else 128 - exit_code)
            status, error = (
                (RunStatus.TIMEOUT, "CPU time limit exceeded")
                if sig == "SIGXCPU"
                else (
                    (RunStatus.OUTPUT_LIMIT, "file size limit exceeded")
                    if sig == "SIGXFSZ"
                    else (RunStatus.RUNTIME_ERROR, f"killed by {sig}")
                )
            )
        elif not loaded:
            status, error = RunStatus.RUNTIME_ERROR, f"exited with {exit_code} before loading the submission"
        elif raw.get("output_truncated"):
            status, error = RunStatus.OUTPUT_LIMIT, "output limit exceeded"
    result = _result(raw, status, tests, error)
    result.violations = list(dict.fromkeys(violations))
    return result
