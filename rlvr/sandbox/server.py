"""The fork server behind `SandboxPool` (run as `python -m rlvr.sandbox.server DIR SPARES`).

It loads the interpreter's common modules once, detects what the machine allows, then
moves itself into the jail's template: the empty network namespace and a private mount
namespace whose root is the sandbox's read-only file system. From there it is the single
supervisor of every run: it keeps `spares` jails armed ahead of time (PID 1 of a fresh
PID namespace each, forked straight from the server, waiting for a submission), accepts
connections, hands each request to an armed jail, enforces its wall-clock limit,
answers, and tears the run down, all from one event loop. So a run's latency is handing
over the code and running it, and its CPU is the fork of PID 1, its mounts and its tests.

The server imports only the sandbox's own run-time modules: every module it holds is
memory that each fork of a run has to copy.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rlvr.sandbox.executor import (
    Armed,
    Environment,
    Limits,
    allow_listed_environ,
    arm,
    arming_failure,
    collect,
    fire,
    outcome_of,
    reap,
    release,
)

MAX_REQUEST = 64 << 20


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


@dataclass
class _Client:
    """A connection whose request is still arriving (length-prefixed JSON)."""

    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)
    need: int | None = None


@dataclass
class _Run:
    armed: Armed
    sock: socket.socket


class Supervisor:
    def __init__(self, env: Environment, listener: socket.socket, spares: int, owner: int) -> None:
        self.env = env
        self.listener = listener
        self.spares_wanted = max(1, spares)
        self.owner = owner
        self.sel = selectors.DefaultSelector()
        self.spares: list[Armed] = []
        self.runs: dict[int, _Run] = {}  # PID 1 -> run
        self.dying: list[Armed] = []  # answered, waiting to be reaped
        self.arm_error: str | None = None
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, ("accept", None))

    # -- arming ------------------------------------------------------------------------

    def _arm(self) -> Armed | None:
        try:
            armed = arm(self.env)
        except Exception as e:
            self.arm_error = f"could not build the run's jail: {type(e).__name__}: {e}"
            return None
        self.arm_error = None
        return armed

    def _top_up(self) -> None:
        while len(self.spares) < self.spares_wanted:
            armed = self._arm()
            if armed is None:
                return
            self.spares.append(armed)

    def _take_spare(self) -> Armed | str:
        """An armed jail for a request, or why none could be built. A spare that died
        before use is replaced; if it died setting itself up, its reason is the answer."""
        while self.spares:
            armed = self.spares.pop(0)
            if not reap(armed):
                return armed
            failure = arming_failure(armed)
            self._bury(armed)
            if failure:
                return failure
        fresh = self._arm()
        return fresh if fresh is not None else (self.arm_error or "could not build the run's jail")

    # -- requests ----------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            sock.setblocking(False)
            self.sel.register(sock, selectors.EVENT_READ, ("read", _Client(sock)))

    def _read(self, client: _Client) -> None:
        # what is still missing once the length is known (up to 1 MiB a call); before, as
        # much as a small request takes (a larger buffer would be mapped afresh each time)
        want = 1 << 16 if client.need is None else min(client.need - len(client.buf), 1 << 20)
        try:
            chunk = client.sock.recv(max(want, 1 << 12))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(client.sock, registered=True)
            return
        client.buf += chunk
        if client.need is None and len(client.buf) >= 4:
            (client.need,) = struct.unpack("!I", client.buf[:4])
            del client.buf[:4]
            if client.need > MAX_REQUEST:
                self.sel.unregister(client.sock)
                self._answer(client.sock, {"sandbox_error": f"request of {client.need} bytes is over the limit"})
                return
        if client.need is not None and len(client.buf) >= client.need:
            self.sel.unregister(client.sock)
            try:
                req = json.loads(bytes(client.buf[: client.need]))
                limits = Limits(**req["limits"])
                code, probes, language = req["code"], req["probes"], req.get("language", "python")
            except (ValueError, KeyError, TypeError) as e:
                self._answer(client.sock, {"sandbox_error": f"malformed request: {type(e).__name__}: {e}"})
                return
            self._start(client.sock, code, probes, limits, language)

    def _start(
        self, sock: socket.socket, code: str, probes: list[dict[str, str]], limits: Limits, language: str
    ) -> None:
        armed = self._take_spare()
        if isinstance(armed, str):
            self._answer(sock, {"sandbox_error": armed})
            return
        try:
            fire(armed, code, probes, limits, language)
        except OSError as e:
            self._answer(sock, {"sandbox_error": f"could not start the run: {e}"})
            self._bury(armed)
            return
        self.runs[armed.pid] = _Run(armed, sock)
        self.sel.register(armed.done_r, selectors.EVENT_READ, ("done", armed))
        self.sel.register(armed.pidfd, selectors.EVENT_READ, ("exit", armed))

    def _finish(self, armed: Armed, outcome: str) -> None:
        run = self.runs.pop(armed.pid)
        for fd in (armed.done_r, armed.pidfd):
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(fd)
        try:
            result: dict[str, Any] = collect(armed, outcome)
        except Exception as e:  # answer with the reason, whatever it was
            result = {"sandbox_error": f"{type(e).__name__}: {e}"}
        self._answer(run.sock, result)
        self._bury(armed)

    def _answer(self, sock: socket.socket, result: dict[str, Any]) -> None:
        data = json.dumps(result).encode()
        with contextlib.suppress(OSError):
            sock.setblocking(True)
            sock.settimeout(30)
            sock.sendall(struct.pack("!I", len(data)) + data)
        self._drop(sock)

    def _drop(self, sock: socket.socket, registered: bool = False) -> None:
        if registered:
            self.sel.unregister(sock)
        sock.close()

    def _bury(self, armed: Armed) -> None:
        """Release the run now, or once PID 1 is reaped (its pidfd says when)."""
        if not release(self.env, armed):
            self.dying.append(armed)
            self.sel.register(armed.pidfd, selectors.EVENT_READ, ("reap", armed))

    # -- the loop ----------------------------------------------------------------------

    def serve_forever(self) -> None:
        self._top_up()
        last_owner_check = time.monotonic()
        while True:
            now = time.monotonic()
            timeout = 1.0
            if self.runs:
                timeout = min(timeout, max(0.0, min(r.armed.deadline for r in self.runs.values()) - now))
            for key, _ in self.sel.select(timeout):
                kind, obj = key.data
                if kind == "accept":
                    self._accept()
                elif kind == "read":
                    self._read(obj)
                elif kind in ("done", "exit"):
                    if obj.pid in self.runs:
                        outcome = outcome_of(obj, kind == "done", kind == "exit", time.monotonic())
                        if outcome is not None:
                            self._finish(obj, outcome)
                elif kind == "reap" and reap(obj):
                    self.sel.unregister(key.fd)
                    self.dying.remove(obj)
                    release(self.env, obj)
            now = time.monotonic()
            for run in [r for r in self.runs.values() if r.armed.deadline <= now]:
                self._finish(run.armed, "timeout")
            self._top_up()
            if now - last_owner_check >= 1.0:
                last_owner_check = now
                if os.getppid() != self.owner:
                    self.stop()

    def stop(self, *_: object) -> None:
        for armed in [*self.spares, *(r.armed for r in self.runs.values()), *self.dying]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(armed.pid, signal.SIGKILL)
        for armed in [*self.spares, *(r.armed for r in self.runs.values()), *self.dying]:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(armed.pid, 0)
        self.env.cgroups.cleanup()
        os._exit(0)


def serve(workdir: str, spares: int) -> None:
    # The pool's owner is our parent; if it dies we are re-parented and shut down (checked
    # every second). Not a parent-death signal: that fires when the *thread* that started
    # us ends, and pools are often started from worker threads.
    owner = os.getppid()
    _preload()
    env = Environment.detect(workdir)
    # The settings are read: from here on the server (and so every run's PID 1, a fork of
    # it) holds only the allow-listed environment.
    allow_listed_environ()
    sock_path = os.path.join(workdir, "server.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    os.chmod(sock_path, 0o600)
    listener.listen(1024)
    env.enter_template()
    supervisor = Supervisor(env, listener, spares, owner)
    signal.signal(signal.SIGTERM, supervisor.stop)
    # Everything loaded so far stays put: the collector in each fork of a run then has no
    # reason to touch (and so copy) the server's objects.
    gc.freeze()
    print(json.dumps(env.protections()), flush=True)
    supervisor.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
