"""Control groups for runs: memory, process-count and CPU-bandwidth limits, CPU and
peak-memory accounting, and killing a whole process tree, on cgroup v2 or v1.

Groups live under a parent group made once for the fork server, under the cgroup the
server already lives in (so outer limits, such as a test suite's own cap, still apply).
A group is reused run after run (one per pool slot) when the kernel lets its counters be
reset, which saves creating and removing one per run: before a run it must be empty (no
process), its limits are written afresh, its peak-memory counter is reset, and CPU time,
out-of-memory and process-limit events are counted from a baseline taken then. A group
that cannot be verified empty is removed, never reused; where peaks cannot be reset
(cgroup v2 before Linux 6.12), each run gets a fresh group.

Everything is done through directory descriptors opened at start, so it keeps working
after the server has moved into the jail's file system, where /sys is not visible.
`RLVR_SANDBOX_NO_CGROUPS=1` makes the machine look as if it had no writable cgroups (as
some containers do), to test the fallback on rlimits alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field

ROOT = "/sys/fs/cgroup"
V1_CONTROLLERS = ("memory", "pids", "cpuacct")
V1_OPTIONAL = ("cpu",)  # CPU bandwidth: a run's `cpus` cap, enforced where the controller is
CPU_PERIOD_US = 100_000


def _own_path(controller: str | None) -> str:
    """This process's cgroup path for a v1 controller, or the v2 path (controller None)."""
    with open("/proc/self/cgroup") as f:
        for line in f.read().splitlines():
            hid, ctrls, path = line.split(":", 2)
            if controller is None and hid == "0":
                return path
            if controller is not None and controller in ctrls.split(","):
                return path
    return "/"


def _writable(p: str) -> bool:
    return os.path.isdir(p) and os.access(p, os.W_OK)


def _write(dir_fd: int, name: str, value: str) -> None:
    fd = os.open(name, os.O_WRONLY, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str) -> str | None:
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return os.read(fd, 1 << 16).decode()
    except OSError:
        return None
    finally:
        os.close(fd)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd)
        return True
    except OSError:
        return False


