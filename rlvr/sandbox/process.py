"""Running a Python submission against assert tests in a resource-limited child process.

What this protects against: runaway time (wall-clock kill of the whole process group),
memory (RLIMIT_AS), CPU (RLIMIT_CPU), huge output or files (RLIMIT_FSIZE, output read
up to a cap), core dumps, the submission reading the host's environment variables (the
child gets an allow-listed environment), and test-to-test crashes (each test's verdict is
recorded as it finishes, so a crash in test 3 still counts tests 1-2).

What it does NOT protect against yet (the sandbox issue adds these behind the same
`execute` interface): filesystem and network access, processes that escape the process
group (setsid), fork bombs beyond RLIMIT_NPROC, and grader tampering by a submission that
writes fake verdict lines or overrides equality. Do not run hostile code with it.

Verdicts are decided here, in the supervisor, from the child's event lines; the exit
status is informational only.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rlvr.types import ExecutionResult, RunStatus, TestResult, TestStatus

_CHILD = Path(__file__).with_name("_child.py")
_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 5.0
    memory_mb: int = 512
    output_bytes: int = 64 * 1024  # captured stdout/stderr, each
    file_size_mb: int = 16


def _preexec(limits: Limits) -> None:
    os.setsid()
    mem = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cpu = int(limits.timeout_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    fsize = limits.file_size_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _read_capped(f: IO[bytes], cap: int) -> str:
    f.seek(0)
    data = f.read(cap + 1)
    text = data[:cap].decode("utf-8", "replace")
    return text + ("\n...[truncated]" if len(data) > cap else "")


def execute(code: str, tests: list[str], limits: Limits | None = None) -> ExecutionResult:
    """Run `code`, then each assert in `tests`, and return the supervisor's verdicts."""
    limits = limits or Limits()
    t0 = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="rlvr-run-") as workdir,
        tempfile.TemporaryFile() as events,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_CHILD), str(events.fileno())],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                cwd=workdir,
                env=_ENV,
                pass_fds=(events.fileno(),),
                preexec_fn=lambda: _preexec(limits),
            )
        except OSError as e:
            return ExecutionResult(status=RunStatus.SANDBOX_ERROR, error=f"could not start the child: {e}")
        timed_out = False
        rusage = None
        status_code = 0
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"code": code, "tests": tests}).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        deadline = t0 + limits.timeout_s
        delay = 0.0005
        while True:
            pid, status_code, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status_code)
                break
            if time.perf_counter() > deadline:
                timed_out = True
                _kill_group(proc.pid)
                _, status_code, rusage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status_code)
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        _kill_group(proc.pid)  # whatever the submission left behind in its group
        wall = time.perf_counter() - t0
        events.seek(0)
        lines = events.read().decode("utf-8", "replace").splitlines()
        stdout = _read_capped(out, limits.output_bytes)
        stderr = _read_capped(err, limits.output_bytes)
    return _verdict(lines, tests, proc.returncode, timed_out, wall, rusage, stdout, stderr)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _verdict(
    lines: list[str],
    tests: list[str],
    returncode: int,
    timed_out: bool,
    wall: float,
    rusage: resource.struct_rusage | None,
    stdout: str,
    stderr: str,
) -> ExecutionResult:
    results: dict[int, TestResult] = {}
    run_status = RunStatus.OK
    error = ""
    compiled = False
    for line in lines:
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = ev.get("event")
        if kind == "compiled":
            compiled = True
        elif kind == "compile_error":
            run_status, error = RunStatus.COMPILE_ERROR, ev.get("message", "")
        elif kind == "runtime_error":
            run_status, error = RunStatus.RUNTIME_ERROR, ev.get("message", "")
        elif kind == "memory":
            run_status, error = RunStatus.MEMORY, "MemoryError while defining the solution"
        elif kind == "test" and compiled:
            i = ev.get("index")
            if isinstance(i, int) and 0 <= i < len(tests) and i not in results:
                status = TestStatus(ev["status"]) if ev.get("status") in TestStatus.__members__ else TestStatus.ERROR
                results[i] = TestResult(
                    name=tests[i],
                    status=status,
                    message=str(ev.get("message", ""))[:2000],
                    duration_s=float(ev.get("duration_s", 0.0)),
                )
    missing = TestStatus.TIMEOUT if timed_out else TestStatus.ERROR
    for i, t in enumerate(tests):
        if i not in results:
            results[i] = TestResult(name=t, status=missing, message="no result (the run ended before this test)")
    if timed_out:
        run_status, error = RunStatus.TIMEOUT, error or "wall-clock time limit exceeded"
    elif returncode < 0 and run_status is RunStatus.OK:
        sig = signal.Signals(-returncode)
        if sig is signal.SIGXCPU:
            run_status, error = RunStatus.TIMEOUT, "CPU time limit exceeded"
        elif sig is signal.SIGXFSZ:
            run_status, error = RunStatus.OUTPUT_LIMIT, "file size limit exceeded"
        else:
            run_status, error = RunStatus.RUNTIME_ERROR, f"killed by {sig.name}"
    elif run_status is RunStatus.OK and not compiled:
        if "MemoryError" in stderr:
            run_status, error = RunStatus.MEMORY, "out of memory"
        else:
            run_status, error = RunStatus.RUNTIME_ERROR, f"exited with {returncode} before running tests"
    elif run_status is RunStatus.OK and "MemoryError" in {r.message for r in results.values()}:
        run_status = RunStatus.MEMORY
    cpu = (rusage.ru_utime + rusage.ru_stime) if rusage else 0.0
    peak_mb = (rusage.ru_maxrss / 1024.0) if rusage else 0.0
    return ExecutionResult(
        status=run_status,
        tests=[results[i] for i in range(len(tests))],
        stdout=stdout,
        stderr=stderr,
        wall_time_s=wall,
        cpu_time_s=cpu,
        peak_memory_mb=peak_mb,
        error=error,
    )


def execute_many(
    jobs: list[tuple[str, list[str]]], limits: Limits | None = None, workers: int = 4
) -> list[ExecutionResult]:
    """Run several submissions concurrently; results come back in input order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda j: execute(j[0], j[1], limits), jobs))
