"""The process sandbox of the foundation: verdicts, limits, statuses (the sandbox issue adds the jail)."""

import pytest

from rlvr.rewards import completion_reward
from rlvr.sandbox import Limits, execute
from rlvr.types import RunStatus, TestStatus

ADD = "def f(x):\n    return x + 1\n"


def test_per_test_verdicts() -> None:
    r = execute(ADD, ["assert f(1) == 2", "assert f(1) == 3", "assert g(1)"])
    assert r.status is RunStatus.OK
    assert [t.status for t in r.tests] == [TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR]
    assert "NameError" in r.tests[2].message
    assert completion_reward(r) == 1 / 3


def test_all_pass_gives_one() -> None:
    r = execute(ADD, ["assert f(1) == 2", "assert f(-1) == 0"])
    assert completion_reward(r) == 1.0


def test_timeout_is_penalised_and_keeps_earlier_verdicts() -> None:
    code = "def f(x):\n    while True:\n        pass\n"
    r = execute(code, ["assert 1 == 1", "assert f(1) == 2"], Limits(timeout_s=1.0))
    assert r.status is RunStatus.TIMEOUT
    assert [t.status for t in r.tests] == [TestStatus.PASSED, TestStatus.TIMEOUT]
    assert completion_reward(r) == -0.5
    assert completion_reward(r, timeout_penalty=-1.0) == -1.0
    assert r.wall_time_s < 3.0


def test_compile_and_runtime_errors_come_back() -> None:
    r = execute("def f(:\n", ["assert f(1)"])
    assert r.status is RunStatus.COMPILE_ERROR and "SyntaxError" in r.error
    assert completion_reward(r) == 0.0
    r = execute("raise ValueError('boom')", ["assert True"])
    assert r.status is RunStatus.RUNTIME_ERROR and "boom" in r.error
    r = execute("x = input()", ["assert True"])
    assert r.status is RunStatus.RUNTIME_ERROR and "EOFError" in r.error


def test_memory_limit() -> None:
    r = execute("x = 'a' * (2 * 1024 ** 3)", ["assert True"], Limits(memory_mb=256))
    assert r.status is RunStatus.MEMORY


def test_output_is_captured_and_capped() -> None:
    r = execute("print('x' * 100000)", ["assert True"], Limits(output_bytes=1000))
    assert r.stdout.startswith("x" * 1000) and r.stdout.endswith("[truncated]") and len(r.stdout) < 1100
    assert r.status is RunStatus.OUTPUT_LIMIT and r.passed == 1


def test_environment_is_allow_listed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RLVR_SECRET", "hunter2")
    r = execute("import os\nprint(sorted(os.environ))", ["assert True"])
    assert "RLVR_SECRET" not in r.stdout and "PATH" in r.stdout


def test_exit_before_tests_is_not_a_pass() -> None:
    r = execute("import sys\nsys.exit(0)", ["assert True"])
    assert r.passed == 0 and r.status is RunStatus.RUNTIME_ERROR


