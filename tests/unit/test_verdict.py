"""rlvr.sandbox.verdict.decide on hand-made run records (the harness's event lines)."""

from __future__ import annotations

import json
import signal

from rlvr.sandbox.spec import parse_suite
from rlvr.sandbox.verdict import decide
from rlvr.types import RunStatus, TestStatus


def test_a_test_fork_killed_at_its_cpu_limit_is_a_timeout_not_an_error() -> None:
    # a busy loop on an idle core reaches RLIMIT_CPU (the run's timeout, rounded up) as
    # the wall deadline comes: the fork dies of SIGXCPU before the harness times it out
    suite = parse_suite({"format": "assert", "tests": ["assert 1 == 1", "assert f(1) == 2"]})
    lines = [{"e": "loaded"}, {"e": "end", "i": 1, "status": -int(signal.SIGXCPU)}]
    raw = {"events": [json.dumps(x) for x in lines], "exit": 0, "timed_out": False}
    r = decide(suite, raw)
    assert r.status is RunStatus.TIMEOUT
    assert (r.tests[1].status, r.tests[1].message) == (TestStatus.TIMEOUT, "CPU time limit exceeded")
    # another signal stays an error naming it
    lines[1]["status"] = -int(signal.SIGSEGV)
    r = decide(suite, {"events": [json.dumps(x) for x in lines], "exit": 0, "timed_out": False})
    assert r.tests[1].status is TestStatus.ERROR and r.tests[1].message == "killed by SIGSEGV"
