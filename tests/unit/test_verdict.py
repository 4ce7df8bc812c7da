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


def test_event_text_with_lone_surrogates_comes_back_writable_and_values_keep_them_exactly() -> None:
    """An exception message may carry a lone surrogate (an input that holds one, or a
    submission's own): it comes back as its escape, so that the trace store can write it.
    The observed value travels on the wire, which keeps surrogates, paired or not,
    exactly (JSON alone would join a pair into one character, and a reply that joins
    them would compare equal)."""
    import pytest

    from rlvr.sandbox.verdict import events
    from rlvr.sandbox.wire import WireError, decode, encode

    lines = [
        json.dumps({"e": "error", "i": 0, "msg": "ValueError: x\ud83d"}),
        json.dumps({"e": "value", "i": 1, "v": 5}),
    ]
    error, value = events({"events": lines})
    assert error["msg"] == "ValueError: x\\ud83d" and error["msg"].encode("utf-8")
    assert value["v"] == 5
    for v in ["a\ud83d\ude00b", ["\ud83d", {"\ude00": ("\udfff",)}], "plain é"]:
        back = decode(json.loads(json.dumps(encode(v))))
        assert back == v and type(back) is type(v)
    assert decode(json.loads(json.dumps(encode("\ud83d\ude00")))) != "\U0001f600"
    with pytest.raises(WireError):
        decode(["str_sp", "zz"])
