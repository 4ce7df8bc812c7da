"""The warm pool: a fork server with the interpreter and common modules already loaded.

`SandboxPool.start()` launches `python -m rlvr.sandbox.server DIR SLOTS` once. The
server detects what the machine allows, moves into the jail's template, keeps jails
armed, and answers each connection with the raw observations of one run (see
rlvr/sandbox/server.py). A run therefore costs the fork of its PID 1, its mounts and its
tests, not an interpreter start.

Concurrency is bounded on the client side by a semaphore: when all slots are busy, a
caller waits for one (backpressure); nothing is ever dropped.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

from rlvr.sandbox.executor import Limits
from rlvr.sandbox.framing import recv_msg, send_msg


class SandboxError(RuntimeError):
    """The sandbox infrastructure failed (never the submission's fault)."""


SERVER_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
"""What the fork server is started with, beside its own RLVR_SANDBOX_* settings."""


def server_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The fork server's environment: only what it needs to start and its settings.
    Nothing else of the caller's (an API token, a cloud key): a run forks from the server,
    and the environment block the server started with stays in its memory, which a
    submission can read with ctypes whatever `os.environ` says."""
    env = {k: v for k, v in environ.items() if k in SERVER_ENV or k.startswith("RLVR_SANDBOX_")}
    # a fixed hash seed, set before the server's interpreter starts (a fork keeps its
    # parent's): the order of a set of strings, and with it the work a program does, is
    # the same in every run (the hidden tests' budgets of trace events count that work)
    return {**env, "PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0"}


STALE_S = 600.0
"""A pool directory this old whose server no longer listens is left from a process that
died without closing its pool (killed): `sweep_stale` removes it."""


def sweep_stale(base: str | None = None, older_than_s: float = STALE_S) -> list[str]:
    """Remove this user's `rlvr-sandbox-*` directories under `base` (the temporary
    directory) whose server socket refuses connections and that are older than
    `older_than_s` (a pool being started has no socket yet, and is young); the paths
    removed. A live pool's server listens, so it is never touched."""
    base = base or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(base) if n.startswith("rlvr-sandbox-") and n != "rlvr-sandbox-uids"]
    except OSError:
        return removed
    now = time.time()
    for name in names:
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not os.path.isdir(path) or os.path.islink(path) or st.st_uid != os.geteuid():
            continue
        if now - st.st_mtime < older_than_s or _listening(os.path.join(path, "server.sock")):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _listening(sock_path: str) -> bool:
    """Whether a server may still own the socket: only a refused connection (or no
    socket at all) says none does; a busy one (a full backlog, a timeout) counts as live."""
    if not os.path.exists(sock_path):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(sock_path)
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:
            return True
    return True


class SandboxPool:
    """`show`: directories (beside the system and the interpreter) that this pool's jail
    shows read-only, as RLVR_SANDBOX_SHOW does: a repository's tree and environment."""

    def __init__(self, max_concurrency: int = 4, show: tuple[str, ...] = ()) -> None:
        self.max_concurrency = max_concurrency
        self.show = tuple(show)
        self._sem = threading.BoundedSemaphore(max_concurrency)
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None
        self._lock = threading.Lock()
        self.protections: dict[str, bool] = {}

    @property
    def socket_path(self) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, "server.sock")

    def start(self) -> SandboxPool:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self
            if self._dir:  # a server that died: its directory goes before a new one is made
                shutil.rmtree(self._dir, ignore_errors=True)
            sweep_stale()  # what killed processes left behind
            self._dir = tempfile.mkdtemp(prefix="rlvr-sandbox-")
            os.chmod(self._dir, 0o700)
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "rlvr.sandbox.server", self._dir, str(self.max_concurrency)],
                stdout=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=self._environ(),
            )
            assert self._proc.stdout is not None
            line = self._proc.stdout.readline()
            if not line:
                raise SandboxError("the sandbox server did not start")
            self.protections = json.loads(line)
            atexit.register(self.close)
            return self

    def _environ(self) -> dict[str, str]:
        env = server_environ(os.environ)
        if self.show:
            shown = [p for p in env.get("RLVR_SANDBOX_SHOW", "").split(":") if p]
            env["RLVR_SANDBOX_SHOW"] = ":".join([*shown, *self.show])
        return env

    def run(self, code: str, probes: list[dict[str, str]], limits: Limits, language: str = "python") -> dict[str, Any]:
        """Raw observations of one run (see executor.collect). Blocks for a free slot."""
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        with self._sem:
            last = ""
            for attempt in range(3):
                try:
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                        s.settimeout(limits.timeout_s + 30)
                        s.connect(self.socket_path)
                        send_msg(s, {"code": code, "probes": probes, "limits": limits.to_dict(), "language": language})
                        result: dict[str, Any] = recv_msg(s)
                        return result
                except (OSError, ConnectionError, ValueError) as e:
                    # No answer came back, so no verdict was recorded: the run is repeated
                    # (it is isolated; repeating it changes nothing but the time spent).
                    last = f"{type(e).__name__}: {e}"
                    print(f"rlvr sandbox: attempt {attempt + 1} got no answer ({last})", file=sys.stderr)
                    time.sleep(0.2 * (attempt + 1))
                    if self._proc is None or self._proc.poll() is not None:
                        self.start()
            return {"sandbox_error": f"sandbox server: {last}"}

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
                self._proc = None
            if self._dir:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def __enter__(self) -> SandboxPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool(max_concurrency: int = 8) -> SandboxPool:
    """The process-wide pool, started on first use and closed at exit."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SandboxPool(max_concurrency).start()
        return _default