def test_harness_fork_waits_out_a_transient_process_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed test processes not yet reaped count against the process limit: the harness
    retries the fork briefly instead of failing every remaining test."""
    from rlvr.sandbox import harness

    calls = []

    def flaky_fork() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return 12345

    monkeypatch.setattr(harness.os, "fork", flaky_fork)
    monkeypatch.setattr(harness, "_reap", lambda pids: None)
    assert harness._fork([]) == 12345 and len(calls) == 3

    def never(*_a: object) -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(harness.os, "fork", never)
    assert harness._fork([]) is None


def test_tests_side_by_side_are_isolated_and_all_reported() -> None:
    """Process mode: up to parallel_tests tests run at once, each in its own fork of the
    loaded code: none sees another's changes, every result arrives (their event lines are
    written concurrently), and the run takes about the longest chain, not the sum."""
    code = "import time\nSEEN = []\ndef f(x):\n    SEEN.append(x)\n    time.sleep(0.3)\n    return len(SEEN)\n"
    tests = [f"assert f({i}) == 1" for i in range(4)]
    r = execute(code, tests, Limits(parallel_tests=4, timeout_s=5, test_isolation="process"))
    assert r.passed == 4, r
    assert r.wall_time_s < 0.3 * 4 * 0.75, r.wall_time_s
    r = execute(code, tests[:2], Limits(parallel_tests=1, timeout_s=5, test_isolation="process"))
    assert r.passed == 2 and r.wall_time_s >= 0.6
    many = execute(ADD, [f"assert f({i}) == {i + 1}" for i in range(60)], Limits(parallel_tests=8))
    assert many.passed == 60 and many.status is RunStatus.OK, many


def test_shared_mode_runs_tests_in_one_process_in_turn() -> None:
    """Shared mode (the default): quick tests run one after another in one fork of the
    loaded code, so a test sees what earlier tests of the run left (as in HumanEval's own
    harness); each still gets its own verdict. Process mode: every test sees a fresh copy."""
    code = "SEEN = []\ndef f(x):\n    SEEN.append(x)\n    print(len(SEEN), flush=True)\n    return x\n"
    tests = [f"assert f({i}) == {i}" for i in range(5)]
    r = execute(code, tests, Limits(parallel_tests=1))
    assert r.status is RunStatus.OK and r.passed == 5, r
    assert r.stdout.split() == ["1", "2", "3", "4", "5"], r.stdout
    p = execute(code, tests, Limits(parallel_tests=1, test_isolation="process"))
    assert p.passed == 5 and p.stdout.split() == ["1"] * 5, p.stdout


def test_shared_mode_starts_a_second_process_beside_a_slow_test() -> None:
    """A test still running after SECOND_WORKER_AFTER_S gets a second test process beside
    it (up to parallel_tests), so slow tests overlap as in process mode."""
    code = "import time\ndef f(x):\n    time.sleep(0.4)\n    return x\n"
    tests = [f"assert f({i}) == {i}" for i in range(4)]
    r = execute(code, tests, Limits(parallel_tests=2, timeout_s=5))
    assert r.passed == 4 and r.wall_time_s < 0.4 * 4 * 0.8, r
    one = execute(code, tests[:2], Limits(parallel_tests=1, timeout_s=5))
    assert one.passed == 2 and one.wall_time_s >= 0.8


@pytest.mark.parametrize("isolation", ["shared", "process"])
def test_side_by_side_timeouts_and_crashes_are_per_test(isolation: str) -> None:
    """A test that hangs or ends its process costs that test only: in shared mode the
    remaining tests go on in a fresh fork of the loaded code."""
    code = (
        "import os, time\n"
        "def f(x):\n"
        "    if x == 1:\n        time.sleep(30)\n"
        "    if x == 2:\n        os._exit(3)\n"
        "    return x\n"
    )
    tests = ["assert f(0) == 0", "assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3", "assert f(4) == 4"]
    for parallel in (1, 2):
        r = execute(
            code, tests, Limits(parallel_tests=parallel, timeout_s=4, test_timeout_s=0.5, test_isolation=isolation)
        )
        statuses = [t.status for t in r.tests]
        assert statuses == [
            TestStatus.PASSED,
            TestStatus.TIMEOUT,
            TestStatus.ERROR,
            TestStatus.PASSED,
            TestStatus.PASSED,
        ]
        assert r.wall_time_s < 3.0


def test_shared_mode_recovers_from_a_test_that_breaks_its_process() -> None:
    """Tests that close the result channel, fake a report on the supervisor's pipe or
    kill their own process: the test fails, and the remaining tests still pass in a fresh
    fork (the breakage does not carry over)."""
    code = (
        "import os, signal\n"
        "def f(x):\n"
        "    if x == 'close':\n        os.close(3)\n"
        "    if x == 'report':\n"
        "        for fd in range(4, 64):\n"
        "            try:\n                os.write(fd, b'\\xff\\xff')\n"
        "            except OSError:\n                pass\n"
        "    if x == 'kill':\n        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return x\n"
    )
    names = ["a", "close", "b", "report", "c", "kill", "d"]
    tests = [f"assert f({n!r}) == {n!r}" for n in names]
    for _ in range(3):  # a fresh secret order each time
        r = execute(code, tests, Limits(parallel_tests=1, timeout_s=5))
        by_name = {n: t.status for n, t in zip(names, r.tests, strict=True)}
        assert all(by_name[n] is TestStatus.PASSED for n in "abcd"), r
        assert by_name["kill"] is not TestStatus.PASSED and by_name["close"] is not TestStatus.PASSED, r


def test_test_isolation_is_validated() -> None:
    with pytest.raises(ValueError, match="test_isolation"):
        Limits(test_isolation="thread")


def test_a_cpu_cap_is_validated_and_sent_to_a_remote_sandbox() -> None:
    from rlvr.sandbox.client import _payload
    from rlvr.sandbox.service import LimitsIn

    for bad in (0, -1, 0.001, 2000):
        with pytest.raises(ValueError, match="cpus"):
            Limits(cpus=bad)
    assert _payload("x = 1", ["assert x"], Limits(cpus=0.5))["limits"]["cpus"] == 0.5
    assert LimitsIn(**_payload("x = 1", ["assert x"], Limits(cpus=0.5))["limits"]).cpus == 0.5
    assert Limits().cpus is None


def test_parallel_tests_must_be_positive() -> None:
    with pytest.raises(ValueError, match="parallel_tests"):
        Limits(parallel_tests=0)
    assert Limits(memory_mb=100, parallel_tests=3).run_memory_mb == 300


def test_wait_any_reports_the_first_child_with_news() -> None:
    import contextlib
    import os
    import time

    from rlvr.sandbox.waiting import wait_any

    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    slow = os.fork()
    if slow == 0:
        time.sleep(5)
        os._exit(0)
    fast = os.fork()
    if fast == 0:
        os.write(w2, b"r")
        os._exit(0)
    try:
        far = time.monotonic() + 10
        assert wait_any({slow: (r1, far), fast: (r2, far)}) == (fast, "fd")
        assert wait_any({slow: (r1, time.monotonic() + 0.05)}) == (slow, "timeout")
        os.kill(slow, 9)
        assert wait_any({slow: (r1, far)}) == (slow, "exited")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(slow, 9)
        for pid in (slow, fast):
            os.waitpid(pid, 0)
        for fd in (r1, w1, r2, w2):
            os.close(fd)


def test_code_that_looks_up_its_own_module_loads() -> None:
    """dataclasses, pickle and typing look the submission's module up in sys.modules: it is
    registered (as `solution`, or `__main__` for a program), as it would be at home."""
    code = "from dataclasses import dataclass\nimport pickle\n@dataclass\nclass P:\n    x: int\n"
    func = execute(code + "def f(x):\n    return pickle.loads(pickle.dumps(P(x))).x + 1\n", ["assert f(1) == 2"])
    assert (func.status, func.passed) == (RunStatus.OK, 1), func.error
    prog = execute(
        code + "import sys\nprint(P(int(sys.stdin.read())).x * 2)\n",
        {"format": "stdio", "cases": [{"stdin": "21", "stdout": "42"}]},
    )
    assert (prog.status, prog.passed) == (RunStatus.OK, 1), prog.error


def test_result_events_written_by_the_submission_are_violations_and_fail_the_test() -> None:
    """The harness writes one result per test, after the submission loaded; a submission
    writing its own (it can: it runs in the harness's process) breaks that order."""
    import json

    from rlvr.sandbox.wire import encode

    forged = json.dumps({"e": "value", "i": 0, "v": encode(2)}) + "\n"
    tests = ["assert f(1) == 2", "assert f(2) == 3"]
    early = execute(f"import os\nos.write(3, {forged.encode()!r})\ndef f(x):\n    return x + 1\n", tests)
    assert (
        early.violations[0].startswith("a result for test 'assert f(")
        and "before the submission" in early.violations[0]
    )
    inside = execute(f"import os\ndef f(x):\n    os.write(3, {forged.encode()!r})\n    return 0\n", tests)
    assert len(inside.violations) == 1 and inside.violations[0].startswith("two results for test 'assert f(")
    assert [t.status for t in inside.tests] == [TestStatus.FAILED, TestStatus.FAILED]
    assert any("forged" in t.message for t in inside.tests) and inside.to_dict()["violations"] == inside.violations
    honest = execute("def f(x):\n    return x + 1\n", tests)
    assert honest.violations == [] and honest.passed == 2 and "violations" not in honest.to_dict()


def test_tests_run_in_a_secret_order_so_counting_calls_does_not_tell_which_test_it_is() -> None:
    """A counter in /tmp (shared by a run's test processes) answering by call number: with
    the order fixed it would pass every test; in a random order it passes about 1 in n!."""
    code = (
        "import os\ndef f(x):\n    p = '/tmp/calls'\n    n = int(open(p).read()) if os.path.exists(p) else 0\n"
        "    open(p, 'w').write(str(n + 1))\n    return [10, 20, 30, 40, 50][n]\n"
    )
    tests = [f"assert f({i}) == {v}" for i, v in enumerate([10, 20, 30, 40, 50])]
    runs = [execute(code, tests, Limits(parallel_tests=1)) for _ in range(4)]
    assert all(r.status is RunStatus.OK for r in runs)
    assert sum(r.passed == 5 for r in runs) <= 1  # 1/120 each; honest code passes all 5 every time
    assert [t.name for t in runs[0].tests] == tests  # verdicts back in the suite's order
    honest = execute("def f(x):\n    return [10, 20, 30, 40, 50][x]\n", tests)
    assert honest.passed == 5 and [t.name for t in honest.tests] == tests


def test_observe_returns_each_expressions_value_decided_outside_the_process() -> None:
    """rlvr.sandbox.api.observe (expected values from a trusted reference): a value per
    expression, an error for one that raises, and every expression failed when the code
    does not load."""
    from rlvr.sandbox.api import observe

    got = observe("def f(x):\n    return [x] * 2\n", ["f(3)", "f('a')", "f()", "(1, None)"])
    assert got[0] == (True, [3, 3]) and got[1] == (True, ["a", "a"]) and got[3] == (True, (1, None))
    assert got[2][0] is False and "TypeError" in got[2][1]
    broken = observe("raise ValueError('no')", ["1", "2"])
    assert all(ok is False and "did not load" in why for ok, why in broken)


def test_stdio_cases_fork_with_the_programs_imports_loaded_and_each_starts_fresh() -> None:
    # the module the program imports is loaded once before the cases fork (pandas would
    # take a quarter of a second per case); what the program does to it stays in its case
    code = (
        "import sys\nimport json\n"
        "json.seen = getattr(json, 'seen', 0) + 1\n"
        "print(int(sys.stdin.read()) * 2, json.seen)\n"
    )
    cases = [{"stdin": f"{i}\n", "stdout": f"{2 * i} 1\n"} for i in range(12)]
    result = execute(code, {"format": "stdio", "cases": cases})
    assert result.status is RunStatus.OK and result.passed == 12, result
    # a program whose import fails still runs and reports it in its own cases
    bad = execute("import no_such_module_here\nprint(1)\n", {"format": "stdio", "cases": cases[:2]})
    assert bad.passed == 0 and "no_such_module_here" in bad.stderr + bad.error


def test_a_set_of_strings_iterates_in_one_order_in_every_fresh_sandbox() -> None:
    """The fork server starts with PYTHONHASHSEED=0 (a fork keeps its parent's hash seed):
    the work a program does over a set of strings, which the hidden tests' budget of
    trace events counts, is the same on every machine and after every restart."""
    import subprocess
    import sys

    from rlvr.sandbox.api import observe
    from rlvr.sandbox.pool import SandboxPool

    code = "WORDS = {'apple', 'banana', 'cherry', 'date', 'elder', 'fig', 'grape'}\n"
    orders = []
    for _ in range(2):
        with SandboxPool(1) as fresh:
            ((ok, value),) = observe(code, ["list(WORDS)"], pool=fresh)
            assert ok
            orders.append(value)
    here = subprocess.run(
        [sys.executable, "-c", code + "print(list(WORDS))"], env={"PYTHONHASHSEED": "0"}, capture_output=True, text=True
    ).stdout.strip()
    assert orders[0] == orders[1] and str(orders[0]) == here


def test_a_pool_whose_server_died_starts_another_and_removes_the_dead_ones_directory() -> None:
    """A killed fork server is started again at the next run; its directory (socket,
    template) goes with it instead of staying in the temporary directory."""
    import os

    from rlvr.sandbox.executor import Limits as RunLimits
    from rlvr.sandbox.pool import SandboxPool

    with SandboxPool(max_concurrency=1) as pool:
        first = pool._dir
        assert first and os.path.isdir(first) and pool._proc is not None
        pool._proc.kill()
        pool._proc.wait()
        got = pool.run("print(1)", [], RunLimits())
        assert "sandbox_error" not in got, got
        assert pool._dir != first and not os.path.exists(first) and os.path.isdir(pool._dir or "")
    assert pool._dir is None


def test_surrogates_keep_their_pairing_and_a_message_holding_one_is_writable() -> None:
    """A value holding a UTF-16 surrogate pair comes back as that pair (the wire carries
    strings exactly: JSON alone joins the pair into the character it encodes, which
    failed the honest reply and let one that joins pairs compare equal to a reference's
    value read back the same way), and an exception message carrying a lone surrogate
    comes back as text the trace store can write."""
    tests = ["assert f('a\\ud83d\\ude00') == 'a\\ud83d\\ude00a\\ud83d\\ude00'"]
    honest = execute("def f(s):\n    return s * 2\n", {"format": "assert", "tests": tests})
    joins = "def f(s):\n    return s.encode('utf-16', 'surrogatepass').decode('utf-16') * 2\n"
    hack = execute(joins, {"format": "assert", "tests": tests})
    assert honest.passed == 1 and hack.passed == 0
    lone = {"format": "assert", "tests": ["assert f('\\ud83d') == 1"]}
    raises = execute("def f(s):\n    raise ValueError(s)\n", lone)
    message = raises.tests[0].message
    assert raises.passed == 0 and "\\ud83d" in message and message.encode("utf-8")
