"""rlvr.sandbox.pool.sweep_stale: what a killed process's pool left in the temporary
directory is removed; a live pool's (its server listens), a young one's (starting) and
another user's are not."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from rlvr.sandbox.pool import sweep_stale


def _pool_dir(base: Path, name: str, *, age_s: float, listen: bool) -> tuple[Path, socket.socket]:
    d = base / f"rlvr-sandbox-{name}"
    (d / "root").mkdir(parents=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(d / "server.sock"))
    if listen:
        s.listen(1)
    old = os.stat(d).st_mtime - age_s
    os.utime(d, (old, old))
    return d, s


def test_dead_old_pool_directories_go_and_live_or_young_ones_stay(tmp_path: Path) -> None:
    dead, s1 = _pool_dir(tmp_path, "dead", age_s=3600, listen=False)  # bound, nobody listening: refused
    live, s2 = _pool_dir(tmp_path, "live", age_s=3600, listen=True)
    young, s3 = _pool_dir(tmp_path, "young", age_s=0, listen=False)
    empty = tmp_path / "rlvr-sandbox-nosock"
    empty.mkdir()
    os.utime(empty, (1.0, 1.0))
    other = tmp_path / "unrelated-dir"
    other.mkdir()
    try:
        removed = sweep_stale(str(tmp_path))
    finally:
        for s in (s1, s2, s3):
            s.close()
    assert sorted(removed) == sorted([str(dead), str(empty)])
    assert not dead.exists() and not empty.exists() and live.is_dir() and young.is_dir() and other.is_dir()
    assert sweep_stale(str(tmp_path / "missing")) == []
