"""Waiting on a child process, optionally together with a pipe it writes to.

Used by the supervisor (is the run done?) and by the harness inside the jail (has this
test reported?). A pidfd makes the wake-up immediate; without one (old kernels) it polls
every millisecond. Nothing here reaps the child: the caller decides whether to wait for
its exit status or to kill it and move on.
"""

from __future__ import annotations

import os
import select
import time


def wait_for(pid: int, deadline: float, fd: int | None = None) -> str:
    """'fd' when `fd` is readable (data or end of file), 'exited' when the child has
    ended, 'timeout' when time.monotonic() passes `deadline`."""
    try:
        pfd = os.pidfd_open(pid)
    except OSError:
        pfd = -1
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            watch = ([fd] if fd is not None else []) + ([pfd] if pfd >= 0 else [])
            ready, _, _ = select.select(watch, [], [], left if pfd >= 0 else min(left, 0.001))
            if fd is not None and fd in ready:
                return "fd"
            if pfd >= 0 and pfd in ready:
                return "exited"
            if pfd < 0 and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return "exited"
    finally:
        if pfd >= 0:
            os.close(pfd)
