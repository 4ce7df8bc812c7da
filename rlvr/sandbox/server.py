"""The fork server behind `SandboxPool` (run as `python -m rlvr.sandbox.server DIR`).

It loads the interpreter's common modules once, detects what the machine allows, then
accepts one UNIX-socket connection per run and forks a disposable handler for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

from rlvr.sandbox.executor import Limits
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


def serve(workdir: str) -> None:
    from rlvr.sandbox.executor import Environment, run_isolated

    _preload()
    env = Environment.detect(workdir)
    sock_path = os.path.join(workdir, "server.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    os.chmod(sock_path, 0o600)
    server.listen(256)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel

    def stop(*_: object) -> None:
        env.cgroups.cleanup()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(json.dumps(env.protections()), flush=True)
    while True:
        conn, _ = server.accept()
        pid = os.fork()
        if pid == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                req = _recv(conn)
                limits = Limits(**req["limits"])
                result = run_isolated(
                    env, req["code"], req["probes"], limits, disposable=True, language=req.get("language", "python")
                )
            except BaseException as e:
                result = {"sandbox_error": f"{type(e).__name__}: {e}"}
            with contextlib.suppress(OSError):
                _send(conn, result)
            os._exit(0)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
