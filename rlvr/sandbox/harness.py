"""The in-sandbox side of a run: define the submission, evaluate each probe in a fork.

Runs as PID 1 of the run's PID namespace, after the jail is in place. It never sees the
expected values; it reports, one JSON line per event on the events descriptor:
  {"e": "compile_error", "msg"} | {"e": "load_error", "msg"} | {"e": "loaded"}
  {"e": "value", "i", "v"}     observed value of probe i (wire-encoded)
  {"e": "error", "i", "msg"}   probe i raised
  {"e": "stdout", "i", "out", "exit"}   stdio probe i: the program's stdout
  {"e": "end", "i", "status"}  probe i's process ended (exit code or -signal)
  {"e": "timeout", "i"}        probe i ran out of time and was killed
Probes run in forks of the state left by the submission's top-level code: all in one
fork, one after another (shared mode), or each in its own (process mode; nothing a test
does can be seen by another); up to `parallel` of these forks run at once (events may
then arrive out of probe order: each carries its probe's index). The submission can
tamper with this process, but all it can forge is an observed value, and it never learns
what would pass.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import struct
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlvr.sandbox import workspace
from rlvr.sandbox.waiting import wait_for
from rlvr.sandbox.wire import encode


def _emitter(fd: int):  # type: ignore[no-untyped-def]
    def emit(obj: dict[str, Any]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]

    return emit


def _short(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()[-2000:]


def _wait(pid: int, deadline: float) -> int | None:
    """Exit status (negative signal) of pid, or None if it outlived the deadline (then killed)."""
    if wait_for(pid, deadline) == "timeout":
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


# language -> (source file, compile command or None, run command)
LANGUAGES: dict[str, tuple[str, list[str] | None, list[str]]] = {
    "c": ("main.c", ["gcc", "-O2", "-std=c17", "-o", "main", "main.c", "-lm"], ["./main"]),
    "cpp": ("main.cpp", ["g++", "-O2", "-std=c++17", "-o", "main", "main.cpp"], ["./main"]),
    "javascript": ("main.js", None, ["node", "main.js"]),
}


def run(
    code: str,
    probes: list[dict[str, str]],
    events_fd: int,
    test_timeout_s: float,
    output_cap: int,
    run_deadline: float | None = None,
    language: str = "python",
    parallel: int = 1,
    shared: bool = True,
    private_fds: tuple[int, ...] = (),
) -> None:
    """Each probe may run until test_timeout_s after it starts, and never past run_deadline
    (a time.monotonic() value; the clock is shared with the supervisor). `private_fds` are
    closed in every test process (the supervisor's 'done' pipe: a test cannot end the run)."""
    emit = _emitter(events_fd)
    end = run_deadline if run_deadline is not None else float("inf")

    def deadline() -> float:
        return min(time.monotonic() + test_timeout_s, end)

    if language == "command":
        workspace.run_job(json.loads(code), emit, deadline(), _wait)
        return
    if language != "python":
        _run_native(code, probes, emit, deadline, end, output_cap, language)
        return

    try:
        compiled = compile(code, "solution.py", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        emit({"e": "compile_error", "msg": _short(e)})
        return
    if any(p["kind"] == "pytest" for p in probes):
        _run_pytest(code, probes[0]["expr"], emit, deadline(), json.loads(probes[0].get("files") or "{}"))
    elif any(p["kind"] in ("expr", "script") for p in probes):
        _run_expr_probes(compiled, probes, emit, deadline, parallel, shared, private_fds)
    else:
        if len(probes) > 1:
            _preload_imports(compiled)
        _run_stdio_probes(compiled, probes, emit, deadline, output_cap)


def _preload_imports(compiled: Any) -> None:
    """Import the installed modules a stdin program imports at its top level before the
    cases fork, so that each case's fork starts with them loaded (pandas takes a quarter
    of a second to import: twenty cases would spend five seconds on it). Only modules
    that exist before the program runs can load here (the program has written nothing
    yet); one that fails to import is left to fail in the program itself. The names are
    read from the compiled module's own import instructions (absolute imports only)."""
    import dis
    import importlib

    ops = list(dis.get_instructions(compiled))
    names = [
        str(op.argval)
        for i, op in enumerate(ops)
        if op.opname == "IMPORT_NAME" and i >= 2 and ops[i - 2].opname == "LOAD_CONST" and ops[i - 2].argval == 0
    ]
    for name in dict.fromkeys(names):
        with contextlib.suppress(BaseException):
            importlib.import_module(name)


SECOND_WORKER_AFTER_S = 0.02  # shared mode: a test running this long gets a second test process beside it


@dataclass
class _Worker:
    """A test process: a fork of the loaded submission, running one test (process mode)
    or one test after another (shared mode, told the next test's index on `cmd_w`)."""

    pid: int
    pidfd: int
    report_r: int
    cmd_w: int | None
    test: int
    deadline: float
    started: float


def _run_expr_probes(
    compiled: Any,
    probes: list[dict[str, str]],
    emit: Any,
    deadline: Callable[[], float],
    parallel: int = 1,
    shared: bool = True,
    private_fds: tuple[int, ...] = (),
) -> None:
    """Evaluate every probe in forks of the loaded submission, each result reported as it
    completes. Process mode: one fork per test, up to `parallel` at a time, so nothing a
    test does can be seen by another. Shared mode: one fork runs the tests one after
    another (a test sees what earlier tests of the run left, as in HumanEval's harness);
    a second starts beside it when a test runs longer than SECOND_WORKER_AFTER_S (up to
    `parallel`); a test that crashes, times out or breaks its process (no well-formed
    report) ends that fork, and the remaining tests go on in a fresh fork of the loaded
    state. In both modes a test's verdict rests on its own reported value alone."""
    # a real module registered as `solution`, so that code looking its module up in
    # sys.modules (dataclasses, pickle, typing.get_type_hints) works as it does at home
    module = types.ModuleType("solution")
    sys.modules["solution"] = module
    ns: dict[str, Any] = module.__dict__
    ns["__builtins__"] = __builtins__
    try:
        exec(compiled, ns)
    except BaseException as e:
        emit({"e": "load_error", "msg": _short(e)})
        return
    emit({"e": "loaded"})
    reported: list[int] = []  # killed after reporting; reaped when convenient
    workers: dict[int, _Worker] = {}  # report fd -> worker
    queue = list(range(len(probes)))[::-1]
    limit = max(1, parallel)
    while queue or workers:
        now = time.monotonic()
        while (
            queue
            and len(workers) < limit
            and (not shared or not workers or all(now - w.started >= SECOND_WORKER_AFTER_S for w in workers.values()))
        ):
            i = queue.pop()
            w = _start_worker(probes, i, ns, emit, deadline(), shared, workers, reported, private_fds)
            if w is None:
                emit({"e": "error", "i": i, "msg": "could not start the test's process: the process limit is reached"})
                continue
            workers[w.report_r] = w
        if not workers:
            continue
        wake = min(w.deadline for w in workers.values())
        if shared and queue and len(workers) < limit:
            wake = min(wake, min(w.started for w in workers.values()) + SECOND_WORKER_AFTER_S)
        watched = [*workers, *(w.pidfd for w in workers.values())]
        ready, _, _ = select.select(watched, [], [], max(0.0, wake - time.monotonic()))
        ready_set = set(ready)
        now = time.monotonic()
        for fd, w in list(workers.items()):
            if fd in ready_set:
                data = os.read(fd, 4)
                if len(data) == 4 and struct.unpack("!I", data)[0] == w.test:
                    if shared and queue:  # the same process goes on with the next test
                        w.test = queue.pop()
                        try:
                            os.write(w.cmd_w, struct.pack("!I", w.test))  # type: ignore[arg-type]
                            w.deadline, w.started = deadline(), now
                            continue
                        except OSError:  # it is gone: the test goes back in line
                            queue.append(w.test)
                    _end_worker(w, workers, signal.SIGKILL)
                    reported.append(w.pid)
                    continue
                # a malformed report or none: the process is broken or gone
                _end_worker(w, workers, signal.SIGKILL)
                emit({"e": "end", "i": w.test, "status": _status(w.pid)})
            elif w.pidfd in ready_set:  # ended without reporting its test
                _end_worker(w, workers, None)
                emit({"e": "end", "i": w.test, "status": _status(w.pid)})
            elif w.deadline <= now:
                _end_worker(w, workers, signal.SIGKILL)
                os.waitpid(w.pid, 0)
                emit({"e": "timeout", "i": w.test})
    _reap(reported)


def _status(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _end_worker(w: _Worker, workers: dict[int, _Worker], sig: int | None) -> None:
    if sig is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(w.pid, sig)
    del workers[w.report_r]
    for fd in (w.report_r, w.pidfd, w.cmd_w):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _start_worker(
    probes: list[dict[str, str]],
    i: int,
    ns: dict[str, Any],
    emit: Any,
    test_deadline: float,
    shared: bool,
    workers: dict[int, _Worker],
    reported: list[int],
    private_fds: tuple[int, ...],
) -> _Worker | None:
    sys.stdout.flush()
    sys.stderr.flush()
    _reap(reported)
    report_r, report_w = os.pipe()
    cmd_r, cmd_w = os.pipe() if shared else (None, None)
    pid = _fork(reported)
    if pid is None:
        for fd in (report_r, report_w, cmd_r, cmd_w):
            if fd is not None:
                os.close(fd)
        return None
    if pid == 0:
        os.close(report_r)
        if cmd_w is not None:
            os.close(cmd_w)
        for w in workers.values():
            for fd in (w.report_r, w.pidfd, w.cmd_w):
                if fd is not None:
                    os.close(fd)
        for fd in private_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        _worker(probes, i, ns, emit, report_w, cmd_r)
    os.close(report_w)
    if cmd_r is not None:
        os.close(cmd_r)
    return _Worker(pid, os.pidfd_open(pid), report_r, cmd_w, i, test_deadline, time.monotonic())


def _worker(
    probes: list[dict[str, str]], i: int, ns: dict[str, Any], emit: Any, report_w: int, cmd_r: int | None
) -> None:
    """Body of a test process: evaluate probe i, report its index, and (shared mode) wait
    for the next index. Never returns. It exits without reporting when it can no longer
    write its results (the supervisor then moves on in a fresh process)."""
    code = 0
    try:
        while True:
            if not _evaluate(probes[i], i, ns, emit):
                code = 1
                break
            sys.stdout.flush()
            sys.stderr.flush()
            os.write(report_w, struct.pack("!I", i))
            if cmd_r is None:
                break
            data = os.read(cmd_r, 4)
            if len(data) != 4:
                break
            (i,) = struct.unpack("!I", data)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _evaluate(probe: dict[str, str], i: int, ns: dict[str, Any], emit: Any) -> bool:
    """Evaluate one probe and emit what it observed; False when the result could not be
    written (the events descriptor is gone)."""
    try:
        if probe["kind"] == "script":
            exec(compile(probe["expr"], f"test_{i}", "exec"), ns)
            value = None
        else:
            value = eval(probe["expr"], ns)
        event = {"e": "value", "i": i, "v": encode(value)}
    except BaseException as e:
        try:
            event = {"e": "error", "i": i, "msg": _short(e)}
        except BaseException:
            event = {"e": "error", "i": i, "msg": "the test raised an exception that cannot be shown"}
    try:
        emit(event)
    except OSError:
        return False
    return True


def _fork(reported: list[int]) -> int | None:
    """os.fork(), retried for up to ~0.13 s while the process limit is reached (killed test
    processes of this run may not be reaped yet); None if it never succeeds."""
    for attempt in range(25):
        try:
            return os.fork()
        except BlockingIOError:
            _reap(reported)
            time.sleep(0.002 * (attempt + 1) / 5)
    return None


def _reap(pids: list[int]) -> None:
    """Collect those of `pids` (killed after reporting) that have exited, without
    blocking (they count against the pids limit). Other children are left alone: their
    exit status is still to be read."""
    for pid in list(pids):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pids.remove(pid)


def _run_pytest(code: str, test_source: str, emit: Any, deadline: float, files: dict[str, str]) -> None:
    """pytest on the test file with the submission as module `solution`, in a fork; each
    test's outcome is reported as it is decided. `files` (relative paths, checked by the
    supervisor) are written to the work dir first."""
    for path, text in files.items():
        if path.startswith("/") or ".." in path.split("/"):
            emit({"e": "error", "i": 0, "msg": f"refused file path {path!r}"})
            return
        if "/" in path:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open("solution.py", "w") as f:
        f.write(code)
    with open("test_solution.py", "w") as f:
        f.write(test_source)
    emit({"e": "loaded"})
    pid = os.fork()
    if pid == 0:
        try:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            sys.path.insert(0, os.getcwd())
            import pytest

            class Recorder:
                def pytest_collection_finish(self, session: Any) -> None:
                    emit({"e": "collected", "n": len(session.items)})

                def pytest_runtest_logreport(self, report: Any) -> None:
                    if report.when == "call" or report.outcome != "passed":
                        outcome = "xfail" if hasattr(report, "wasxfail") else report.outcome
                        emit(
                            {
                                "e": "pytest",
                                "id": report.nodeid,
                                "when": report.when,
                                "outcome": outcome,
                                "msg": str(report.longreprtext)[-2000:],
                            }
                        )

            args = [
                "-q",
                "-p",
                "no:cacheprovider",
                "--noconftest",
                "-c",
                os.devnull,
                "--rootdir",
                os.getcwd(),
                "-o",
                "python_files=test_solution.py",
                "test_solution.py",
            ]
            pytest.main(args, plugins=[Recorder()])
        except BaseException as e:
            with contextlib.suppress(BaseException):
                sys.stderr.write(f"pytest could not run: {_short(e)}\n")
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(0)
    status = _wait(pid, deadline)
    emit({"e": "timeout", "i": 0} if status is None else {"e": "end", "i": 0, "status": status})


def _spawn(argv: list[str], stdin_fd: int, stdout_fd: int, stderr_fd: int) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(stdin_fd, 0)
            os.dup2(stdout_fd, 1)
            os.dup2(stderr_fd, 2)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    return pid


def _run_native(
    code: str,
    probes: list[dict[str, str]],
    emit: Any,
    deadline: Callable[[], float],
    end: float,
    output_cap: int,
    language: str,
) -> None:
    """Compiled or non-Python programs: compile once (errors come back as feedback), then
    run the program once per stdio probe, each a fresh process."""
    source, compile_cmd, run_cmd = LANGUAGES[language]
    with open(source, "w") as f:
        f.write(code)
    if compile_cmd is not None:
        log = os.memfd_create("compile")
        devnull = os.open(os.devnull, os.O_RDONLY)
        pid = _spawn(compile_cmd, devnull, log, log)
        status = _wait(pid, end)
        os.lseek(log, 0, os.SEEK_SET)
        text = os.read(log, 16000).decode("utf-8", "replace")
        if status is None:
            emit({"e": "compile_error", "msg": "compilation exceeded the time limit"})
            return
        if status != 0:
            emit({"e": "compile_error", "msg": text[-4000:] or f"compiler exited with {status}"})
            return
    emit({"e": "loaded"})
    for i, probe in enumerate(probes):
        if probe["kind"] != "stdio":
            emit({"e": "error", "i": i, "msg": f"{language} programs are tested through stdin/stdout only"})
            continue
        stdin_fd, out_fd = _io_memfds(probe["stdin"])
        pid = _spawn(run_cmd, stdin_fd, out_fd, 2)
        _emit_output(emit, i, _wait(pid, deadline()), stdin_fd, out_fd, output_cap)


def _io_memfds(stdin: str) -> tuple[int, int]:
    """A memfd holding the case's stdin (rewound) and an empty one for its stdout."""
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, stdin.encode())
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    return stdin_fd, os.memfd_create("stdout")


def _emit_output(emit: Any, i: int, status: int | None, stdin_fd: int, out_fd: int, output_cap: int) -> None:
    """Report a stdio case: its stdout (capped) and exit status, or a timeout."""
    os.lseek(out_fd, 0, os.SEEK_SET)
    data = os.read(out_fd, output_cap + 1)
    os.close(out_fd)
    os.close(stdin_fd)
    if status is None:
        emit({"e": "timeout", "i": i})
    else:
        out = data[:output_cap].decode("utf-8", "replace")
        emit({"e": "stdout", "i": i, "out": out, "truncated": len(data) > output_cap, "exit": status})


def _run_stdio_probes(
    compiled: Any, probes: list[dict[str, str]], emit: Any, deadline: Callable[[], float], output_cap: int
) -> None:
    for i, probe in enumerate(probes):
        stdin_fd, out_fd = _io_memfds(probe["stdin"])
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.dup2(stdin_fd, 0)
                os.dup2(out_fd, 1)
                sys.stdin = open(0, closefd=False)  # noqa: SIM115
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                main = types.ModuleType("__main__")  # the program is the main module, as at home
                main.__dict__["__builtins__"] = __builtins__
                sys.modules["__main__"] = main
                exec(compiled, main.__dict__)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException as e:
                code = 1
                with contextlib.suppress(BaseException):
                    sys.stderr.write(_short(e) + "\n")
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        _emit_output(emit, i, _wait(pid, deadline()), stdin_fd, out_fd, output_cap)
