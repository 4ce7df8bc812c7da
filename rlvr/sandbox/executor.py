"""One isolated run, driven from a trusted process (a fork-server handler).

`run_isolated` creates the run's cgroup, forks the jailed child (which enters the
namespaces and forks PID 1 of the run, which builds the file system, drops privileges,
loads seccomp and starts the harness), enforces the wall-clock limit, kills the whole
tree, and returns the raw observations: event lines, capped stdout/stderr, exit status,
resource use. It never sees expected values; verdicts are made by the caller.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

from rlvr.sandbox import harness, jail
from rlvr.sandbox.cgroup import CgroupFactory

SANDBOX_FAILURE_EXIT = 121  # the jail could not be set up: infrastructure, not the program


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. `timeout_s` is the wall-clock limit of the whole run;
    each test also gets at most `test_timeout_s` (default: timeout_s)."""

    timeout_s: float = 5.0
    memory_mb: int = 512
    test_timeout_s: float | None = None
    max_processes: int = 32
    output_bytes: int = 64 * 1024
    file_size_mb: int = 16
    work_mb: int = 64
    tmp_mb: int = 64
    open_files: int = 64

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Environment:
    """What this machine allows, detected once per fork server."""

    root: bool = False
    namespaces: bool = False
    netns_fd: int | None = None
    seccomp: bool = False
    cgroups: CgroupFactory = field(default_factory=CgroupFactory)
    jail_cfg: jail.JailConfig | None = None

    @classmethod
    def detect(cls, workdir: str) -> Environment:
        env = cls(root=os.geteuid() == 0)
        env.seccomp = jail.seccomp_available()
        env.cgroups = CgroupFactory.detect()
        if env.root:
            env.netns_fd = jail.make_empty_netns()
            env.namespaces = env.netns_fd is not None and _can_unshare()
        if env.namespaces:
            root_dir = os.path.join(workdir, "root")
            os.makedirs(root_dir, exist_ok=True)
            env.jail_cfg = jail.JailConfig(root_dir=root_dir, ro_paths=jail.default_ro_paths())
        return env

    def protections(self) -> dict[str, bool]:
        ns = self.namespaces
        return {
            "pid, mount, ipc, uts namespaces": ns,
            "network namespace (loopback only)": ns and self.netns_fd is not None,
            "read-only system, private /sandbox and /tmp, minimal /dev, private /proc": ns,
            "unprivileged user": self.root,
            "seccomp filter": self.seccomp,
            f"cgroup v{self.cgroups.version or '-'} (memory, pids, cpu; kill the tree)": self.cgroups.available,
            "rlimits (address space, cpu, files, file size, core)": True,
            "allow-listed environment": True,
        }


def _can_unshare() -> bool:
    pid = os.fork()
    if pid == 0:
        try:
            jail.unshare(jail.CLONE_NEWNS | jail.CLONE_NEWPID | jail.CLONE_NEWIPC | jail.CLONE_NEWUTS)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/sandbox", "PYTHONHASHSEED": "0"}


def _jailed_child(
    env: Environment,
    code: str,
    probes: list[dict[str, str]],
    limits: Limits,
    fds: dict[str, int],
    namespaces_entered: bool,
    uid: int,
    run_deadline: float,
    language: str = "python",
) -> None:
    """Body of the first child; never returns. When the caller has already entered the
    namespaces, this process is PID 1 of the run; otherwise it enters them and forks it."""
    try:
        jail.set_pdeathsig(signal.SIGKILL)
        # Move every descriptor we keep above the range we are about to fill.
        keep = {k: os.dup(v) for k, v in fds.items()}
        ns_fd = os.dup(env.netns_fd) if env.netns_fd is not None else None
        fds = {k: _high(v) for k, v in keep.items()}
        ns_fd = _high(ns_fd) if ns_fd is not None else None
        for name in ("stdout", "stderr"):
            os.dup2(fds[name], {"stdout": 1, "stderr": 2}[name])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds["events"], 3)
        netns = None
        if ns_fd is not None:
            os.dup2(ns_fd, 4)
            netns = 4
        os.closerange(5, 1 << 16)  # the client connection and every other host descriptor
        if env.namespaces and not namespaces_entered:
            jail.enter_namespaces(netns)
            pid = os.fork()
            if pid:
                _, status = os.waitpid(pid, 0)
                code_ = os.waitstatus_to_exitcode(status)
                os._exit(code_ if code_ >= 0 else 128 - code_)
        if netns is not None:
            os.close(netns)
        # PID 1 of the run
        if env.namespaces and env.jail_cfg is not None:
            jail.build_root(env.jail_cfg, uid)
        else:
            os.chdir(os.environ.get("RLVR_SANDBOX_FALLBACK_DIR", "/tmp"))
        os.environ.clear()
        os.environ.update(_ENV)
        # node reserves far more address space than it uses: its memory is capped by the
        # cgroup alone (where there is one).
        address_space = limits.memory_mb if language != "javascript" or not env.cgroups.available else None
        jail.apply_rlimits(
            address_space, limits.timeout_s, limits.open_files, limits.file_size_mb, nproc=limits.max_processes
        )
        if env.root:
            jail.drop_privileges(uid)
            jail.set_pdeathsig(signal.SIGKILL)
        if env.seccomp:
            jail.apply_seccomp()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    except BaseException:
        with contextlib.suppress(BaseException):
            os.write(3, (json.dumps({"e": "sandbox_error", "msg": traceback.format_exc()[-2000:]}) + "\n").encode())
        os._exit(SANDBOX_FAILURE_EXIT)
    try:
        harness.run(
            code, probes, 3, limits.test_timeout_s or limits.timeout_s, limits.output_bytes, run_deadline, language
        )
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(0)


