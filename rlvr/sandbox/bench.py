"""Sandbox cost: CPU per run, throughput and latency, rlvr's pool beside per-run baselines.

    rlvr sandbox bench [--n 300] [--humaneval] [--json PATH]
    (or: python bench/sandbox_throughput.py)
    python bench/sandbox_throughput.py --smoke   # 5 runs per cell, 4 HumanEval problems (the test suite)

First, the structural floor: the CPU of one run's structure (fork + exit; as PID 1 of a
new PID namespace; in a cgroup; with its own mount, IPC and UTS namespaces; its three
mounts; dropped privileges; the seccomp filter; one test process forked), step by step,
in a process holding what the fork server holds, with the jail's own functions, each
step checked inside the child before it is timed (`structural_floor`); rlvr's CPU per
run is then printed as a multiple of it (goal: <= 1.5x). A step this machine cannot do
is one line saying why, never a figure.

For a small Python function with three asserts, at concurrency 1 and 2, it prints runs
per second, p50/p99 latency and CPU milliseconds per run for:
- fork + exit of a warm interpreter (the floor: what any fresh process costs),
- in-process exec (no isolation at all),
- subprocess.run([python, "-c", ...]) per run (what SandboxFusion does),
- bwrap --unshare-all ... python per run (needs Debian's bubblewrap),
- rlvr's pool with shared test isolation (the default) and with process isolation.
CPU per run is measured from the pool's own cgroup (the server and every jail; created
for the bench) or from rusage for the baselines; all in the same run, side by side.
With --humaneval it also runs HumanEval's 164 canonical solutions with their full tests
at concurrency 2 through rlvr, one bwrap per problem and one subprocess per problem.
Timings on a shared machine are noisy: the table shows medians; compare within one run.
A run that fails (a baseline's, or a canonical solution through any method) is an error
(BaselineFailed; the CLI: exit 3, one line), never a figure. --smoke prints the results as
one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.sandbox import Limits, SandboxPool, execute
from rlvr.sandbox.pool import SandboxError

CODE = "def add(a, b):\n    return a + b\n"
TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
SCRIPT = CODE + "\n".join(TESTS) + "\n"
SMOKE_N, SMOKE_HUMANEVAL = 5, 4
"""--smoke: runs per cell, and HumanEval problems (the first ones) per method."""
BWRAP = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]


def in_process() -> None:
    ns: dict[str, object] = {}
    exec(SCRIPT, ns)


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
                jail.mount_run_dirs(DEFAULT.work_mb, DEFAULT.tmp_mb, uid, env.jail_cfg.under_tmp)
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


def _print_structure(floor: dict[str, Any]) -> None:
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


class BaselineFailed(SandboxError):
    """A baseline's run did not do the work: its time is not a figure (the CLI: exit 3, one line)."""


def _done(what: str, r: subprocess.CompletedProcess[bytes], check: bool) -> bool:
    if check and r.returncode != 0:
        last = (r.stderr.decode(errors="replace").strip().splitlines() or ["(no output)"])[-1]
        raise BaselineFailed(f"{what}: a run failed (exit {r.returncode}): {last[:300]}")
    return r.returncode == 0


def plain_subprocess(script: str = SCRIPT, timeout: float = 30, *, check: bool = False) -> bool:
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=timeout)
    return _done("subprocess.run(python -c)", r, check)


def bwrap_argv(script: str) -> list[str]:
    """bwrap with a private /tmp, the interpreter bound back in when it lives under /tmp
    (a checkout's virtual environment there, as in CI's clone): hidden, every run would
    fail at exec and be timed as a fast one."""
    keep = {os.path.realpath(p) for p in (sys.prefix, os.path.dirname(sys.executable), sys.base_prefix)}
    rebind = [a for p in sorted(keep) if p == "/tmp" or p.startswith("/tmp/") for a in ("--ro-bind", p, p)]
    return [*BWRAP, "--tmpfs", "/tmp", *rebind, sys.executable, "-c", script]


def bwrap(script: str = SCRIPT, timeout: float = 30, *, check: bool = False) -> bool:
    r = subprocess.run(bwrap_argv(script), capture_output=True, timeout=timeout)
    return _done("bwrap --unshare-all python", r, check)


