"""Runs inside the child process: define the submission, then run each test.

Protocol: argv[1] is a file descriptor opened by the supervisor; the request arrives on
stdin as JSON {"code": str, "tests": [str, ...]}; one JSON line per event is written to
the descriptor: {"event": "compiled"}, {"event": "test", "index": i, "status": ...}.
The supervisor treats a test with no line as not passed. This file must not import rlvr.
"""

import json
import os
import sys
import time
import traceback


def main() -> None:
    out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    req = json.loads(sys.stdin.read())
    sys.stdin.close()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the submission sees an empty stdin for its whole life

    def emit(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    namespace: dict = {"__name__": "__main__"}
    try:
        code = compile(req["code"], "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        emit({"event": "compile_error", "message": f"{type(e).__name__}: {e}"})
        return
    try:
        exec(code, namespace)
    except MemoryError:
        emit({"event": "memory"})
        return
    except BaseException as e:
        emit({"event": "runtime_error", "message": _short_tb(e)})
        return
    emit({"event": "compiled"})
    for i, test in enumerate(req["tests"]):
        t0 = time.perf_counter()
        try:
            exec(compile(test, f"test_{i}", "exec"), namespace)
            status, message = "PASSED", ""
        except AssertionError as e:
            status, message = "FAILED", f"AssertionError: {e}" if str(e) else "AssertionError"
        except MemoryError:
            status, message = "ERROR", "MemoryError"
        except BaseException as e:
            status, message = "ERROR", _short_tb(e)
        emit(
            {"event": "test", "index": i, "status": status, "message": message, "duration_s": time.perf_counter() - t0}
        )


def _short_tb(e: BaseException) -> str:
    lines = traceback.format_exception_only(type(e), e)
    return "".join(lines).strip()[-2000:]


if __name__ == "__main__":
    main()
