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
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

from rlvr.sandbox import harness, jail
from rlvr.sandbox.cgroup import Cgroup, CgroupFactory
from rlvr.sandbox.waiting import wait_for

SANDBOX_FAILURE_EXIT = 121  # the jail could not be set up: infrastructure, not the program


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. `timeout_s` is the wall-clock limit of the whole run;
    each test also gets at most `test_timeout_s` (default: timeout_s). Up to
    `parallel_tests` tests (assert and call formats) run side by side, each in its own
    fork of the loaded submission; the run's memory cap (its cgroup) is `memory_mb` per
    test running at once, and each process is held to `memory_mb` of address space."""

    timeout_s: float = 5.0
    memory_mb: int = 512
    test_timeout_s: float | None = None
    max_processes: int = 32
    output_bytes: int = 64 * 1024
    file_size_mb: int = 16
    work_mb: int = 64
    tmp_mb: int = 64
    open_files: int = 64
    parallel_tests: int = 2

    def __post_init__(self) -> None:
        if self.parallel_tests < 1:
            raise ValueError(f"parallel_tests must be at least 1, got {self.parallel_tests}")

    @property
    def run_memory_mb(self) -> int:
        """The cgroup's cap for the whole run: memory_mb for each test running at once."""
        return self.memory_mb * self.parallel_tests

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Environment:
    """What this machine allows, detected once per fork server."""

    root: bool = False
    namespaces: bool = False
    netns_fd: int | None = None
    seccomp: bool = False
    seccomp_program: bytes | None = None
    cgroups: CgroupFactory = field(default_factory=CgroupFactory)
    jail_cfg: jail.JailConfig | None = None

    @classmethod
    def detect(cls, workdir: str) -> Environment:
        env = cls(root=os.geteuid() == 0)
        env.seccomp_program = jail.compile_seccomp_in_child()
        env.seccomp = env.seccomp_program is not None
        env.cgroups = CgroupFactory.detect()
        if env.root:
            env.netns_fd = jail.make_empty_netns()
            env.namespaces = env.netns_fd is not None and _can_unshare()
        if env.namespaces:
            root_dir = os.path.join(workdir, "root")
            os.makedirs(root_dir, exist_ok=True)
            ro = jail.default_ro_paths()
            env.jail_cfg = jail.JailConfig(root_dir=root_dir, ro_paths=ro, hidden=jail.default_hidden_paths(ro))
        return env

    def protections(self) -> dict[str, bool]:
        ns = self.namespaces
        return {
            "pid, mount, ipc, uts namespaces": ns,
            "network namespace (loopback only)": ns and self.netns_fd is not None,
            "read-only system, private /sandbox and /tmp, minimal /dev, private /proc": ns,
            "task data hidden (bundled sets, HumanEval, RLVR_SANDBOX_HIDE)": ns,
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
    env: Environment, fds: dict[str, int], namespaces_entered: bool, uid: int, request_fd: int, done_fd: int
) -> None:
    """Body of the jailed child; never returns. It builds the jail with no knowledge of
    the submission, then blocks reading the request (code, probes, limits) from
    `request_fd`; only then does it lower its resource limits and start the harness.
    When the caller has already entered the namespaces, this process is PID 1 of the run;
    otherwise it enters them and forks PID 1 itself."""
    try:
        jail.set_pdeathsig(signal.SIGKILL)
        # Move every descriptor we keep above the range we are about to fill.
        fds = {k: _high(os.dup(v)) for k, v in fds.items()}
        ns_fd = _high(os.dup(env.netns_fd)) if env.netns_fd is not None else None
        req = _high(os.dup(request_fd))
        done = _high(os.dup(done_fd))
        for name, target in (("stdout", 1), ("stderr", 2), ("events", 3)):
            os.dup2(fds[name], target)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(req, 4)
        os.dup2(done, 6)
        netns = None
        if ns_fd is not None:
            os.dup2(ns_fd, 5)
            netns = 5
        os.closerange(7, 1 << 16)  # the client connection and every other host descriptor
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
            if namespaces_entered:
                # A mount namespace of our own: pivot_root would otherwise also move the
                # root of the handler that shares its namespace (and hide the cgroups).
                jail.unshare(jail.CLONE_NEWNS)
            jail.build_root(env.jail_cfg, uid)
        else:
            os.chdir(os.environ.get("RLVR_SANDBOX_FALLBACK_DIR", "/tmp"))
        os.environ.clear()
        os.environ.update(_ENV)
        if env.root:
            jail.drop_privileges(uid)
            jail.set_pdeathsig(signal.SIGKILL)
        if env.seccomp_program:
            jail.load_seccomp_bpf(env.seccomp_program)
        elif env.seccomp:
            jail.apply_seccomp()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        # Armed: wait for the submission.
        chunks = []
        while True:
            chunk = os.read(4, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(4)
        if not chunks:  # disarmed without a request
            os._exit(0)
        request = json.loads(b"".join(chunks))
        limits = Limits(**request["limits"])
        language = request["language"]
        # node reserves far more address space than it uses: its memory is capped by the
        # cgroup alone (where there is one).
        address_space = limits.memory_mb if language != "javascript" or not env.cgroups.available else None
        jail.apply_rlimits(
            address_space, limits.timeout_s, limits.open_files, limits.file_size_mb, nproc=limits.max_processes
        )
    except BaseException:
        with contextlib.suppress(BaseException):
            os.write(3, (json.dumps({"e": "sandbox_error", "msg": traceback.format_exc()[-2000:]}) + "\n").encode())
        os._exit(SANDBOX_FAILURE_EXIT)
    try:
        harness.run(
            request["code"],
            request["probes"],
            3,
            limits.test_timeout_s or limits.timeout_s,
            limits.output_bytes,
            request["deadline"],
            language,
            limits.parallel_tests,
        )
        # Every result is written: tell the supervisor, which answers now and tears the
        # run down afterwards. (The submission could write here too, early: that only
        # cuts its own results short, and a test without its result fails.)
        with contextlib.suppress(OSError):
            os.write(6, b"1")
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(0)


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


@dataclass
class Armed:
    """A jail built and waiting for its submission (see `arm`)."""

    pid: int
    cgroup: Cgroup | None
    fds: dict[str, int]
    request_w: int
    done_r: int
    released: bool = False
    reaped: bool = False


def arm(env: Environment, disposable: bool = False) -> Armed:
    """Build a run's jail before its submission is known: the cgroup, the namespaces,
    PID 1 with its file system, unprivileged and under seccomp, blocked on a pipe.
    With `disposable` (the caller is a process forked for this run alone), the caller
    itself enters the namespaces, which saves a fork."""
    fds = {k: os.memfd_create(k) for k in ("events", "stdout", "stderr")}
    for fd in fds.values():
        # Appending: the run's processes (tests side by side) write to them at once, and a
        # memfd's shared offset is not updated atomically otherwise (lines were lost).
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    # Armed with the default limits; a request with other limits rewrites them in fire().
    default = Limits()
    cg = env.cgroups.create(default.run_memory_mb, default.max_processes) if env.cgroups.available else None
    # A user id of its own for each concurrent run (derived from this host-side pid),
    # so that runs cannot signal or share process-count limits with each other.
    uid = jail.SANDBOX_UID_BASE + os.getpid() % 50_000
    entered = False
    if disposable and env.namespaces:
        jail.enter_namespaces(env.netns_fd)
        entered = True
    sync_r, sync_w = os.pipe()  # the child waits until it has been put into the cgroup
    req_r, req_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(sync_w)
        os.close(req_w)
        os.close(done_r)
        os.read(sync_r, 1)
        os.close(sync_r)
        _jailed_child(env, fds, entered, uid, req_r, done_w)
    os.close(sync_r)
    os.close(req_r)
    os.close(done_w)
    try:
        if cg is not None:
            cg.add(pid)
    finally:
        os.write(sync_w, b"1")
        os.close(sync_w)
    return Armed(pid, cg, fds, req_w, done_r)


def fire(armed: Armed, code: str, probes: list[dict[str, str]], limits: Limits, language: str) -> dict[str, Any]:
    """Hand the submission to an armed jail, enforce the wall-clock limit, and return the
    raw observations."""
    t0 = time.monotonic()
    cg = armed.cgroup
    default = Limits()
    wanted = (limits.run_memory_mb, limits.max_processes)
    if cg is not None and wanted != (default.run_memory_mb, default.max_processes):
        cg.set_limits(limits.run_memory_mb, limits.max_processes)
    request = {
        "code": code,
        "probes": probes,
        "limits": limits.to_dict(),
        "language": language,
        "deadline": t0 + limits.timeout_s,
    }
    data = json.dumps(request).encode()
    with contextlib.suppress(BrokenPipeError):
        view = memoryview(data)
        while view:
            view = view[os.write(armed.request_w, view) :]
    os.close(armed.request_w)
    outcome = _wait_done(armed, t0 + limits.timeout_s + 0.05)
    timed_out = outcome == "timeout"
    if timed_out:
        if cg is not None:
            cg.kill_all()
        with contextlib.suppress(ProcessLookupError):
            os.kill(armed.pid, signal.SIGKILL)
    status, rusage = 0, None
    if outcome != "done":  # it ended (or was killed) without finishing: its status says how
        _, st, rusage = os.wait4(armed.pid, 0)
        armed.reaped = True
        status = os.waitstatus_to_exitcode(st)
    wall = time.monotonic() - t0
    leftover = cg.kill_all() if cg is not None and outcome != "done" else True
    events_text, _ = _read_all(armed.fds["events"], 16 << 20)
    stdout, out_trunc = _read_all(armed.fds["stdout"], limits.output_bytes)
    stderr, err_trunc = _read_all(armed.fds["stderr"], limits.output_bytes)
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


def _wait_done(armed: Armed, deadline: float) -> str:
    """'done' when PID 1 signals that every result is written (the run's processes are
    then still being torn down, off the critical path), 'exited' when it ended without
    saying so, 'timeout' at the deadline."""
    outcome = wait_for(armed.pid, deadline, armed.done_r)
    if outcome == "fd":
        return "done" if os.read(armed.done_r, 1) else "exited"
    return outcome


def release(armed: Armed) -> None:
    """Kill whatever is left of the run and remove its cgroup and descriptors."""
    if armed.released:
        return
    armed.released = True
    for fd in (armed.request_w, armed.done_r):
        with contextlib.suppress(OSError):
            os.close(fd)
    if armed.cgroup is not None:
        armed.cgroup.kill_all()
    with contextlib.suppress(ProcessLookupError, ChildProcessError):
        os.kill(armed.pid, signal.SIGKILL)
    if not armed.reaped:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(armed.pid, 0)
    if armed.cgroup is not None:
        armed.cgroup.remove()
    for fd in armed.fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)


def run_isolated(
    env: Environment,
    code: str,
    probes: list[dict[str, str]],
    limits: Limits,
    disposable: bool = False,
    language: str = "python",
) -> dict[str, Any]:
    """Arm, fire and release in one go; the raw observations of one run."""
    try:
        armed = arm(env, disposable)
    except OSError as e:
        return {"sandbox_error": f"could not build the run's jail: {e}"}
    try:
        return fire(armed, code, probes, limits, language)
    finally:
        release(armed)
