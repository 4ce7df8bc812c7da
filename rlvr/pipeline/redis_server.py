"""A local redis-server as a child process, for `queue.backend: redis` without `queue.url`.

It listens on a free localhost port, keeps its append-only file in the directory it is
given (the run directory's `queue/`), and stops when the `LocalRedis` is closed, when the
interpreter exits, or when the process that started it dies, even by kill -9 (Linux's
parent-death signal: SIGTERM, on which Redis writes out its file and exits; start it from
the main thread, since the signal follows the thread that started it). A directory that
a live redis-server still serves (its `redis.pid`) is refused, so two servers never
write one append-only file.

Durability: with `appendonly yes` a write reaches the append-only file before Redis
replies, so an entry `put` returned for survives a kill -9 of redis-server, with one
exception under `fsync: everysec`: while a background fsync is slow, Redis may hold
writes back for up to 2 s and reply meanwhile. `fsync: always` has no such window and
also covers a crash of the machine; `everysec` can lose up to the last second or two there.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from rlvr.pipeline.redis_queue import QueueError

INSTALL_HINT = (
    "apt-get install redis-server (make test installs it when running as root), or point queue.url at a running Redis"
)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError):  # not glibc Linux: close() and atexit still stop it
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def _alive_redis(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"redis-server" in cmdline


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRedis:
    def __init__(self, data_dir: Path, port: int | None = None, fsync: str = "everysec") -> None:
        if fsync not in ("always", "everysec"):
            raise QueueError(f"queue.fsync must be 'always' or 'everysec', not {fsync!r}")
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            raise QueueError(
                f"queue.backend redis without queue.url starts redis-server, which is not found: {INSTALL_HINT}"
            )
        self.data_dir, self.fsync = Path(data_dir), fsync
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        atexit.register(self.stop)  # once per server, however often it is restarted

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> str:
        """Starts redis-server (again, on the same port and files, after `stop` or a kill)
        and waits until it answers PING with its data loaded; returns its URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        pid_file = self.data_dir / "redis.pid"
        if pid_file.is_file():
            old = int(pid_file.read_text().split()[0] or 0)
            if _alive_redis(old) and (self.proc is None or old != self.proc.pid):
                raise QueueError(
                    f"redis-server (pid {old}) still serves {self.data_dir}: stop it first (kill {old}); two "
                    "servers on one append-only file would corrupt it"
                )
        args = [
            str(self.binary),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.fsync,
            "--save", "",  # no RDB snapshots: the append-only file is the record
            "--daemonize", "no",
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent
        )
        pid_file.write_text(f"{self.proc.pid}\n")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise QueueError(
                    f"redis-server exited at start (code {self.proc.returncode}); its log: "
                    f"{self.data_dir / 'redis.log'} (port {self.port} taken? data directory writable?)"
                )
            if self._ping():
                return self.url
            time.sleep(0.05)
        self.kill()
        raise QueueError(f"redis-server did not answer on port {self.port} within {timeout_s:.0f} s")

    def alive(self) -> bool:
        """Started by this object and not exited (a kill of the server shows here at once)."""
        return self.proc is not None and self.proc.poll() is None

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(64)
            return reply.startswith(b"+PONG")  # -LOADING while it replays the append-only file
        except OSError:
            return False

    def stop(self, timeout_s: float = 10.0) -> None:
        """A clean stop (SIGTERM: Redis flushes and fsyncs the append-only file)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """kill -9 (fault tests): nothing flushed beyond what every write already did."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> LocalRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
