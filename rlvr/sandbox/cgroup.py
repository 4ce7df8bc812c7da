"""One control group per execution: memory and process-count limits, CPU and peak-memory
accounting, and killing the whole process tree, on cgroup v2 or v1.

Groups are created under the cgroup this process already lives in (so outer limits, such
as a test suite's own cap, still apply) and removed after each run. When no writable
cgroup hierarchy exists, `CgroupFactory.available` is False and runs go without.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str | None) -> str:
    """This process's cgroup path for a v1 controller, or the v2 path (controller None)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, ctrls, path = line.split(":", 2)
        if controller is None and hid == "0":
            return path
        if controller is not None and controller in ctrls.split(","):
            return path
    return "/"


def _writable(p: Path) -> bool:
    return p.is_dir() and os.access(p, os.W_OK)


@dataclass
class Cgroup:
    dirs: dict[str, Path]  # controller (or "v2") -> directory
    version: int

    def set_limits(self, memory_mb: int, max_pids: int) -> None:
        mem = str(memory_mb * 2**20)
        if self.version == 2:
            (self.dirs["v2"] / "memory.max").write_text(mem)
            (self.dirs["v2"] / "pids.max").write_text(str(max_pids))
        else:
            with contextlib.suppress(OSError):  # lowering memsw below memory fails; order matters
                (self.dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(mem)
            (self.dirs["memory"] / "memory.limit_in_bytes").write_text(mem)
            with contextlib.suppress(OSError):
                (self.dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(mem)
            (self.dirs["pids"] / "pids.max").write_text(str(max_pids))

    def add(self, pid: int) -> None:
        for d in self.dirs.values():
            (d / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        out: set[int] = set()
        for d in self.dirs.values():
            with contextlib.suppress(OSError):
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return sorted(out)

    def kill_all(self, timeout: float = 2.0) -> bool:
        """SIGKILL every process in the group until it is empty; True when empty."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs["v2"] / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)

    def _read(self, controller: str, name: str) -> str | None:
        d = self.dirs.get(controller) or self.dirs.get("v2")
        if not d:
            return None
        try:
            fd = os.open(f"{d}/{name}", os.O_RDONLY)
        except OSError:
            return None
        try:
            return os.read(fd, 1 << 16).decode()
        except OSError:
            return None
        finally:
            os.close(fd)

    def stats(self) -> dict[str, float]:
        """peak_memory_mb, cpu_time_s, oom (1.0 when the memory limit was hit), pids_limited."""
        out: dict[str, float] = {}
        if self.version == 1:
            peak = self._read("memory", "memory.max_usage_in_bytes")
            fail = self._read("memory", "memory.failcnt")
            cpu = self._read("cpuacct", "cpuacct.usage")
            pids_ev = self._read("pids", "pids.events")
            if peak:
                out["peak_memory_mb"] = int(peak) / 2**20
            if fail:
                out["oom"] = 1.0 if int(fail) > 0 else 0.0
            if cpu:
                out["cpu_time_s"] = int(cpu) / 1e9
        else:
            peak = self._read("v2", "memory.peak")
            events = self._read("v2", "memory.events") or ""
            cpu_stat = self._read("v2", "cpu.stat") or ""
            pids_ev = self._read("v2", "pids.events")
            if peak:
                out["peak_memory_mb"] = int(peak) / 2**20
            ev = dict(line.split() for line in events.splitlines() if line.strip())
            out["oom"] = 1.0 if int(ev.get("oom", 0)) + int(ev.get("oom_kill", 0)) > 0 else 0.0
            cs = dict(line.split() for line in cpu_stat.splitlines() if line.strip())
            if "usage_usec" in cs:
                out["cpu_time_s"] = int(cs["usage_usec"]) / 1e6
        if pids_ev:
            out["pids_limited"] = 1.0 if any(int(x.split()[1]) > 0 for x in pids_ev.splitlines() if x.strip()) else 0.0
        return out

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.002)


@dataclass
class CgroupFactory:
    """Makes per-execution groups under a parent group created once for this process."""

    version: int = 0
    parents: dict[str, Path] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.version in (1, 2)

    @classmethod
    def detect(cls, name: str = "rlvr-sandbox") -> CgroupFactory:
        tag = f"{name}-{os.getpid()}"
        v2_root = ROOT / _own_path(None).lstrip("/")
        if (ROOT / "cgroup.controllers").is_file() and _writable(v2_root):
            parent = v2_root / tag
            with contextlib.suppress(OSError):
                parent.mkdir(exist_ok=True)
                ctrls = (v2_root / "cgroup.subtree_control").read_text()
                wanted = {"memory", "pids", "cpu"} - set(ctrls.split())
                if wanted:
                    (v2_root / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
                (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
                return cls(2, {"v2": parent})
        parents: dict[str, Path] = {}
        for ctrl in ("memory", "pids", "cpuacct"):
            base = ROOT / ctrl / _own_path(ctrl).lstrip("/")
            if not _writable(base):
                return cls(0, {})
            p = base / tag
            try:
                p.mkdir(exist_ok=True)
            except OSError:
                return cls(0, {})
            parents[ctrl] = p
        return cls(1, parents)

    def create(self, memory_mb: int, max_pids: int) -> Cgroup | None:
        if not self.available:
            return None
        name = os.urandom(6).hex()
        dirs = {k: p / name for k, p in self.parents.items()}
        for d in dirs.values():
            d.mkdir()
        cg = Cgroup(dirs, self.version)
        mem = str(memory_mb * 2**20)
        if self.version == 2:
            (dirs["v2"] / "memory.max").write_text(mem)
            with contextlib.suppress(OSError):
                (dirs["v2"] / "memory.swap.max").write_text("0")
            (dirs["v2"] / "pids.max").write_text(str(max_pids))
        else:
            (dirs["memory"] / "memory.limit_in_bytes").write_text(mem)
            with contextlib.suppress(OSError):
                (dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(mem)
            (dirs["pids"] / "pids.max").write_text(str(max_pids))
        return cg

    def cleanup(self) -> None:
        for p in self.parents.values():
            with contextlib.suppress(OSError):
                for child in p.iterdir():
                    if child.is_dir():
                        Cgroup({"x": child}, self.version).remove()
                p.rmdir()