def wait_until(pid: int, deadline: float) -> bool:
    """Block until child `pid` has exited (True) or the monotonic deadline passes (False),
    without reaping it. Uses a pidfd, so the wake-up is immediate."""
    try:
        pfd = os.pidfd_open(pid)
    except OSError:
        pfd = None
    try:
        while True:
            left = deadline - time.monotonic()
            if pfd is not None:
                ready, _, _ = select.select([pfd], [], [], max(left, 0.0))
                if ready:
                    return True
            else:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
                time.sleep(0.001)
            if time.monotonic() >= deadline:
                return False
    finally:
        if pfd is not None:
            os.close(pfd)


def _high(fd: int) -> int:
    """Duplicate fd to a number >= 100 and close the original."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 100)
    os.close(fd)
    return new


def _read_all(fd: int, cap: int) -> tuple[str, bool]:
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, cap + 1)
    text = data[:cap].decode("utf-8", "replace")
    return (text + "\n...[truncated]", True) if len(data) > cap else (text, False)


def run_isolated(
    env: Environment,
    code: str,
    probes: list[dict[str, str]],
    limits: Limits,
    disposable: bool = False,
    language: str = "python",
) -> dict[str, Any]:
    """Run once and return the raw observations. With `disposable` (the caller is a
    process forked for this run alone, as in the fork server), the caller itself enters
    the run's namespaces, which saves one fork per run."""
    t0 = time.monotonic()
    fds = {k: os.memfd_create(k) for k in ("events", "stdout", "stderr")}
    cg = None
    try:
        try:
            cg = env.cgroups.create(limits.memory_mb, limits.max_processes) if env.cgroups.available else None
        except OSError as e:
            return {"sandbox_error": f"could not create the run's cgroup: {e}"}
        # A user id of its own for each concurrent run (derived from this host-side pid),
        # so that runs cannot signal or share process-count limits with each other.
        uid = jail.SANDBOX_UID_BASE + os.getpid() % 50_000
        entered = False
        if disposable and env.namespaces:
            try:
                jail.enter_namespaces(env.netns_fd)
                entered = True
            except OSError as e:
                return {"sandbox_error": f"could not enter the run's namespaces: {e}"}
        r, w = os.pipe()  # the child waits until it has been put into the cgroup
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os.close(r)
            _jailed_child(env, code, probes, limits, fds, entered, uid, t0 + limits.timeout_s, language)
        os.close(r)
        try:
            if cg is not None:
                cg.add(pid)
        finally:
            os.write(w, b"1")
            os.close(w)
        deadline = t0 + limits.timeout_s + 0.05
        timed_out = not wait_until(pid, deadline)
        if timed_out:
            if cg is not None:
                cg.kill_all()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, st, rusage = os.wait4(pid, 0)
        status = os.waitstatus_to_exitcode(st)
        wall = time.monotonic() - t0
        leftover = cg.kill_all() if cg is not None else True
        events_text, _ = _read_all(fds["events"], 16 << 20)
        stdout, out_trunc = _read_all(fds["stdout"], limits.output_bytes)
        stderr, err_trunc = _read_all(fds["stderr"], limits.output_bytes)
        stats = cg.stats() if cg is not None else {}
        if rusage is not None and "peak_memory_mb" not in stats:
            stats["peak_memory_mb"] = rusage.ru_maxrss / 1024
        if rusage is not None and "cpu_time_s" not in stats:
            stats["cpu_time_s"] = rusage.ru_utime + rusage.ru_stime
        return {
            "events": events_text.splitlines(),
            "stdout": stdout,
            "stderr": stderr,
            "output_truncated": out_trunc or err_trunc,
            "exit": status,
            "timed_out": timed_out,
            "wall_time_s": wall,
            "tree_killed": leftover,
            **stats,
        }
    finally:
        for fd in fds.values():
            os.close(fd)
        if cg is not None:
            cg.remove()
