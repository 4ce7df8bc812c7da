"""The fork server behind `SandboxPool` (run as `python -m rlvr.sandbox.server DIR`).

It loads the interpreter's common modules once and detects what the machine allows.
It keeps `spares` handlers forked ahead of time, each holding an armed jail (namespaces,
file system, unprivileged PID 1 under seccomp, cgroup) that waits for a submission; an
incoming connection is passed to a ready handler (SCM_RIGHTS), and a replacement is
armed in the background. So a run's latency is handing over the code and running it,
not building the jail. When none is ready, a handler is armed for the connection.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from collections import deque

from rlvr.sandbox import jail
from rlvr.sandbox.executor import Armed, Environment, Limits, arm, fire, release
from rlvr.sandbox.pool import _recv, _send


def _preload() -> None:
    """Modules a submission commonly imports, loaded once so that each fork has them."""
    import collections  # noqa: F401
    import functools  # noqa: F401
    import heapq  # noqa: F401
    import itertools  # noqa: F401
    import math  # noqa: F401
    import random  # noqa: F401
    import re  # noqa: F401
    import string  # noqa: F401
    import typing  # noqa: F401


class _Spare:
    """A forked handler holding an armed jail, waiting for a client connection."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock


def _handler(env: Environment, channel: socket.socket, conn: socket.socket | None) -> None:
    """A disposable handler: arm a jail, get a connection (directly, or later from the
    server over `channel`), run the request, answer, clean up. Never returns."""
    jail.set_pdeathsig(signal.SIGKILL)
    armed: Armed | None = None
    try:
        try:
            armed = arm(env, disposable=True)
        except Exception as e:  # answer the connection with the reason, whatever it was
            armed = None
            arm_error = f"could not build the run's jail: {type(e).__name__}: {e}"
        if conn is None:
            _, fds, _, _ = socket.recv_fds(channel, 16, 1)
            if not fds:
                os._exit(0)  # the server let this spare go
            conn = socket.socket(fileno=fds[0])
        channel.close()
        req = _recv(conn)
        if armed is None:
            result: dict[str, object] = {"sandbox_error": arm_error}
        else:
            limits = Limits(**req["limits"])
            result = fire(armed, req["code"], req["probes"], limits, req.get("language", "python"))
        with contextlib.suppress(OSError):
            _send(conn, result)
            conn.close()
    except BaseException as e:
        if conn is not None:
            with contextlib.suppress(OSError):
                _send(conn, {"sandbox_error": f"{type(e).__name__}: {e}"})
    finally:
        if armed is not None:
            release(armed)
        os._exit(0)


def serve(workdir: str, spares: int) -> None:
    # The pool's owner is our parent; if it dies we are re-parented and shut down (checked
    # every second in the accept loop). Not a parent-death signal: that fires when the
    # *thread* that started us ends, and pools are often started from worker threads.
    owner = os.getppid()
    _preload()
    env = Environment.detect(workdir)
    sock_path = os.path.join(workdir, "server.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    os.chmod(sock_path, 0o600)
    server.listen(1024)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    ready: deque[_Spare] = deque()

    def spawn(conn: socket.socket | None) -> _Spare | None:
        parent_end, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            server.close()
            parent_end.close()
            for sp in ready:
                sp.sock.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _handler(env, child_end, conn)
        child_end.close()
        if conn is not None:
            parent_end.close()
            return None
        return _Spare(pid, parent_end)

    def stop(*_: object) -> None:
        for sp in ready:
            with contextlib.suppress(ProcessLookupError):
                os.kill(sp.pid, signal.SIGKILL)
        env.cgroups.cleanup()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    for _ in range(spares):
        sp = spawn(None)
        if sp is not None:
            ready.append(sp)
    print(json.dumps(env.protections()), flush=True)
    server.settimeout(1.0)
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            if os.getppid() != owner:
                stop()
            continue
        conn.setblocking(True)
        dispatched = False
        while ready and not dispatched:
            sp = ready.popleft()
            try:
                socket.send_fds(sp.sock, [b"r"], [conn.fileno()])
                dispatched = True
            except OSError:
                pass  # that spare died; try the next
            finally:
                sp.sock.close()
        if not dispatched:
            spawn(conn)  # no armed jail ready: arm one for this connection
        conn.close()
        while len(ready) < spares:
            sp = spawn(None)
            if sp is not None:
                ready.append(sp)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
