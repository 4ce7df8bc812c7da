"""SandboxFusion's `/run_code` answer, made from one rlvr run of a program with stdin.

The response has SandboxFusion's shape, so that its clients (verl's reward function, its
own SDK) read it unchanged: `status` "Success" | "Failed" | "SandboxError", `message`,
`compile_result` and `run_result` (each `status` "Finished" | "TimeLimitExceeded" |
"Error", `execution_time`, `return_code`, `stdout`, `stderr`), `executor_pod_name`, `files`.
Like SandboxFusion, "Success" means every step finished with return code 0; "Failed" means
a step timed out or returned non-zero (the program's fault); "SandboxError" means the
sandbox itself failed (never the program's fault: retry or report it).

How rlvr's observations map (C and C++ have a compile step; Python and JavaScript do not,
so they never have a `compile_result`, as in SandboxFusion):

| what happened                          | status       | compile_result           | run_result                     |
|----------------------------------------|--------------|--------------------------|--------------------------------|
| ran and exited with 0                  | Success      | Finished, 0 (C, C++)     | Finished, 0                    |
| C/C++ compiler error                   | Failed       | Finished, 1, compiler log| None                           |
| C/C++ compilation over the time limit  | Failed       | TimeLimitExceeded        | None                           |
| Python syntax error                    | Failed       | None                     | Finished, 1, the error         |
| exited non-zero (exception, exit(n))   | Failed       | as above                 | Finished, its code             |
| killed by a signal                     | Failed       | as above                 | Finished, -signal (e.g. -11)   |
| memory limit (MemoryError, bad_alloc,  | Failed       | as above                 | Finished, its code (1, -6, -9) |
|   killed by the cgroup)                |              |                          |                                |
| ended without reporting (jail killed)  | Failed       | as above                 | Finished, the jail's code, -9  |
| output (stdout or stderr) over the cap | Failed       | as above                 | Finished, -25 (SIGXFSZ) unless |
|                                        |              |                          |   non-zero already; stdout cut |
| wall-clock or CPU time limit           | Failed       | as above                 | TimeLimitExceeded, None        |
| sandbox infrastructure failure         | SandboxError | None                     | None; `message` says why       |

A Python syntax error is reported as `python file.py` reports it in SandboxFusion (a run
that exits with 1), although rlvr finds it before running. SandboxFusion has no output
limit; a run over rlvr's cap is reported as if killed by SIGXFSZ (what the file-size limit
does past 16 MiB), so that clients count it as a failed run, not as an answer to compare.

Limits: `execution_time` of the run is the whole run's wall time (compilation included);
the compiler's own time is not measured (None) nor its exit status recorded (a failed
compilation reports 1, what gcc and g++ return); a timed-out run's partial stdout is not
kept (""); `message` is "" on success and a short reason otherwise (SandboxFusion leaves
it empty on "Failed"; clients do not read it then).
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from rlvr.types import ExecutionResult, RunStatus

# SandboxFusion language name -> rlvr language (rlvr's own names are accepted too)
LANGUAGES = {
    "python": "python",
    "cpp": "cpp",
    "c": "c",
    "nodejs": "javascript",
    "javascript": "javascript",
    "js": "javascript",
}
COMPILED = {"c", "cpp"}
# what rlvr.sandbox.harness reports when the compiler outlives the run's deadline
_COMPILE_TIMEOUT = "compilation exceeded the time limit"
_OUTPUT_LIMIT_CODE = -int(signal.SIGXFSZ)


class CommandRunResult(BaseModel):
    """One step (compile or run) as SandboxFusion reports it."""

    status: Literal["Finished", "TimeLimitExceeded", "Error"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    """SandboxFusion's /run_code response."""

    status: Literal["Success", "Failed", "SandboxError"]
    message: str = ""
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class _Seen:
    """What the run's events say about the program's one run (probe 0)."""

    loaded: bool = False  # compiled (or nothing to compile) and started
    ran: bool = False  # it ended and its exit status is known
    timed_out: bool = False
    stdout: str = ""
    exit: int | None = None
    truncated: bool = False