def _keyed(text: str | None) -> dict[str, int]:
    """'key value' lines (memory.events, cpu.stat, pids.events) as a dict."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


@dataclass
class Cgroup:
    """One group (a directory per v1 controller, or one v2 directory)."""

    name: str
    fds: dict[str, int]  # controller (or "v2") -> directory descriptor
    parent_fds: dict[str, int]
    version: int
    reusable: bool = False
    _peak_fd: int | None = None  # v2: memory.peak, reset per descriptor
    _base: dict[str, int] = field(default_factory=dict)
    _limits: tuple[int, int, float | None] | None = None  # the limits last written

    @property
    def cpu_capped(self) -> bool:
        """Whether a `cpus` limit is enforced in this group (its CPU controller is there)."""
        return "cpu" in self.fds if self.version == 1 else _exists(self.fds["v2"], "cpu.max")

    def set_limits(self, memory_mb: int, max_pids: int, cpus: float | None = None) -> None:
        """Write the limits, unless they are the ones this group already has (only the
        server writes them: nothing inside a run can reach the group's files). `cpus`:
        the cores all the group's processes together may use (a CFS bandwidth quota per
        100 ms period), None for no cap."""
        if self._limits == (memory_mb, max_pids, cpus):
            return
        self._limits = None  # unknown until every write has succeeded
        mem = str(memory_mb * 2**20)
        quota = str(max(1000, round(cpus * CPU_PERIOD_US))) if cpus is not None else None
        if self.version == 2:
            d = self.fds["v2"]
            _write(d, "memory.max", mem)
            with contextlib.suppress(OSError):
                _write(d, "memory.swap.max", "0")
            _write(d, "pids.max", str(max_pids))
            if self.cpu_capped:
                _write(d, "cpu.max", f"{quota or 'max'} {CPU_PERIOD_US}")
        else:
            d = self.fds["memory"]
            with contextlib.suppress(OSError):  # lowering memsw below memory fails; order matters
                _write(d, "memory.memsw.limit_in_bytes", mem)
            _write(d, "memory.limit_in_bytes", mem)
            with contextlib.suppress(OSError):
                _write(d, "memory.memsw.limit_in_bytes", mem)
            _write(self.fds["pids"], "pids.max", str(max_pids))
            if "cpu" in self.fds:
                _write(self.fds["cpu"], "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(self.fds["cpu"], "cpu.cfs_quota_us", quota or "-1")
        self._limits = (memory_mb, max_pids, cpus)

    def uncap_cpu(self) -> None:
        """Lift the CPU cap (to tear a run down quickly); the next `set_limits` writes it again."""
        if self._limits is None or self._limits[2] is None or not self.cpu_capped:
            return
        self._limits = None
        if self.version == 2:
            _write(self.fds["v2"], "cpu.max", f"max {CPU_PERIOD_US}")
        else:
            _write(self.fds["cpu"], "cpu.cfs_quota_us", "-1")

    def begin(self, memory_mb: int, max_pids: int, cpus: float | None = None) -> None:
        """Ready the group for a run: its limits written afresh, its counters reset or
        their baseline taken. The group must be empty (see `is_empty`)."""
        self.set_limits(memory_mb, max_pids, cpus)
        if self.version == 1:
            _write(self.fds["memory"], "memory.max_usage_in_bytes", "0")
            _write(self.fds["memory"], "memory.failcnt", "0")
            _write(self.fds["cpuacct"], "cpuacct.usage", "0")
            self._base = {"pids_max": _keyed(_read(self.fds["pids"], "pids.events")).get("max", 0)}
        else:
            d = self.fds["v2"]
            if self._peak_fd is not None:
                os.pwrite(self._peak_fd, b"reset", 0)
            events = _keyed(_read(d, "memory.events"))
            self._base = {
                "oom": events.get("oom", 0) + events.get("oom_kill", 0),
                "usage_usec": _keyed(_read(d, "cpu.stat")).get("usage_usec", 0),
                "pids_max": _keyed(_read(d, "pids.events")).get("max", 0),
            }

    def add(self, pid: int) -> None:
        """Move a process into the group (pid 0: the calling process, which is how a
        run's PID 1 moves itself, so that the kernel's wait for the move is spent by the
        run, not by the server's event loop)."""
        for d in self.fds.values():
            _write(d, "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        out: set[int] = set()
        for d in self.fds.values():
            text = _read(d, "cgroup.procs")
            if text:
                out.update(int(x) for x in text.split())
        return sorted(out)

    def is_empty(self) -> bool:
        return not self.pids()

    def kill_all(self, timeout: float = 2.0) -> bool:
        """SIGKILL every process in the group until it is empty; True when empty."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(self.fds["v2"], "cgroup.kill", "1")
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

    def stats(self) -> dict[str, float]:
        """peak_memory_mb, cpu_time_s, oom (1.0 when the memory limit was hit) and
        pids_limited (1.0 when a fork was refused) of the run since `begin`."""
        out: dict[str, float] = {}
        base = self._base
        if self.version == 1:
            peak = _read(self.fds["memory"], "memory.max_usage_in_bytes")
            fail = _read(self.fds["memory"], "memory.failcnt")
            cpu = _read(self.fds["cpuacct"], "cpuacct.usage")
            if peak:
                out["peak_memory_mb"] = int(peak) / 2**20
            if fail:
                out["oom"] = 1.0 if int(fail) > 0 else 0.0
            if cpu:
                out["cpu_time_s"] = int(cpu) / 1e9
            pids_ev = _keyed(_read(self.fds["pids"], "pids.events"))
        else:
            d = self.fds["v2"]
            peak = None
            if self._peak_fd is not None:
                with contextlib.suppress(OSError):
                    peak = os.pread(self._peak_fd, 64, 0).decode()
            if peak is None:
                peak = _read(d, "memory.peak")
            if peak and peak.strip().isdigit():
                out["peak_memory_mb"] = int(peak) / 2**20
            ev = _keyed(_read(d, "memory.events"))
            out["oom"] = 1.0 if ev.get("oom", 0) + ev.get("oom_kill", 0) > base.get("oom", 0) else 0.0
            usage = _keyed(_read(d, "cpu.stat")).get("usage_usec")
            if usage is not None:
                out["cpu_time_s"] = (usage - base.get("usage_usec", 0)) / 1e6
            pids_ev = _keyed(_read(d, "pids.events"))
        if "max" in pids_ev:
            out["pids_limited"] = 1.0 if pids_ev["max"] > base.get("pids_max", 0) else 0.0
        return out

    def remove(self) -> bool:
        """Kill what is left and remove the group; True when it is gone."""
        self.kill_all()
        if self._peak_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._peak_fd)
            self._peak_fd = None
        gone = True
        for key, parent in self.parent_fds.items():
            for _ in range(50):
                try:
                    os.rmdir(self.name, dir_fd=parent)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.002)
            else:
                gone = False
            with contextlib.suppress(OSError, KeyError):
                os.close(self.fds.pop(key))
        return gone


@dataclass
class CgroupFactory:
    """Makes and recycles run groups under a parent group created once for this process."""

    version: int = 0
    parent_fds: dict[str, int] = field(default_factory=dict)
    parent_name: str = ""
    base_fds: dict[str, int] = field(default_factory=dict)  # the directories holding the parents
    free: list[Cgroup] = field(default_factory=list)
    reusable: bool = False
    made: int = 0  # groups created (a measure of reuse)

    @property
    def available(self) -> bool:
        return self.version in (1, 2)

    @property
    def cpu_capped(self) -> bool:
        """Whether runs' `cpus` limits are enforced (a CPU controller for their groups)."""
        if self.version == 2:
            return "cpu" in (_read(self.parent_fds["v2"], "cgroup.subtree_control") or "").split()
        return "cpu" in self.parent_fds

    @classmethod
    def detect(cls, name: str = "rlvr-sandbox") -> CgroupFactory:
        if os.environ.get("RLVR_SANDBOX_NO_CGROUPS") == "1":
            return cls(0)
        tag = f"{name}-{os.getpid()}"
        v2_root = os.path.join(ROOT, _own_path(None).lstrip("/"))
        if os.path.isfile(os.path.join(ROOT, "cgroup.controllers")) and _writable(v2_root):
            parent = os.path.join(v2_root, tag)
            with contextlib.suppress(OSError):
                os.makedirs(parent, exist_ok=True)
                with open(os.path.join(v2_root, "cgroup.subtree_control")) as f:
                    wanted = {"memory", "pids", "cpu"} - set(f.read().split())
                if wanted:
                    with open(os.path.join(v2_root, "cgroup.subtree_control"), "w") as f:
                        f.write(" ".join(f"+{c}" for c in wanted))
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory +pids +cpu")
                fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                base_fd = os.open(v2_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                factory = cls(2, {"v2": fd}, tag, base_fds={"v2": base_fd})
                factory.reusable = factory._probe_reset()
                return factory
        fds: dict[str, int] = {}
        bases: dict[str, int] = {}
        for ctrl in V1_CONTROLLERS:
            base = os.path.join(ROOT, ctrl, _own_path(ctrl).lstrip("/"))
            if not _writable(base):
                return cls(0)
            p = os.path.join(base, tag)
            try:
                os.makedirs(p, exist_ok=True)
            except OSError:
                return cls(0)
            fds[ctrl] = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            bases[ctrl] = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        for ctrl in V1_OPTIONAL:  # without it, runs work as before and `cpus` is not enforced
            base = os.path.join(ROOT, ctrl, _own_path(ctrl).lstrip("/"))
            p = os.path.join(base, tag)
            with contextlib.suppress(OSError):
                if _writable(base) and os.path.isfile(os.path.join(base, "cpu.cfs_quota_us")):
                    os.makedirs(p, exist_ok=True)
                    fds[ctrl] = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    bases[ctrl] = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return cls(1, fds, tag, base_fds=bases, reusable=True)

    def _probe_reset(self) -> bool:
        """cgroup v2: can a peak-memory counter be reset (Linux 6.12+)? Tried on a group
        made for the purpose."""
        cg = self._make()
        try:
            return cg._peak_fd is not None
        finally:
            cg.remove()

    def _make(self) -> Cgroup:
        name = os.urandom(6).hex()
        fds: dict[str, int] = {}
        for key, parent in self.parent_fds.items():
            os.mkdir(name, dir_fd=parent)
            fds[key] = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent)
        self.made += 1
        cg = Cgroup(name, fds, self.parent_fds, self.version)
        if self.version == 2:
            with contextlib.suppress(OSError):
                peak = os.open("memory.peak", os.O_RDWR | os.O_CLOEXEC, dir_fd=fds["v2"])
                try:
                    os.pwrite(peak, b"reset", 0)
                    cg._peak_fd = peak
                except OSError:
                    os.close(peak)
        cg.reusable = self.version == 1 or cg._peak_fd is not None
        return cg

    def acquire(self, memory_mb: int, max_pids: int, cpus: float | None = None) -> Cgroup | None:
        """An empty group, limits written and counters reset, or None without cgroups."""
        if not self.available:
            return None
        cg = self.free.pop() if self.free else self._make()
        cg.begin(memory_mb, max_pids, cpus)
        return cg

    def release(self, cg: Cgroup) -> None:
        """After the run's processes are gone: back on the free list when verified empty
        and its counters can be reset, otherwise removed."""
        if cg.reusable and (cg.is_empty() or cg.kill_all(timeout=0.5)):
            self.free.append(cg)
        else:
            cg.remove()

    def cleanup(self) -> None:
        """Remove every group and the parent (at the server's exit)."""
        for cg in self.free:
            cg.remove()
        self.free.clear()
        for key, parent in self.parent_fds.items():
            with contextlib.suppress(OSError):
                for child in os.listdir(parent):
                    with contextlib.suppress(OSError):
                        fd = os.open(child, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent)
                        Cgroup(child, {key: fd}, {key: parent}, self.version).remove()
            with contextlib.suppress(OSError):
                os.rmdir(self.parent_name, dir_fd=self.base_fds[key])
