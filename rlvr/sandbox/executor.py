"""One isolated run, driven from the fork server (the trusted supervisor).

`arm` forks PID 1 of a new PID namespace straight from the server, in the cgroup of a
pool slot, with a fresh user id; PID 1 enters its own mount, IPC and UTS namespaces,
mounts a fresh /sandbox, /tmp and /proc over the server's read-only template root, and
blocks on a pipe until the submission arrives. `fire` hands the submission over; PID 1
then drops privileges, loads seccomp, lowers its limits and starts the harness. `collect`
turns what came back into the raw observations (event lines, capped stdout/stderr, exit
status, resource use) and `release` kills whatever is left; the slot's cgroup and the
user id are recycled only once PID 1 is reaped, which happens after the kernel has ended
every process of the run. Nothing here sees expected values: verdicts are made by the
caller.
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
from dataclasses import dataclass, field
from typing import Any

from rlvr.sandbox import harness, jail
from rlvr.sandbox.cgroup import Cgroup, CgroupFactory
from rlvr.sandbox.uids import UidBlock

SANDBOX_FAILURE_EXIT = 121  # the jail could not be set up: infrastructure, not the program
TEST_ISOLATION = ("shared", "process")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. `timeout_s` is the wall-clock limit of the whole run;
    each test also gets at most `test_timeout_s` (default: timeout_s).

    `test_isolation` says how the tests of the assert and call formats run: "shared" (the
    default) runs them one after another in one fork of the loaded submission, and a
    test that crashes, times out or breaks that process is followed by a fresh fork;
    "process" runs every test in its own fork. Up to `parallel_tests` test processes run
    side by side (in shared mode the second starts only when a test takes longer than
    `harness.SECOND_WORKER_AFTER_S`). The run's memory cap (its cgroup) is `memory_mb`
    per test process running at once, and each process is held to `memory_mb` of
    address space.

    `cpus` caps the cores all the run's processes together may use (a CPU-bandwidth
    quota on its cgroup: a fork bomb or a spinning thread pool gets that share of the
    machine and no more); None leaves it to the wall clock and RLIMIT_CPU. Where the
    machine has no CPU controller it is not enforced, which `rlvr sandbox check` shows."""

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
    test_isolation: str = "shared"
    cpus: float | None = None

    def __post_init__(self) -> None:
        if self.cpus is not None and not 0.01 <= self.cpus <= 1024:
            raise ValueError(f"cpus must be between 0.01 and 1024 cores (or None for no cap), got {self.cpus}")
        if self.parallel_tests < 1:
            raise ValueError(f"parallel_tests must be at least 1, got {self.parallel_tests}")
        if self.test_isolation not in TEST_ISOLATION:
            raise ValueError(f"test_isolation must be one of {', '.join(TEST_ISOLATION)}, got {self.test_isolation!r}")

    @property
    def run_memory_mb(self) -> int:
        """The cgroup's cap for the whole run: memory_mb for each test running at once."""
        return self.memory_mb * self.parallel_tests

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)  # every field is a plain value (asdict would deep-copy them)