def _seen(raw: dict[str, Any]) -> _Seen:
    """The first event for probe 0 decides, as in rlvr.sandbox.verdict."""
    loaded = False
    for line in raw.get("events", []):
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(ev, dict):
            continue
        kind = ev.get("e")
        if kind == "loaded":
            loaded = True
        elif ev.get("i") == 0 and kind == "timeout":
            return _Seen(loaded=True, timed_out=True)
        elif ev.get("i") == 0 and kind == "stdout":
            code = ev.get("exit", 0)
            return _Seen(
                loaded=True,
                ran=True,
                stdout=str(ev.get("out", "")),
                exit=code if isinstance(code, int) else None,
                truncated=bool(ev.get("truncated")),
            )
        elif ev.get("i") == 0 and kind == "end":
            code = ev.get("status")
            return _Seen(loaded=True, ran=True, exit=code if isinstance(code, int) else None)
    return _Seen(loaded=loaded)


def _reason(result: ExecutionResult) -> str:
    return result.error or next((t.message for t in result.tests if t.message), "") or result.status.value


def _compile_failure(raw: dict[str, Any], result: ExecutionResult, language: str) -> RunCodeResponse:
    """The program did not get past compiling (C, C++) or parsing (Python)."""
    if language not in COMPILED:  # a Python syntax error: as a run of the interpreter that exits with 1
        run = CommandRunResult(
            status="Finished", execution_time=result.wall_time_s, return_code=1, stdout="", stderr=result.error + "\n"
        )
        return RunCodeResponse(status="Failed", message="the program could not be parsed", run_result=run)
    if result.error == _COMPILE_TIMEOUT or raw.get("timed_out"):  # the harness's deadline, or the supervisor's
        step = CommandRunResult(status="TimeLimitExceeded", stdout="", stderr=result.error)
        return RunCodeResponse(status="Failed", message=_COMPILE_TIMEOUT, compile_result=step)
    log = result.error or result.stderr or "the compiler did not finish"
    step = CommandRunResult(status="Finished", return_code=1, stdout="", stderr=log)
    return RunCodeResponse(status="Failed", message="compilation failed", compile_result=step)


def _lost_exit(raw: dict[str, Any]) -> int:
    """The return code of a run that ended without reporting one (its jail was killed, e.g.
    by the cgroup's OOM killer): the jail's own non-zero status, else -9 (SIGKILL).
    SandboxFusion's clients need a code on every finished run."""
    code = raw.get("exit")
    return code if isinstance(code, int) and code != 0 else -int(signal.SIGKILL)


def _run_result(raw: dict[str, Any], result: ExecutionResult, seen: _Seen) -> CommandRunResult:
    stderr = result.stderr
    took = result.wall_time_s
    cpu_killed = seen.exit == -int(signal.SIGXCPU)
    if seen.timed_out or cpu_killed or (not seen.ran and (result.status is RunStatus.TIMEOUT or raw.get("timed_out"))):
        return CommandRunResult(status="TimeLimitExceeded", execution_time=took, stdout="", stderr=stderr)
    code = seen.exit if seen.ran and seen.exit is not None else _lost_exit(raw)
    if code == 0 and (seen.truncated or result.status is RunStatus.OUTPUT_LIMIT):
        code = _OUTPUT_LIMIT_CODE
    return CommandRunResult(status="Finished", execution_time=took, return_code=code, stdout=seen.stdout, stderr=stderr)


def fusion_response(raw: dict[str, Any], result: ExecutionResult, language: str) -> RunCodeResponse:
    """The /run_code answer for one run: `raw` is the pool's observations, `result` the
    verdict decided from them (a one-case stdio suite that only checks completion),
    `language` rlvr's name for it."""
    if result.status is RunStatus.SANDBOX_ERROR:
        return RunCodeResponse(status="SandboxError", message=result.error or "the sandbox failed")
    seen = _seen(raw)
    compiled = language in COMPILED
    if result.status is RunStatus.COMPILE_ERROR or (compiled and not seen.loaded):
        return _compile_failure(raw, result, language)
    step = CommandRunResult(status="Finished", return_code=0, stdout="", stderr="") if compiled else None
    run = _run_result(raw, result, seen)
    ok = run.status == "Finished" and run.return_code == 0 and result.status is RunStatus.OK
    return RunCodeResponse(
        status="Success" if ok else "Failed",
        message="" if ok else _reason(result),
        compile_result=step,
        run_result=run,
    )
