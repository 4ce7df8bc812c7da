"""Waiting on a child process, optionally together with a pipe it writes to.

Used by the supervisor (is the run done?) and by the harness inside the jail (has this
test reported?). A pidfd makes the wake-up immediate; without one (old kernels) it polls
every millisecond. Nothing here reaps the child: the caller decides whether to wait for
its exit status or to kill it and move on.
"""

from __future__ import annotations

import contextlib
import os
import select
import time


def wait_for(pid: int, deadline: float, fd: int | None = None) -> str:
    """'fd' when `fd` is readable (data or end of file), 'exited' when the child has
    ended, 'timeout' when time.monotonic() passes `deadline`."""
    return wait_any({pid: (fd, deadline)})[1]


def wait_any(children: dict[int, tuple[int | None, float]]) -> tuple[int, str]:
    """Several children at once, each `pid -> (fd or None, deadline)`: the first to have
    news, as (pid, 'fd' | 'exited' | 'timeout') with the meanings of `wait_for`."""
    pfds: dict[int, int] = {}
    try:
        for pid in children:
            with contextlib.suppress(OSError):  # no pidfds (old kernels): exits are polled
                pfds[pid] = os.pidfd_open(pid)
        while True:
            now = time.monotonic()
            for pid, (_, deadline) in children.items():
                if deadline <= now:
                    return pid, "timeout"
            by_fd = {fd: (pid, "fd") for pid, (fd, _) in children.items() if fd is not None}
            by_fd.update({pfd: (pid, "exited") for pid, pfd in pfds.items()})
            left = min(dl for _, dl in children.values()) - now
            poll_exits = len(pfds) < len(children)
            ready, _, _ = select.select(list(by_fd), [], [], min(left, 0.001) if poll_exits else left)
            for fd in sorted(ready, key=lambda f: by_fd[f][1] != "fd"):  # a report before an exit
                return by_fd[fd]
            if poll_exits:
                for pid in children:
                    if pid not in pfds and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                        return pid, "exited"
    finally:
        for pfd in pfds.values():
            os.close(pfd)