DEFAULT = Limits()


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
    forker: jail.PidNamespaceForker | None = None
    uids: UidBlock | None = None
    template: bool = False  # the server lives in the jail's template root (see enter_template)
    fallback_dir: str = "/tmp"  # without namespaces: the runs' working directory (RLVR_SANDBOX_FALLBACK_DIR)

    @classmethod
    def detect(cls, workdir: str) -> Environment:
        env = cls(root=os.geteuid() == 0, fallback_dir=os.environ.get("RLVR_SANDBOX_FALLBACK_DIR", "/tmp"))
        env.seccomp_program = jail.compile_seccomp_in_child()
        env.seccomp = env.seccomp_program is not None
        env.cgroups = CgroupFactory.detect()
        if env.root:
            env.uids = UidBlock()
            env.netns_fd = jail.make_empty_netns()
            env.namespaces = env.netns_fd is not None and _can_unshare()
        if env.namespaces:
            root_dir = os.path.join(workdir, "root")
            os.makedirs(root_dir, exist_ok=True)
            ro = jail.default_ro_paths()
            env.jail_cfg = jail.JailConfig(
                root_dir=root_dir, ro_paths=ro, hidden=jail.default_hidden_paths(ro), links=jail.default_links(ro)
            )
        return env

    def enter_template(self) -> None:
        """Move this process (the fork server) into the empty network namespace and into
        the jail's read-only template root, from which every run's mount namespace is
        copied. After this, only modules already imported can be used."""
        if not self.namespaces or self.jail_cfg is None:
            return
        self.forker = jail.PidNamespaceForker()
        if self.netns_fd is not None:
            jail.setns(self.netns_fd, jail.CLONE_NEWNET)
            os.close(self.netns_fd)
            self.netns_fd = None
        jail.build_template(self.jail_cfg)
        self.template = True

    def protections(self) -> dict[str, bool]:
        ns = self.namespaces
        cg = self.cgroups
        return {
            "pid, mount, ipc, uts namespaces": ns,
            "network namespace (loopback only)": ns,
            "read-only system, private /sandbox and /tmp, minimal /dev, private /proc": ns,
            "task data hidden (bundled sets, HumanEval, RLVR_SANDBOX_HIDE)": ns,
            "unprivileged user of its own": self.root,
            "seccomp filter": self.seccomp,
            f"cgroup v{cg.version or '-'} (memory, pids, cpu; kill the tree)": cg.available,
            "cpu cap per run (limits.cpus)": cg.available and cg.cpu_capped,
            "rlimits (address space, cpu, processes, files, file size, core)": True,
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


def allow_listed_environ() -> None:
    """Make this process's environment (os.environ and the C environment its children get)
    exactly `_ENV`. The fork server does it once, after reading its settings, so that
    each run's PID 1, which does it again, has almost nothing to remove; one deletion per
    variable (os.environ.clear() lists every remaining key again for each one it removes:
    0.4 ms of a run's CPU for 40 variables)."""
    for key in list(os.environ):
        del os.environ[key]
    os.environ.update(_ENV)


def _jailed_child(
    env: Environment, fds: dict[str, int], uid: int, request_fd: int, done_fd: int, cgroup: Cgroup | None
) -> None:
    """Body of PID 1 of a run; never returns. It builds its part of the jail with no
    knowledge of the submission, then blocks reading the request (code, probes, limits)
    from `request_fd`; only then does it size its writable dirs, drop privileges, load
    seccomp, lower its resource limits and start the harness."""
    try:
        jail.set_pdeathsig(signal.SIGKILL)
        if cgroup is not None:
            cgroup.add(0)  # into the slot's group, before anything else (and before the request)
        # Move every descriptor we keep above the range we are about to fill.
        fds = {k: _high(os.dup(v)) for k, v in fds.items()}
        req = _high(os.dup(request_fd))
        done = _high(os.dup(done_fd))
        for name, target in (("stdout", 1), ("stderr", 2), ("events", 3)):
            os.dup2(fds[name], target)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(req, 4)
        os.dup2(done, 6)
        os.closerange(7, 1 << 16)  # the server's socket, cgroups, other runs: every host descriptor
        if env.template:
            assert env.jail_cfg is not None
            cfg = env.jail_cfg
            jail.enter_run(DEFAULT.work_mb, DEFAULT.tmp_mb, uid, cfg.under_tmp, cfg.links_under_tmp)
        else:
            os.setsid()  # without a PID namespace, the run is at least a process group of its own
            os.chdir(env.fallback_dir)
        allow_listed_environ()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        # Armed: wait for the submission (still privileged, running nothing of it).
        chunks = []
        while True:
            chunk = os.read(4, PIPE_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(4)
        if not chunks:  # disarmed without a request
            os._exit(0)
        request = json.loads(b"".join(chunks))
        limits = Limits(**request["limits"])
        language = request["language"]
        if env.template and (limits.work_mb, limits.tmp_mb) != (DEFAULT.work_mb, DEFAULT.tmp_mb):
            jail.resize_run(limits.work_mb, limits.tmp_mb, uid)
        if env.template and language == "command":
            jail.mount_shm(limits.tmp_mb, uid)
        if env.root:
            jail.drop_privileges(uid)
            jail.set_pdeathsig(signal.SIGKILL)
        if env.seccomp_program:
            jail.load_seccomp_bpf(env.seccomp_program)
        # node reserves far more address space than it uses (and a command may run node):
        # their memory is capped by the cgroup alone (where there is one).
        uncapped = language in ("javascript", "command") and env.cgroups.available
        address_space = None if uncapped else limits.memory_mb
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
            shared=limits.test_isolation == "shared",
            private_fds=(6,),
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


PIPE_CHUNK = 1 << 16
"""What one read of a pipe can return (its default capacity): asking for more only makes
the interpreter allocate (mmap) a larger buffer and give it back on every read."""


def _high(fd: int) -> int:
    """Duplicate fd to a number >= 100 and close the original."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 100)
    os.close(fd)
    return new


def _read_all(fd: int, cap: int) -> tuple[str, bool]:
    """A memfd's text, capped (and whether it was). What it holds, not a cap-sized buffer:
    that would be allocated and mapped afresh for every read (16 MiB for the events)."""
    data = os.pread(fd, min(os.fstat(fd).st_size, cap + 1), 0)
    text = data[:cap].decode("utf-8", "replace")
    return (text + "\n...[truncated]", True) if len(data) > cap else (text, False)


@dataclass
class Armed:
    """A run's jail: armed (PID 1 waiting for its submission), then fired, then released."""

    pid: int
    pidfd: int  # readable when PID 1 has ended
    cgroup: Cgroup | None
    uid: int | None
    fds: dict[str, int]
    request_w: int
    done_r: int
    t0: float = 0.0
    deadline: float = float("inf")
    limits: Limits = DEFAULT
    reaped: bool = False
    status: int | None = None
    rusage: Any = None
    killed: bool = False


def arm(env: Environment) -> Armed:
    """Start a run's jail before its submission is known: PID 1 of a new PID namespace,
    in a cgroup with the default limits, under a user id no other live run has."""
    fds = {k: os.memfd_create(k) for k in ("events", "stdout", "stderr")}
    for fd in fds.values():
        # Appending: the run's processes (tests side by side) write to them at once, and a
        # memfd's shared offset is not updated atomically otherwise (lines were lost).
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    uid = env.uids.take() if env.uids is not None else None
    cg = None
    try:
        cg = env.cgroups.acquire(DEFAULT.run_memory_mb, DEFAULT.max_processes, DEFAULT.cpus)
        req_r, req_w = os.pipe()
        done_r, done_w = os.pipe()
    except BaseException:
        _close_all(fds.values())
        if cg is not None:
            env.cgroups.release(cg)
        if uid is not None and env.uids is not None:
            env.uids.give_back(uid)
        raise
    pid = env.forker.fork() if env.forker is not None else os.fork()
    if pid == 0:
        os.close(req_w)
        os.close(done_r)
        _jailed_child(env, fds, uid if uid is not None else os.getuid(), req_r, done_w, cg)
    os.close(req_r)
    os.close(done_w)
    return Armed(pid, os.pidfd_open(pid), cg, uid, fds, req_w, done_r)


def fire(armed: Armed, code: str, probes: list[dict[str, str]], limits: Limits, language: str) -> None:
    """Hand the submission to an armed jail; its wall-clock limit starts now."""
    armed.t0 = time.monotonic()
    armed.limits = limits
    armed.deadline = armed.t0 + limits.timeout_s + 0.05
    cg = armed.cgroup
    if cg is not None and (limits.run_memory_mb, limits.max_processes, limits.cpus) != (
        DEFAULT.run_memory_mb,
        DEFAULT.max_processes,
        DEFAULT.cpus,
    ):
        cg.set_limits(limits.run_memory_mb, limits.max_processes, limits.cpus)
    request = {
        "code": code,
        "probes": probes,
        "limits": limits.to_dict(),
        "language": language,
        "deadline": armed.t0 + limits.timeout_s,
    }
    data = json.dumps(request).encode()
    with contextlib.suppress(BrokenPipeError):
        view = memoryview(data)
        while view:
            view = view[os.write(armed.request_w, view) :]
    os.close(armed.request_w)
    armed.request_w = -1


def outcome_of(armed: Armed, fd_ready: bool, exited: bool, now: float) -> str | None:
    """What the supervisor's wake-up means for this run: 'done' (PID 1 says every result
    is written), 'exited' (PID 1 ended without saying so), 'timeout', or None (nothing yet)."""
    if exited and not fd_ready:  # it may have said so just before it ended
        fd_ready = bool(select.select([armed.done_r], [], [], 0)[0])
    if fd_ready:
        return "done" if os.read(armed.done_r, 1) else "exited"
    if exited:
        return "exited"
    if now >= armed.deadline:
        return "timeout"
    return None


def collect(armed: Armed, outcome: str) -> dict[str, Any]:
    """The raw observations of a fired run, once `outcome_of` has said how it ended. A run
    that timed out is killed first; one that ended without finishing is reaped for its
    exit status."""
    limits = armed.limits
    timed_out = outcome == "timeout"
    if timed_out:
        kill(armed)
    if outcome != "done":  # it ended (or was killed) without finishing: its status says how
        reap(armed, block=True)
    elif armed.cgroup is None:  # resource use comes from PID 1's rusage: end it and reap it
        kill(armed)
        reap(armed, block=True)
        armed.status = 0
    wall = time.monotonic() - armed.t0
    cg = armed.cgroup
    leftover = True
    if outcome != "done" and cg is not None and not armed.reaped:
        leftover = cg.kill_all()
    events_text, _ = _read_all(armed.fds["events"], 16 << 20)
    stdout, out_trunc = _read_all(armed.fds["stdout"], limits.output_bytes)
    stderr, err_trunc = _read_all(armed.fds["stderr"], limits.output_bytes)
    stats = cg.stats() if cg is not None else {}
    if armed.rusage is not None and "peak_memory_mb" not in stats:
        stats["peak_memory_mb"] = armed.rusage.ru_maxrss / 1024
    if armed.rusage is not None and "cpu_time_s" not in stats:
        stats["cpu_time_s"] = armed.rusage.ru_utime + armed.rusage.ru_stime
    return {
        "events": events_text.splitlines(),
        "stdout": stdout,
        "stderr": stderr,
        "output_truncated": out_trunc or err_trunc,
        "exit": armed.status if armed.status is not None else 0,
        "timed_out": timed_out,
        "wall_time_s": wall,
        "tree_killed": leftover,
        **stats,
    }


def arming_failure(armed: Armed) -> str | None:
    """Why a jail that ended before its submission arrived could not be set up, if it said."""
    if armed.status != SANDBOX_FAILURE_EXIT:
        return None
    text, _ = _read_all(armed.fds["events"], 1 << 16)
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("e") == "sandbox_error":
                return f"could not build the run's jail: {event.get('msg', '')}"
    return "could not build the run's jail"


def kill(armed: Armed) -> None:
    """SIGKILL the run. With a PID namespace, PID 1's death ends every process of the run
    (the kernel's doing); without one, the cgroup or the process group is killed too."""
    if not armed.killed:
        armed.killed = True
        if armed.cgroup is not None and armed.limits.cpus is not None:
            # a throttled process cannot run its own exit until its next slice: lift the
            # cap so that a capped fork bomb dies at once (the next run rewrites it)
            with contextlib.suppress(OSError):
                armed.cgroup.uncap_cpu()
        if armed.cgroup is not None and armed.cgroup.version == 2:
            with contextlib.suppress(OSError):
                armed.cgroup.kill_all(timeout=0)
        if not armed.reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(armed.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(armed.pid, signal.SIGKILL)  # the fallback's process group (no-op in a PID namespace)


def reap(armed: Armed, block: bool = False) -> bool:
    """Collect PID 1's exit status; True once it is reaped."""
    if armed.reaped:
        return True
    try:
        pid, st, ru = os.wait4(armed.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        armed.reaped = True
        return True
    if pid == 0:
        return False
    armed.reaped = True
    armed.status = os.waitstatus_to_exitcode(st)
    armed.rusage = ru
    return True


def release(env: Environment, armed: Armed) -> bool:
    """Kill whatever is left of the run; once PID 1 is reaped (True), give its cgroup and
    user id back and close its descriptors. Call again later while it returns False."""
    kill(armed)
    for attr in ("request_w", "done_r"):
        fd = getattr(armed, attr)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(armed, attr, -1)
    if not reap(armed):
        return False
    if armed.cgroup is not None:
        if not env.template:  # no PID namespace: children may outlive PID 1
            armed.cgroup.kill_all()
        env.cgroups.release(armed.cgroup)
        armed.cgroup = None
    if armed.uid is not None and env.uids is not None:
        env.uids.give_back(armed.uid)
        armed.uid = None
    _close_all([*armed.fds.values(), armed.pidfd])
    armed.fds = {}
    armed.pidfd = -1
    return True


def _close_all(fds: Any) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
