"""Security tests run hostile programs, only inside the sandbox, and the whole test
process (with the sandbox server it starts) runs under a cgroup cap of its own, so that a
sandbox bug cannot take the machine down."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlvr.sandbox import SandboxPool

CAP_MEMORY = 3 * 2**30
CAP_PIDS = 512


def _own(controller: str) -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
    return "/"


@pytest.fixture(scope="session", autouse=True)
def capped_cgroup() -> Iterator[None]:
    made: list[Path] = []
    with contextlib.suppress(OSError):
        if os.geteuid() == 0:
            v2 = Path("/sys/fs/cgroup/cgroup.controllers").is_file()
            if v2:
                base = Path("/sys/fs/cgroup") / _own_v2().lstrip("/")
                cap = base / f"rlvr-security-{os.getpid()}"
                cap.mkdir()
                made.append(cap)
                (cap / "memory.max").write_text(str(CAP_MEMORY))
                (cap / "pids.max").write_text(str(CAP_PIDS))
                (cap / "cgroup.procs").write_text(str(os.getpid()))
            else:
                for ctrl, limits in (
                    ("memory", {"memory.limit_in_bytes": CAP_MEMORY}),
                    ("pids", {"pids.max": CAP_PIDS}),
                ):
                    cap = Path("/sys/fs/cgroup") / ctrl / _own(ctrl).lstrip("/") / f"rlvr-security-{os.getpid()}"
                    cap.mkdir()
                    made.append(cap)
                    for k, v in limits.items():
                        (cap / k).write_text(str(v))
                    (cap / "cgroup.procs").write_text(str(os.getpid()))
    yield
    for cap in made:  # move back out, then remove the (now empty) cap
        with contextlib.suppress(OSError):
            (cap.parent / "cgroup.procs").write_text(str(os.getpid()))
            cap.rmdir()


def _own_v2() -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:]
    return "/"


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(2) as p:
        yield p
