"""User ids for sandbox runs: no two runs alive at once on this machine share one.

Each fork server holds a block of `BLOCK_SIZE` ids for its lifetime, claimed with an
exclusive lock on a file named after the block (the kernel drops the lock when the
server dies, so a crashed server's block is free again). Within its block the server
hands ids out round robin and takes one back only once its run is over (PID 1 reaped: the
kernel has then ended every process of the run's PID namespace). Since RLIMIT_NPROC
counts the processes of a user id, a run's process limit is its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile

BASE = 100_000
BLOCK_SIZE = 1024
BLOCKS = 512  # ids BASE .. BASE + 524,288


def lock_dir() -> str:
    """Where the block locks live: shared by every server on the machine (RLVR_SANDBOX_UID_LOCKS
    overrides it)."""
    override = os.environ.get("RLVR_SANDBOX_UID_LOCKS")
    if override:
        return override
    run = "/run"
    base = run if os.path.isdir(run) and os.access(run, os.W_OK) else tempfile.gettempdir()
    return os.path.join(base, "rlvr-sandbox-uids")


class UidError(RuntimeError):
    pass


class UidBlock:
    def __init__(self, directory: str | None = None, start: int | None = None) -> None:
        self.directory = directory or lock_dir()
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        first = (os.getpid() if start is None else start) % BLOCKS
        self.index, self._lock_fd = self._claim(first)
        self.first = BASE + self.index * BLOCK_SIZE
        self._next = 0
        self._in_use: set[int] = set()

    def _claim(self, first: int) -> tuple[int, int]:
        for k in range(BLOCKS):
            index = (first + k) % BLOCKS
            fd = os.open(os.path.join(self.directory, f"{index}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return index, fd
        raise UidError(f"every block of sandbox user ids is held (locks in {self.directory})")

    def take(self) -> int:
        """A user id no live run of this machine has."""
        for _ in range(BLOCK_SIZE):
            uid = self.first + self._next
            self._next = (self._next + 1) % BLOCK_SIZE
            if uid not in self._in_use:
                self._in_use.add(uid)
                return uid
        raise UidError(f"all {BLOCK_SIZE} user ids of this server's block are in use")

    def give_back(self, uid: int) -> None:
        self._in_use.discard(uid)

    @property
    def in_use(self) -> int:
        return len(self._in_use)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)
