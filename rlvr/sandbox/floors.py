"""The floors `rlvr sandbox bench` prints beside rlvr's CPU per run, each measured in a
process of its own that holds what the fork server holds: fork + exit of a warm
interpreter (`fork_exit_floor`), and the structure of one run step by step with the
jail's own functions, each step checked inside the child before it is timed
(`structural_floor`). A step this machine cannot do is a row with its reason, never a
figure; a measurement that fails is `BaselineFailed`."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from rlvr.sandbox.pool import SandboxError


class BaselineFailed(SandboxError):
    """A baseline's run did not do the work: its time is not a figure (the CLI: exit 3, one line)."""


FLOOR = """
import gc, json, os, resource, sys, time
from rlvr.sandbox import server
server._preload()
gc.freeze()
n = int(sys.argv[1])
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
lat = []
c0 = cpu()
for _ in range(n):
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    lat.append(time.perf_counter() - t)
print(json.dumps({"cpu_s": cpu() - c0, "lat": lat}))
"""


def fork_exit_floor(n: int) -> dict[str, float]:
    """Fork + exit of a warm interpreter holding what the fork server holds, n times, in
    a process of its own: the least any run in a fresh process costs."""
    r = subprocess.run([sys.executable, "-c", FLOOR, str(n)], capture_output=True, text=True, check=True)
    data = json.loads(r.stdout)
    lat = sorted(data["lat"])
    return {
        "runs_per_s": n / sum(lat),
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[min(n - 1, int(0.99 * n))] * 1000,
        "cpu_ms": data["cpu_s"] / n * 1000,
    }


# The structure of one run, step by step, in a process holding what the fork server holds
# (its modules, its environment: the template root, the network namespace, the seccomp
# program, a cgroup and a user id), with the jail's own functions. Each configuration adds
# one step to the one before; a step this machine cannot do is left out, with its reason,
# and the rows below go on without it (as the jail does). Each step is first done once
# with checks inside the child (PID 1? its own hostname, /tmp, /sandbox and /proc? its
# user id, no_new_privs? seccomp mode 2?), reported through its exit status, so a step
# that silently did nothing fails here instead of being timed. Then every configuration
# is timed, round after round (interleaved, so a busy machine weighs on all alike):
# parent + child CPU of each fork, from rusage. Only the modules the server holds are
# imported here: each one more makes every fork dearer.
STRUCTURE = r"""
import gc, json, os, resource, signal, sys
from rlvr.sandbox import jail, server
from rlvr.sandbox.executor import DEFAULT, Environment
server._preload()
workdir, n = sys.argv[1], int(sys.argv[2])
STEPS = sys.argv[3].split(",")
host_ns = {k: os.readlink(f"/proc/self/ns/{k}") for k in ("ipc", "uts")}
hostname = os.uname().nodename
env = Environment.detect(workdir)
env.enter_template()
gc.freeze()
uid = env.uids.take() if env.uids is not None else os.getuid()
cg = env.cgroups.acquire(DEFAULT.run_memory_mb, DEFAULT.max_processes, DEFAULT.cpus)
no_ns = "no namespaces here (they need root with CAP_SYS_ADMIN)"
why_not = {"pidns": no_ns, "ns": no_ns, "mounts": no_ns} if env.forker is None else {}
if cg is None:
    why_not["cgroup"] = "no writable cgroup hierarchy here"
if not env.root:
    why_not["user"] = "not root: no user id to drop to"
if env.seccomp_program is None:
    why_not["seccomp"] = "no libseccomp (pyseccomp) here"
PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS = 21, 39

def need(ok, what):
    if not ok:
        raise AssertionError(what)

def child(steps, check, err):
    # one run's structure, in the forked child; never returns (exit 0: done, and checked)
    code = 1
    try:
        for k in steps:
            if k == "pidns":
                check and need(os.getpid() == 1, "not PID 1 of its PID namespace")
            elif k == "cgroup":
                cg.add(0)
                check and need(cg.pids(), "not in its cgroup")
            elif k == "ns":
                jail.enter_namespaces()
                check and need(os.uname().nodename == "sandbox", "no UTS namespace of its own")
            elif k == "mounts":
                jail.mount_run_dirs(
                    DEFAULT.work_mb, DEFAULT.tmp_mb, uid, env.jail_cfg.under_tmp, env.jail_cfg.links_under_tmp
                )
                if check:
                    for d, mb in (("/tmp", DEFAULT.tmp_mb), (jail.WORK_DIR, DEFAULT.work_mb)):
                        st = os.statvfs(d)
                        need(st.f_blocks * st.f_frsize == mb << 20, f"no fresh {mb} MiB tmpfs on {d}")
                    need(os.getcwd() == jail.WORK_DIR, "not in its work dir")
                    pids = [p for p in os.listdir("/proc") if p.isdigit()]
                    need("pidns" not in steps or pids == ["1"], f"its /proc shows other processes: {pids[:5]}")
                    for ns in host_ns if "ns" in steps else ():
                        need(os.readlink(f"/proc/self/ns/{ns}") != host_ns[ns], f"no {ns} namespace of its own")
            elif k == "user":
                jail.drop_privileges(uid)
                jail.set_pdeathsig(signal.SIGKILL)
                jail.apply_rlimits(
                    DEFAULT.memory_mb, DEFAULT.timeout_s, DEFAULT.open_files, DEFAULT.file_size_mb,
                    nproc=DEFAULT.max_processes,
                )
                if check:
                    need(os.getresuid() == (uid,) * 3 and os.getresgid() == (uid,) * 3, "still privileged")
                    need(os.getgroups() == [], "supplementary groups kept")
                    need(jail._libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "no no_new_privs")
                    need(resource.getrlimit(resource.RLIMIT_NPROC)[0] == DEFAULT.max_processes, "no rlimits")
            elif k == "seccomp":
                jail.load_seccomp_bpf(env.seccomp_program)
                if check and "mounts" in steps:
                    with open("/proc/self/status") as f:
                        mode = [x.split()[1] for x in f.read().splitlines() if x.startswith("Seccomp:")]
                    need(mode == ["2"], f"seccomp mode {mode} in /proc/self/status, not 2")
                check and need(jail._libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2, "no seccomp filter")
            elif k == "test":
                pid = os.fork()
                if pid == 0:
                    os._exit(0 if not check or "pidns" not in steps or os.getpid() == 2 else 1)
                _, status = os.waitpid(pid, 0)
                need(status == 0, f"the test process exited with status {status}")
            elif k != "fork":
                raise ValueError(f"unknown step {k}")
        code = 0
    except BaseException as e:
        if check:
            os.write(err, f"{type(e).__name__}: {e}".encode()[:500])
    finally:
        os._exit(code)

def fork(steps):
    return env.forker.fork() if "pidns" in steps else os.fork()

def checked(steps):
    # None when the steps are done and every check holds, else why not
    if cg is not None and not cg.is_empty():
        return "its cgroup is not empty before the run"
    tmp_before = os.statvfs("/tmp").f_blocks
    r, w = os.pipe()
    pid = fork(steps)
    if pid == 0:
        os.close(r)
        child(steps, True, w)
    os.close(w)
    msg = os.read(r, 1000).decode(errors="replace")
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if status != 0 or msg:
        return msg or f"exit status {status}"
    if os.uname().nodename != hostname:
        return "the host's hostname changed"
    if os.statvfs("/tmp").f_blocks != tmp_before:
        return "the run's mounts reached the server"
    return None

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

try:
    rows, active = [], []
    for k in STEPS:
        why = why_not.get(k) or checked([*active, k])
        if why:
            rows.append({"key": k, "unavailable": why})
            continue
        active = [*active, k]
        rows.append({"key": k, "steps": active})
    timed = [r for r in rows if "steps" in r]
    for r in timed:
        r["cpu_s"] = []
    for rnd in range(min(5, n) + n):
        for r in timed:
            c0 = cpu()
            pid = fork(r["steps"])
            if pid == 0:
                child(r["steps"], False, -1)
            _, status = os.waitpid(pid, 0)
            dt = cpu() - c0
            if status != 0:
                raise SystemExit(f"{r['key']}: a timed run failed (exit status {status})")
            if rnd >= min(5, n):
                r["cpu_s"].append(dt)
    print(json.dumps(rows))
finally:
    env.cgroups.cleanup()
"""

