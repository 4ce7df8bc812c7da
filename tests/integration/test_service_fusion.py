"""`/run_code` read by a SandboxFusion client: real Python, C++ and JavaScript runs through a
real server, each answer classified the way verl's SandboxFusion reward client classifies
it (top-level status first, then the compile step, then the run), and the fields a
SandboxFusion client reads checked for every kind of outcome."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import httpx
import pytest

from rlvr.sandbox import Limits, SandboxPool
from rlvr.sandbox.fusion import fusion_response
from rlvr.sandbox.service import create_app
from rlvr.sandbox.spec import Check, Probe, Suite
from rlvr.sandbox.verdict import decide
from tests.integration.test_service import running


def classify(resp: dict[str, Any], expected_stdout: str | None) -> str:
    """One /run_code answer as verl's reward client labels it: success, wrong_answer,
    compile_error, compile_timeout, runtime_error, timeout, sandbox_error, or an
    unknown_* label for an answer it cannot place (verl scores those like sandbox errors)."""
    status = resp.get("status")
    compiled, run = resp.get("compile_result"), resp.get("run_result")
    if status == "SandboxError":
        return "sandbox_error"
    if status == "Success":
        if not run or run.get("status") != "Finished":
            return "unknown_success_state"
        stdout = run.get("stdout") or ""
        right = expected_stdout is None or stdout.rstrip("\n") == expected_stdout.rstrip("\n")
        return "success" if right else "wrong_answer"
    if status != "Failed":
        return f"unknown_status_{status}"
    if compiled:
        step = compiled.get("status")
        if step == "TimeLimitExceeded":
            return "compile_timeout"
        if step == "Error" or (step == "Finished" and compiled.get("return_code") != 0):
            return "compile_error"
    if run:
        step = run.get("status")
        if step == "TimeLimitExceeded":
            return "timeout"
        if step == "Error" or (step == "Finished" and run.get("return_code") != 0):
            return "runtime_error"
        return "unknown_failure"
    return "unknown_failure_state"


def verl_payload(code: str, language: str, stdin: str | None, timeout: int, memory_mb: int = 1024) -> dict[str, Any]:
    """The request body verl sends (no auth header, null stdin allowed, empty files)."""
    return {
        "compile_timeout": timeout,
        "run_timeout": timeout,
        "code": code,
        "stdin": stdin,
        "memory_limit_MB": memory_mb,
        "language": language,
        "files": {},
        "fetch_files": [],
    }


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """Without a token, as verl calls a SandboxFusion server."""
    with SandboxPool(2) as pool, running(create_app(pool)) as url:
        yield url


def run_code(server: str, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(server + "/run_code", json=body, timeout=120)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"} <= set(data)
    return data


READ_DOUBLE = {
    "python": "print(int(input()) * 2)\n",
    "cpp": "#include <iostream>\nint main() { long n; std::cin >> n; std::cout << 2 * n << std::endl; }\n",
    "nodejs": "const n = parseInt(require('fs').readFileSync(0, 'utf8'));\nconsole.log(2 * n);\n",
}
# g++ caps one constant evaluation at 2**25 operations and fails fast past it (a single long
# loop compiled in 1 s on a faster machine: "compile_error"), so the slowness is spread over
# 64 evaluations of about half the cap each: about 0.8 s apiece here, a minute in all
CONSTEXPR_SPIN = (
    "template <int K> constexpr int spin() {\n"
    "  int s = K;\n"
    "  for (int i = 0; i < 1000; ++i)\n"
    "    for (int j = 0; j < 1000; ++j) s = (s + ((i ^ j) & 1)) & 1023;\n"
    "  return s;\n"
    "}\n" + "".join(f'static_assert(spin<{k}>() >= 0, "slow");\n' for k in range(64)) + "int main() { return 0; }\n"
)
SEGV = "int main() { int *volatile p = nullptr; return *p; }\n"  # volatile: the compiler cannot see the null
# 16 GiB against a 1 GiB limit: new throws std::bad_alloc, uncaught, so the program aborts
# (its address is printed, so the compiler cannot drop the allocation)
BAD_ALLOC = (
    "#include <cstdio>\n#include <vector>\n"
    'int main() { std::vector<char> v(1UL << 34); std::printf("%p", (void*)v.data()); }\n'
)

# (case, language, code, stdin, expected stdout, timeout s, the client's label, the run's return code)
CASES: list[tuple[str, str, str, str | None, str | None, int, str, int | None]] = [
    ("py-ok", "python", READ_DOUBLE["python"], "21\n", "42", 10, "success", 0),
    ("py-wrong", "python", "print(int(input()) + 1)\n", "21\n", "42", 10, "wrong_answer", 0),
    ("py-syntax", "python", "def f(:\n    pass\n", "", "", 10, "runtime_error", 1),
    ("py-raise", "python", "raise ValueError('boom')\n", None, "", 10, "runtime_error", 1),
    ("py-exit", "python", "import sys\nsys.exit(3)\n", None, "", 10, "runtime_error", 3),
    (
        "py-signal",
        "python",
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        None,
        "",
        10,
        "runtime_error",
        -11,
    ),
    ("py-memory", "python", "x = bytearray(1 << 34)\n", None, "", 10, "runtime_error", 1),
    ("py-output", "python", "import sys\nsys.stdout.write('x' * (2 << 20))\n", None, None, 10, "runtime_error", -25),
    ("py-timeout", "python", "while True:\n    pass\n", None, "", 1, "timeout", None),
    ("cpp-ok", "cpp", READ_DOUBLE["cpp"], "21\n", "42", 10, "success", 0),
    ("cpp-wrong", "cpp", '#include <cstdio>\nint main() { std::puts("41"); }\n', "21\n", "42", 10, "wrong_answer", 0),
    ("cpp-compile", "cpp", "int main( { return 0 }\n", "", "", 10, "compile_error", None),
    ("cpp-compile-slow", "cpp", CONSTEXPR_SPIN, "", "", 1, "compile_timeout", None),
    ("cpp-segv", "cpp", SEGV, "", "", 10, "runtime_error", -11),
    ("cpp-memory", "cpp", BAD_ALLOC, "", "", 10, "runtime_error", -6),
    ("cpp-timeout", "cpp", "int main() { volatile long x = 0; for (;;) ++x; }\n", "", "", 1, "timeout", None),
    ("js-ok", "nodejs", READ_DOUBLE["nodejs"], "21\n", "42", 10, "success", 0),
    ("js-syntax", "nodejs", "function (\n", "", "", 10, "runtime_error", 1),
    ("js-throw", "nodejs", "throw new Error('boom');\n", "", "", 10, "runtime_error", 1),
    ("js-killed", "nodejs", "process.kill(process.pid, 'SIGKILL');\n", "", "", 10, "runtime_error", -9),
    ("js-timeout", "nodejs", "for (;;) {}\n", "", "", 1, "timeout", None),
]


@pytest.mark.parametrize(
    ("language", "code", "stdin", "expected", "timeout", "label", "return_code"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_every_outcome_is_classified_as_verl_expects(
    server: str,
    language: str,
    code: str,
    stdin: str | None,
    expected: str | None,
    timeout: int,
    label: str,
    return_code: int | None,
) -> None:
    resp = run_code(server, verl_payload(code, language, stdin, timeout))
    assert classify(resp, expected) == label, resp
    assert (resp["compile_result"] is not None) is (language == "cpp"), resp  # as in SandboxFusion
    run = resp["run_result"]
    if label in ("compile_error", "compile_timeout"):
        assert run is None and resp["status"] == "Failed"
        return
    assert run["return_code"] == return_code, run
    assert resp["status"] == ("Success" if return_code == 0 else "Failed")
    assert run["status"] == ("TimeLimitExceeded" if label == "timeout" else "Finished")
    assert isinstance(run["execution_time"], float) and run["execution_time"] >= 0


def test_compile_error_comes_back_in_compile_result(server: str) -> None:
    resp = run_code(server, verl_payload("int main( { return 0 }\n", "cpp", None, 10))
    assert resp["status"] == "Failed" and resp["run_result"] is None
    step = resp["compile_result"]
    assert step["status"] == "Finished" and step["return_code"] != 0
    assert "error" in step["stderr"] and "main.cpp" in step["stderr"]


def test_runtime_details_reach_the_client(server: str) -> None:
    resp = run_code(server, verl_payload("import sys\nprint('partial')\nraise KeyError('k')\n", "python", None, 10))
    run = resp["run_result"]
    assert run["stdout"] == "partial\n" and "KeyError" in run["stderr"] and resp["message"]
    resp = run_code(server, verl_payload("import sys\nsys.stdout.write('x' * (2 << 20))\n", "python", None, 10))
    assert len(resp["run_result"]["stdout"]) == 1 << 20 and "output limit" in resp["message"]
    resp = run_code(server, verl_payload("def f(:\n", "python", None, 10))
    assert "SyntaxError" in resp["run_result"]["stderr"]


class _BrokenPool:
    """Stands in for a pool whose fork server cannot be reached (what SandboxPool.run
    returns after its retries)."""

    protections: ClassVar[dict[str, bool]] = {}

    def run(self, code: str, probes: list[dict[str, str]], limits: Limits, language: str = "python") -> dict[str, Any]:
        return {"sandbox_error": "sandbox server: ConnectionRefusedError: [Errno 111] Connection refused"}


def test_sandbox_failure_is_a_sandbox_error() -> None:
    with running(create_app(_BrokenPool())) as url:  # type: ignore[arg-type]
        resp = run_code(url, verl_payload(READ_DOUBLE["python"], "python", "1\n", 10))
    assert classify(resp, "2") == "sandbox_error"
    assert resp["run_result"] is None and "Connection refused" in resp["message"]


def test_runs_that_ended_without_a_report_still_map_cleanly() -> None:
    """Observations a live run rarely produces, fed to the mapping directly: every finished
    step still carries a return code (SandboxFusion's own client refuses one without)."""
    suite = Suite("stdio", [Probe("run", "stdio")], [Check("completes")])

    def answer(raw: dict[str, Any], language: str) -> dict[str, Any]:
        return fusion_response(raw, decide(suite, raw), language).model_dump()

    # the supervisor's deadline passed while the compiler was still running: no event at all
    resp = answer({"events": [], "timed_out": True, "exit": -9, "wall_time_s": 2.0}, "cpp")
    assert classify(resp, None) == "compile_timeout" and resp["run_result"] is None
    # the jail was killed by the OOM killer before the program's result was written
    for language in ("cpp", "python"):
        resp = answer({"events": ['{"e": "loaded"}', "not json", "[1]"], "oom": True, "exit": -9}, language)
        assert classify(resp, None) == "runtime_error" and resp["run_result"]["return_code"] == -9, resp
        assert resp["message"] == "memory limit exceeded"
    # a run killed for CPU time is a time limit, as SandboxFusion's wall clock would see it
    resp = answer({"events": ['{"e": "stdout", "i": 0, "out": "", "exit": -24}']}, "python")
    assert classify(resp, None) == "timeout" and resp["run_result"]["return_code"] is None
