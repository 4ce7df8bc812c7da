"""The fork server behind `SandboxPool` (run as `python -m rlvr.sandbox.server DIR`).

It loads the interpreter's common modules once and detects what the machine allows.
It keeps `spares` handlers forked ahead of time, each holding an armed jail (namespaces,
file system, unprivileged PID 1 under seccomp, cgroup); an armed handler accepts the next
client connection itself on the shared listening socket (the kernel hands each
connection to one waiting handler), tells the server it is taken, and the server arms a
replacement in the background. So a run's latency is handing over the code and running
it, not building the jail nor a hop through the server. When every handler is busy,
connections wait in the listen backlog for the next one to be armed.

The server imports only the sandbox's own run-time modules: every module it holds is
memory that each fork of a run (one per test) has to copy.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys

from rlvr.sandbox import jail
from rlvr.sandbox.executor import Armed, Environment, Limits, arm, fire, release
from rlvr.sandbox.framing import recv_msg, send_msg


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


def _handler(env: Environment, listener: socket.socket, channel: socket.socket) -> None:
    """A disposable handler: arm a jail, accept one connection, tell the server (over
    `channel`) that it is taken, run the request, answer, clean up. Never returns."""
    jail.set_pdeathsig(signal.SIGKILL)
    armed: Armed | None = None
    conn: socket.socket | None = None
    try:
        try:
            armed = arm(env, disposable=True)
        except Exception as e:  # answer the connection with the reason, whatever it was
            armed = None
            arm_error = f"could not build the run's jail: {type(e).__name__}: {e}"
        conn, _ = listener.accept()
        listener.close()
        with contextlib.suppress(OSError):
            channel.send(b"t")
        channel.close()
        req = recv_msg(conn)
        if armed is None:
            result: dict[str, object] = {"sandbox_error": arm_error}
        else:
            limits = Limits(**req["limits"])
            result = fire(armed, req["code"], req["probes"], limits, req.get("language", "python"))
        with contextlib.suppress(OSError):
            send_msg(conn, result)
            conn.close()
    except BaseException as e:
        if conn is not None:
            with contextlib.suppress(OSError):
                send_msg(conn, {"sandbox_error": f"{type(e).__name__}: {e}"})
    finally:
        if armed is not None:
            release(armed)
        os._exit(0)


def serve(workdir: str, spares: int) -> None:
    # The pool's owner is our parent; if it dies we are re-parented and shut down (checked
    # every second). Not a parent-death signal: that fires when the *thread* that started
    # us ends, and pools are often started from worker threads.
    owner = os.getppid()
    _preload()
    env = Environment.detect(workdir)
    sock_path = os.path.join(workdir, "server.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    os.chmod(sock_path, 0o600)
    listener.listen(1024)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    waiting: dict[socket.socket, int] = {}  # channel of each spare not yet taken -> its pid

    def spawn() -> None:
        parent_end, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            parent_end.close()
            for ch in waiting:
                ch.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _handler(env, listener, child_end)
        child_end.close()
        waiting[parent_end] = pid

    def stop(*_: object) -> None:
        for pid in waiting.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        env.cgroups.cleanup()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    for _ in range(spares):
        spawn()
    print(json.dumps(env.protections()), flush=True)
    while True:
        taken, _, _ = select.select(list(waiting), [], [], 1.0)
        if not taken and os.getppid() != owner:
            stop()
        for ch in taken:  # a byte: it took a connection; end of file: it died
            del waiting[ch]
            ch.close()
        while len(waiting) < spares:
            spawn()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