class CpuMeter:
    """CPU seconds spent by this process and its waited-for children, and by the
    processes of a cgroup made for the pool's server (so every jail is counted)."""

    def __init__(self) -> None:
        self.dir: str | None = None
        self.v2 = os.path.isfile("/sys/fs/cgroup/cgroup.controllers")
        with contextlib.suppress(OSError):
            if os.geteuid() == 0:
                own = _own_cgroup("cpuacct" if not self.v2 else None)
                base = "/sys/fs/cgroup" if self.v2 else "/sys/fs/cgroup/cpuacct"
                d = os.path.join(base, own.lstrip("/"), f"rlvr-bench-{os.getpid()}")
                os.makedirs(d, exist_ok=True)
                self.dir = d

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Children started within are created in the meter's cgroup."""
        if self.dir is None:
            yield
            return
        before = _own_cgroup("cpuacct" if not self.v2 else None)
        base = "/sys/fs/cgroup" if self.v2 else "/sys/fs/cgroup/cpuacct"
        _write(os.path.join(self.dir, "cgroup.procs"), str(os.getpid()))
        try:
            yield
        finally:
            _write(os.path.join(base, before.lstrip("/"), "cgroup.procs"), str(os.getpid()))

    def group_cpu(self) -> float | None:
        if self.dir is None:
            return None
        if self.v2:
            with open(os.path.join(self.dir, "cpu.stat")) as f:
                usage = dict(line.split() for line in f if line.strip())
            return int(usage["usage_usec"]) / 1e6
        with open(os.path.join(self.dir, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    def close(self) -> None:
        if self.dir:
            with contextlib.suppress(OSError):
                os.rmdir(self.dir)


def _own_cgroup(controller: str | None) -> str:
    with open("/proc/self/cgroup") as f:
        for line in f.read().splitlines():
            hid, ctrls, path = line.split(":", 2)
            if (controller is None and hid == "0") or (controller and controller in ctrls.split(",")):
                return path
    return "/"


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _process_cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def measure(fn: Callable[[], Any], n: int, concurrency: int, cpu: Callable[[], float | None]) -> dict[str, float]:
    """Runs per second, p50/p99 ms and CPU ms per run (None when it cannot be measured)."""
    lat: list[float] = []

    def one(_: int) -> None:
        t = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - t)

    for _ in range(min(10, n)):  # warm-up
        fn()
    c0 = cpu()
    t0 = time.perf_counter()
    if concurrency == 1:
        for k in range(n):
            one(k)
    else:
        with ThreadPoolExecutor(concurrency) as ex:
            list(ex.map(one, range(n)))
    wall = time.perf_counter() - t0
    c1 = cpu()
    lat.sort()
    out = {
        "runs_per_s": n / wall,
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000,
    }
    if c0 is not None and c1 is not None:
        out["cpu_ms"] = (c1 - c0) / n * 1000
    return out


def _humaneval(
    concurrency: int, rows: dict[str, Callable[[dict[str, Any]], bool]], limit: int | None = None
) -> dict[str, Any]:
    """Seconds for each method to run the canonical solutions (the first `limit`) with
    their full tests. A canonical solution passes: a method under which one did not did
    not do the work, and its time is not a figure (BaselineFailed)."""
    from rlvr.tasks.humaneval import load_humaneval

    problems = load_humaneval()[:limit]
    out: dict[str, Any] = {}
    for name, fn in rows.items():
        t0 = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as ex:
            ok = list(ex.map(fn, problems))
        out[name] = {"seconds": time.perf_counter() - t0, "passed": sum(ok), "problems": len(problems)}
        print(f"  {name:<36}{out[name]['seconds']:>9.2f} s{sum(ok):>6}/{len(problems)} passed", flush=True)
        if sum(ok) != len(problems):
            failed = [p["task_id"] for p, good in zip(problems, ok, strict=True) if not good]
            raise BaselineFailed(
                f"HumanEval through {name}: {len(failed)} of {len(problems)} canonical solutions failed "
                f"({', '.join(failed[:5])}): its time is not a figure"
            )
    return out


def _row(name: str, conc: int, res: dict[str, float]) -> None:
    cpu_ms = f"{res['cpu_ms']:.2f}" if "cpu_ms" in res else "n/a"
    line = f"{name:<34}{conc:>5}{res['runs_per_s']:>10.1f}{res['p50_ms']:>10.2f}{res['p99_ms']:>10.2f}"
    print(f"{line}{cpu_ms:>12}", flush=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300, help="runs per cell")
    ap.add_argument("--humaneval", action="store_true", help="also HumanEval's 164 canonical solutions end to end")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_N} runs per cell and {SMOKE_HUMANEVAL} HumanEval problems; the results as JSON on the last line",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.n, args.humaneval = min(args.n, SMOKE_N), True
    meter = CpuMeter()
    # CPU per run counts everything: this process (the caller: building the request,
    # deciding verdicts, spawning the baselines) and every process it starts (the pool's
    # server and jails, subprocess and bwrap), all in a cgroup made for the bench.
    cpu: Callable[[], float | None] = meter.group_cpu if meter.dir is not None else _process_cpu
    pools: dict[str, SandboxPool] = {}
    try:
        return _bench(args, meter, cpu, pools)
    finally:  # a failed run (BaselineFailed) leaves no pool or cgroup behind
        for pool in pools.values():
            pool.close()
        meter.close()


