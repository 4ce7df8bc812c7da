"""`rlvr sandbox bench`'s structural floor (rlvr/sandbox/floors.py, `structural_floor`):
one run's structure timed step by step in a process holding what the fork server holds,
each step done with the jail's own functions and first checked inside the child (PID 1,
its own hostname, /tmp, /sandbox and /proc, its user id, seccomp mode 2, ...), so a step
that silently did nothing is a row without a figure, and this test fails."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rlvr.sandbox import SandboxPool
from rlvr.sandbox.floors import STRUCTURE_STEPS, print_structure, structural_floor

# the protection (as `rlvr sandbox check` names it) under which the jail does each step
NEEDS = {
    "pidns": "pid, mount, ipc, uts namespaces",
    "cgroup": "cgroup v",
    "ns": "pid, mount, ipc, uts namespaces",
    "mounts": "read-only system, private /sandbox and /tmp, minimal /dev, private /proc",
    "user": "unprivileged user of its own",
    "seccomp": "seccomp filter",
}


def _active(protections: dict[str, bool], name: str) -> bool:
    return any(v for k, v in protections.items() if k.startswith(name))


def test_every_step_the_jail_does_here_is_checked_and_timed_and_the_structure_is_the_last() -> None:
    with SandboxPool(1) as pool:
        protections = pool.protections
    floor = structural_floor(3)
    steps = floor["steps"]
    assert [s["key"] for s in steps] == list(STRUCTURE_STEPS)
    assert [s["step"] for s in steps] == list(STRUCTURE_STEPS.values())
    for s in steps:
        done_here = s["key"] not in NEEDS or _active(protections, NEEDS[s["key"]])
        if done_here:  # measured: its checks inside the child held
            assert "unavailable" not in s, s
            assert s["cpu_ms"] > 0 and s["median_ms"] > 0, s
        else:
            assert "cpu_ms" not in s and s["unavailable"], s
    assert floor["without"] == [s["key"] for s in steps if "unavailable" in s]
    measured = [s for s in steps if "cpu_ms" in s]
    assert floor["cpu_ms"] == measured[-1]["cpu_ms"]
    assert steps[0]["key"] == "fork" and "cpu_ms" in steps[0]  # possible anywhere
    assert floor["cpu_ms"] >= steps[0]["cpu_ms"]  # the structure forks twice


def test_a_step_not_possible_here_is_one_line_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    floor: dict[str, Any] = {
        "n": 3,
        "steps": [
            {"key": "fork", "step": STRUCTURE_STEPS["fork"], "cpu_ms": 1.5, "median_ms": 1.4},
            {"key": "pidns", "step": STRUCTURE_STEPS["pidns"], "unavailable": "no namespaces here"},
            {"key": "test", "step": STRUCTURE_STEPS["test"], "cpu_ms": 3.0, "median_ms": 2.9},
        ],
        "cpu_ms": 3.0,
        "without": ["pidns"],
    }
    print_structure(floor)
    lines = capsys.readouterr().out.splitlines()
    assert any(line.strip().startswith("fork + exit") and line.endswith("1.50 ms") for line in lines)
    (pidns,) = [line for line in lines if STRUCTURE_STEPS["pidns"] in line]
    assert pidns.endswith("not measured: no namespaces here") and not re.search(r"\d ms", pidns)  # never a figure
    (last,) = [line for line in lines if STRUCTURE_STEPS["test"] in line]
    assert "= the structure" in last and last.endswith("3.00 ms")
