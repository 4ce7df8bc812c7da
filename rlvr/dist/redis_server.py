"""A local redis-server as a child process, for `queue.backend: redis` without `queue.url`.

It listens on a free localhost port, keeps its append-only file in the directory it is
given (the run directory's `queue/`), and stops when the `LocalRedis` is closed (or the
parent exits: it is started in its own process group and killed with it by `close`).

Durability: with `appendonly yes` every write is in the append-only file before Redis
replies, so an entry `put` returned for survives a kill -9 of redis-server; `fsync`
decides what survives a crash of the machine: `always` (every write fsynced, slower) or
`everysec` (Redis's default: at most the last second lost).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from rlvr.dist.queue import QueueError

INSTALL_HINT = (
    "apt-get install redis-server (make test installs it when running as root), or point queue.url at a running Redis"
)


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

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> str:
        """Starts redis-server (again, on the same port and files, after `stop` or a kill)
        and waits until it answers PING with its data loaded; returns its URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
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
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
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