STRUCTURE_STEPS = {
    "fork": "fork + exit",
    "pidns": "... as PID 1 of a new PID namespace",
    "cgroup": "... in a cgroup of its own",
    "ns": "... with its own mount, IPC and UTS namespaces",
    "mounts": "... and its three mounts (/sandbox, /tmp, /proc)",
    "user": "... and dropped privileges (and rlimits)",
    "seccomp": "... and the seccomp filter loaded",
    "test": "... and one test process forked",
}
"""The steps of one run's structure, in the jail's order, each added to the ones above."""


def structural_floor(n: int) -> dict[str, Any]:
    """CPU ms per run of the structure of one run, step by step (`STRUCTURE_STEPS`, each
    row adding one step to the row above; parent + child CPU of the fork, mean and median
    over n runs), in a process holding what the fork server holds and doing each step
    with the jail's own functions. The last measured row is the structure, the floor of
    any run: `cpu_ms`. A step this machine cannot do (no namespaces, no cgroups, not
    root, no libseccomp) is a row with the reason (`unavailable`), never a figure, and
    the rows below go on without it, as the jail does; `without` lists them."""
    with tempfile.TemporaryDirectory(prefix="rlvr-structure-") as workdir:
        r = subprocess.run(
            [sys.executable, "-c", STRUCTURE, workdir, str(n), ",".join(STRUCTURE_STEPS)],
            capture_output=True,
            text=True,
        )
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BaselineFailed(f"the structural floor: exit {r.returncode}: {last[:300]}")
    steps: list[dict[str, Any]] = []
    for row in json.loads(r.stdout):
        step: dict[str, Any] = {"key": row["key"], "step": STRUCTURE_STEPS[row["key"]]}
        if "unavailable" in row:
            step["unavailable"] = row["unavailable"]
        else:
            step["cpu_ms"] = statistics.fmean(row["cpu_s"]) * 1000
            step["median_ms"] = statistics.median(row["cpu_s"]) * 1000
        steps.append(step)
    measured = [s for s in steps if "cpu_ms" in s]
    return {
        "n": n,
        "steps": steps,
        "cpu_ms": measured[-1]["cpu_ms"] if measured else None,
        "without": [s["key"] for s in steps if "unavailable" in s],
    }


def print_structure(floor: dict[str, Any]) -> None:
    print(
        f"\nthe structure of a run, step by step, in a process holding what the fork server holds\n"
        f"(each line adds one step to the one above; parent + child CPU of the fork, mean of {floor['n']}):"
    )
    last = max((i for i, s in enumerate(floor["steps"]) if "cpu_ms" in s), default=-1)
    for i, s in enumerate(floor["steps"]):
        name = s["step"] + (" = the structure" if i == last else "")
        if "cpu_ms" in s:
            print(f"  {name:<64}{s['cpu_ms']:>7.2f} ms", flush=True)
        else:
            print(f"  {name:<64}  not measured: {s['unavailable']}", flush=True)
    if floor["without"]:
        print("  (the rows below a step not measured go without it, as the jail here does)")