def _bench(
    args: argparse.Namespace, meter: CpuMeter, cpu: Callable[[], float | None], pools: dict[str, SandboxPool]
) -> dict[str, Any]:
    with meter.inside():
        pools.update({mode: SandboxPool(2).start() for mode in ("shared", "process")})
        print("protections:", ", ".join(k for k, v in pools["shared"].protections.items() if v))
        structure = structural_floor(args.n)
        _print_structure(structure)

        def rlvr(mode: str) -> Callable[[], None]:
            limits = Limits(timeout_s=5, test_isolation=mode)

            def run() -> None:
                r = execute(CODE, TESTS, limits, pool=pools[mode])
                assert r.passed == 3, r

            return run

        have_bwrap = shutil.which("bwrap") is not None
        rows: list[tuple[str, Callable[[], Any] | None]] = [
            ("in-process exec (no isolation)", in_process),
            ("subprocess.run(python -c)", lambda: plain_subprocess(check=True)),
            ("bwrap --unshare-all python", (lambda: bwrap(check=True)) if have_bwrap else None),
            ("rlvr pool, shared tests", rlvr("shared")),
            ("rlvr pool, process per test", rlvr("process")),
        ]
        results: dict[str, dict[str, float]] = {}
        print(f"\n{'method':<34}{'conc':>5}{'runs/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'CPU ms/run':>12}")
        results["fork + exit (floor) @1"] = fork_exit_floor(args.n)
        _row("fork + exit (floor)", 1, results["fork + exit (floor) @1"])
        for conc in (1, 2):
            for name, fn in rows:
                if fn is None:
                    print(f"{name:<34}{conc:>5}   not installed (apt-get install bubblewrap)")
                    continue
                results[f"{name} @{conc}"] = measure(fn, args.n, conc, cpu)
                _row(name, conc, results[f"{name} @{conc}"])
    print()
    floor = results["fork + exit (floor) @1"].get("cpu_ms")
    over_structure: dict[str, float] = {}
    for conc in (1, 2):
        ours = results[f"rlvr pool, shared tests @{conc}"]
        base = results.get(f"bwrap --unshare-all python @{conc}")
        if "cpu_ms" in ours:
            line = f"concurrency {conc}: rlvr CPU per run {ours['cpu_ms']:.2f} ms"
            if structure["cpu_ms"]:
                over_structure[str(conc)] = ours["cpu_ms"] / structure["cpu_ms"]
                line += f" = {over_structure[str(conc)]:.2f}x the structural floor ({structure['cpu_ms']:.2f} ms)"
                line += ", goal <= 1.5x"
            else:
                line += " (no structural floor measured here)"
            if floor:
                line += f"; {ours['cpu_ms'] / floor:.1f}x the fork + exit floor"
            print(line)
        if base:
            print(f"concurrency {conc}: rlvr throughput = {ours['runs_per_s'] / base['runs_per_s']:.1f}x bwrap's")
    print(f"concurrency 1: rlvr p50 {results['rlvr pool, shared tests @1']['p50_ms']:.2f} ms, target <= 4 ms")
    out: dict[str, Any] = {
        "n": args.n,
        "cells": results,
        "protections": pools["shared"].protections,
        "structural_floor": structure,
        "rlvr_over_structural_floor": over_structure,
    }
    if args.humaneval:
        count = SMOKE_HUMANEVAL if args.smoke else 164
        print(f"\nHumanEval: {count} canonical solutions with their full tests, concurrency 2")
        from rlvr.tasks.humaneval import humaneval_tests

        he_limits = Limits(timeout_s=10)

        def solution(p: dict[str, Any]) -> str:
            return str(p["prompt"] + p["canonical_solution"])

        def he_rlvr(p: dict[str, Any]) -> bool:
            r = execute(solution(p), humaneval_tests(p["test"], p["entry_point"]), he_limits, pool=pools["shared"])
            return r.total > 0 and r.passed == r.total

        def he_script(p: dict[str, Any]) -> str:
            return solution(p) + "\n" + p["test"] + f"\ncheck({p['entry_point']})\n"

        he_rows: dict[str, Callable[[dict[str, Any]], bool]] = {
            "rlvr pool (per-test verdicts)": he_rlvr,
            "subprocess per problem": lambda p: plain_subprocess(he_script(p)),
        }
        if have_bwrap:
            he_rows["bwrap per problem"] = lambda p: bwrap(he_script(p))
        out["humaneval"] = _humaneval(2, he_rows, SMOKE_HUMANEVAL if args.smoke else None)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    if args.smoke:
        print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
