"""What the pool reuses from run to run must carry nothing of one run into the next: the
template root (shared, read-only), each slot's cgroup (emptied, limits rewritten,
counters reset), user ids (recycled once a run is over). Each case alternates hostile
and plain runs often enough that every slot of the pool is reused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlvr.sandbox import Limits, SandboxPool, execute, execute_many
from rlvr.sandbox import uids as uid_blocks
from rlvr.types import RunStatus

from .test_escape import FAST, assert_host_clean

ROUNDS = 4  # the pool keeps 2 spares: each slot comes round at least twice


def test_no_file_reaches_the_next_run(pool: SandboxPool) -> None:
    writer = (
        "import os\nfor d in ('/tmp', '/sandbox', '/dev/shm'):\n"
        "    try:\n        open(d + '/left-behind', 'w').write('x')\n    except OSError:\n        pass\n"
        "def f():\n    return 1\n"
    )
    reader = (
        "import os\ndef f():\n"
        "    return [d for d in ('/tmp', '/sandbox', '/dev/shm') if os.path.exists(d + '/left-behind')]\n"
    )
    for _ in range(ROUNDS):
        assert execute(writer, ["assert f() == 1"], FAST, pool=pool).passed == 1
        r = execute(reader, ["assert f() == []"], FAST, pool=pool)
        assert r.passed == 1, r.tests[0].message


def test_no_process_reaches_the_next_run(pool: SandboxPool) -> None:
    """A daemon left by one run (detached, ignoring signals) is gone before the slot is
    used again: the next run's /proc shows its own processes only."""
    daemon = (
        "import os, signal, time\n"
        "if os.fork() == 0:\n    os.setsid()\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    if os.fork() == 0:\n        time.sleep(10 ** 6)\n    os._exit(0)\n"
        "def f():\n    return 1\n"
    )
    lister = "import os\ndef f():\n    return len([p for p in os.listdir('/proc') if p.isdigit()])\n"
    for _ in range(ROUNDS):
        assert execute(daemon, ["assert f() == 1"], FAST, pool=pool).passed == 1
        r = execute(lister, ["assert f() <= 2"], Limits(timeout_s=2, parallel_tests=1), pool=pool)
        assert r.passed == 1, r.tests[0].message  # PID 1 and the test's own process
    assert_host_clean(pool)


def test_memory_peak_and_cpu_time_do_not_carry_over(pool: SandboxPool) -> None:
    """Peak memory and CPU time are the run's own, though its cgroup served runs before."""
    heavy = (
        "import time\nblock = bytearray(300 * 2 ** 20)\nfor i in range(0, len(block), 4096):\n    block[i] = 1\n"
        "t = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\ndef f():\n    return 1\n"
    )
    light = "def f():\n    return 1\n"
    for _ in range(ROUNDS):
        h = execute(heavy, ["assert f() == 1"], Limits(timeout_s=5, memory_mb=512), pool=pool)
        assert h.passed == 1 and h.peak_memory_mb > 250 and h.cpu_time_s >= 0.25, h
        small = execute(light, ["assert f() == 1"], FAST, pool=pool)
        assert small.passed == 1 and small.peak_memory_mb < 100 and small.cpu_time_s < 0.2, small


def test_limits_of_one_run_do_not_carry_over(pool: SandboxPool) -> None:
    """A run with low limits, then one with the defaults on the same slots: each gets its
    own memory cap and process limit."""
    alloc = (
        "def f():\n    block = bytearray(200 * 2 ** 20)\n    block[::4096] = b'1' * len(block[::4096])\n    return 1\n"
    )
    forks = (
        "import os, time\ndef f():\n    pids = []\n    for _ in range(12):\n"
        "        pid = os.fork()\n        if pid == 0:\n            time.sleep(0.5)\n            os._exit(0)\n"
        "        pids.append(pid)\n    return len(pids)\n"
    )
    low = Limits(timeout_s=3, memory_mb=64, max_processes=6, parallel_tests=1)
    default = Limits(timeout_s=3)
    for _ in range(ROUNDS // 2):
        assert execute(alloc, ["assert f() == 1"], low, pool=pool).status is RunStatus.MEMORY
        assert execute(forks, ["assert f() == 12"], low, pool=pool).passed == 0
        assert execute(alloc, ["assert f() == 1"], default, pool=pool).passed == 1
        assert execute(forks, ["assert f() == 12"], default, pool=pool).passed == 1
    assert_host_clean(pool)


def test_a_cpu_cap_holds_over_all_processes_of_a_run_and_does_not_carry_over(pool: SandboxPool) -> None:
    """`cpus` caps the run's processes together (three spinning for 0.6 s of wall time
    get a quarter of a core between them), and the next run on the same slot is uncapped."""
    if not pool.protections.get("cpu cap per run (limits.cpus)"):
        pytest.skip("no CPU controller for the sandbox's cgroups on this machine")
    spin = (
        "import os, time\nparent = os.getpid()\nos.fork()\nif os.getpid() == parent:\n    os.fork()\n"
        "t = time.monotonic()\nwhile time.monotonic() - t < 0.6:\n    pass\n"
        "if os.getpid() != parent:\n    os._exit(0)\ndef f():\n    return 1\n"
    )
    for _ in range(ROUNDS // 2):
        capped = execute(spin, ["assert f() == 1"], Limits(timeout_s=5, cpus=0.25, parallel_tests=1), pool=pool)
        assert capped.passed == 1 and capped.cpu_time_s <= 0.25 * capped.wall_time_s + 0.05, capped
        free = execute(spin, ["assert f() == 1"], Limits(timeout_s=5, parallel_tests=1), pool=pool)
        assert free.passed == 1 and free.cpu_time_s > 0.6, free  # about 1.2 s on two idle cores
    assert_host_clean(pool)


def test_a_capped_fork_bomb_is_torn_down_at_its_time_limit(pool: SandboxPool) -> None:
    """A throttled process cannot run its own exit until its next slice of CPU: the cap is
    lifted when a run is killed, so a fork bomb held to 1% of a core still ends on time
    (before that fix these calls took 1 to 5 s, each slower than the last)."""
    if not pool.protections.get("cpu cap per run (limits.cpus)"):
        pytest.skip("no CPU controller for the sandbox's cgroups on this machine")
    bomb = "import os\nfor _ in range(5):\n    os.fork()\nwhile True:\n    pass\n"
    limits = Limits(timeout_s=0.5, cpus=0.01, max_processes=64)
    for _ in range(3):
        t = time.monotonic()
        r = execute(bomb, ["assert True"], limits, pool=pool)
        assert r.status is RunStatus.TIMEOUT and time.monotonic() - t < 1.0, (r.status, time.monotonic() - t)
    assert_host_clean(pool)


def test_runs_at_once_have_their_own_user_ids_and_process_limits(pool: SandboxPool) -> None:
    """Runs side by side have distinct user ids from the server's block, so a run that
    holds its whole process limit does not take a process from the other."""
    hog = (
        "import os, time\nheld = []\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        time.sleep(10)\n        os._exit(0)\n    held.append(pid)\n"
        "os.kill(held.pop(), 9)\nos.wait()\n"  # one slot back, for the test's own process
        "time.sleep(0.8)\nprint(os.getuid())\ndef f():\n    return len(held) > 0\n"
    )
    worker = (
        "import os, time\ntime.sleep(0.2)\nprint(os.getuid())\npids = []\nfor _ in range(8):\n"
        "    pid = os.fork()\n    if pid == 0:\n        time.sleep(0.2)\n        os._exit(0)\n    pids.append(pid)\n"
        "def f():\n    return len(pids)\n"
    )
    limits = Limits(timeout_s=4, max_processes=16, parallel_tests=1)
    results = execute_many([(hog, ["assert f() == True"]), (worker, ["assert f() == 8"])], limits, workers=2, pool=pool)
    assert [r.passed for r in results] == [1, 1], [r.tests[0].message for r in results]
    ids = [int(r.stdout.split()[0]) for r in results]
    assert ids[0] != ids[1]
    assert all(uid_blocks.BASE <= i < uid_blocks.BASE + uid_blocks.BLOCKS * uid_blocks.BLOCK_SIZE for i in ids)
    assert_host_clean(pool)


def test_user_id_blocks_are_held_by_one_server_at_a_time(tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = uid_blocks.UidBlock(str(tmp_path), start=7)
    b = uid_blocks.UidBlock(str(tmp_path), start=7)  # block 7 is held: the next one
    assert (a.index, b.index) == (7, 8) and b.first == a.first + uid_blocks.BLOCK_SIZE
    first = [a.take() for _ in range(3)]
    assert first == [a.first, a.first + 1, a.first + 2]
    a.give_back(first[1])
    taken = {a.take() for _ in range(uid_blocks.BLOCK_SIZE - 3)} | {first[0], first[2]}
    assert len(taken) == uid_blocks.BLOCK_SIZE - 1 and a.in_use == uid_blocks.BLOCK_SIZE - 1
    assert a.take() == first[1]  # the only one free
    with pytest.raises(uid_blocks.UidError, match="in use"):
        a.take()
    a.close()  # the lock goes with the descriptor (as when a server dies)
    c = uid_blocks.UidBlock(str(tmp_path), start=7)
    assert c.index == 7
    b.close()
    c.close()


# ---- a machine without writable cgroups (as on some container images) ------------------


@pytest.fixture(scope="module")
def pool_without_cgroups() -> Iterator[SandboxPool]:
    old = os.environ.get("RLVR_SANDBOX_NO_CGROUPS")
    os.environ["RLVR_SANDBOX_NO_CGROUPS"] = "1"
    try:
        with SandboxPool(2) as p:
            yield p
    finally:
        if old is None:
            os.environ.pop("RLVR_SANDBOX_NO_CGROUPS", None)
        else:
            os.environ["RLVR_SANDBOX_NO_CGROUPS"] = old


def test_without_cgroups_limits_still_hold(pool_without_cgroups: SandboxPool) -> None:
    pool = pool_without_cgroups
    cg = [k for k in pool.protections if k.startswith("cgroup")]
    assert cg and not pool.protections[cg[0]], pool.protections
    assert pool.protections["rlimits (address space, cpu, processes, files, file size, core)"]
    memory = execute("x = bytearray(2 * 1024 ** 3)\ndef f():\n    return 1\n", ["assert f() == 1"], FAST, pool=pool)
    assert memory.status is RunStatus.MEMORY, memory
    spin = execute("def f():\n    while True:\n        pass\n", ["assert f() == 1"], FAST, pool=pool)
    assert spin.status is RunStatus.TIMEOUT and spin.wall_time_s < FAST.timeout_s + 1, spin
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        break\ndef f():\n    return 1\n"
    assert execute(bomb, ["assert f() == 1"], FAST, pool=pool).status is not RunStatus.SANDBOX_ERROR
    ok = execute("def f():\n    return 1\n", ["assert f() == 1"], FAST, pool=pool)
    assert ok.passed == 1 and ok.cpu_time_s > 0  # CPU time from rusage instead
    assert_host_clean(pool)


def test_sandbox_check_says_when_cgroups_are_missing() -> None:
    env = {**os.environ, "RLVR_SANDBOX_NO_CGROUPS": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "sandbox", "check"], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == 1, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("cgroup"))
    assert "NOT ACTIVE" in line
    assert "rlimits" in r.stdout and "memory and time limits hold through rlimits" in r.stdout


def test_read_only_paths_under_tmp_stay_visible_over_each_fresh_tmp(tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """A checkout or virtual environment under /tmp (CI clones there) must stay readable
    though each run mounts a fresh /tmp: RLVR_SANDBOX_SHOW adds such a directory, which is
    shown again, read-only, on top of the run's /tmp; nothing else of the host's /tmp is."""
    import uuid

    base = f"/tmp/rlvr-show-{uuid.uuid4().hex[:8]}"
    os.makedirs(base)
    sibling = f"/tmp/rlvr-sibling-{uuid.uuid4().hex[:8]}"
    with open(f"{base}/data.txt", "w") as f:
        f.write("shown")
    with open(sibling, "w") as f:
        f.write("secret")
    old = os.environ.get("RLVR_SANDBOX_SHOW")
    os.environ["RLVR_SANDBOX_SHOW"] = base
    try:
        with SandboxPool(1) as pool:
            code = (
                "import os\ndef f():\n"
                f"    seen = open({base + '/data.txt'!r}).read()\n"
                "    try:\n"
                f"        open({base + '/new.txt'!r}, 'w').write('x')\n"
                "        wrote = True\n"
                "    except OSError:\n"
                "        wrote = False\n"
                "    open('/tmp/own.txt', 'w').write('mine')\n"
                f"    return seen, wrote, os.path.exists({sibling!r}), {os.path.basename(base)!r} in os.listdir('/tmp')\n"
            )
            for _ in range(3):  # own.txt of the run before is gone each time (no FileExistsError: 'w')
                r = execute(code, ["assert f() == ('shown', False, False, True)"], FAST, pool=pool)
                assert r.passed == 1, r.tests[0].message
    finally:
        if old is None:
            os.environ.pop("RLVR_SANDBOX_SHOW", None)
        else:
            os.environ["RLVR_SANDBOX_SHOW"] = old
        os.remove(sibling)
        for p in os.listdir(base):
            os.remove(os.path.join(base, p))
        os.rmdir(base)


def test_paths_reached_through_symlinks_are_visible_under_the_name_used(tmp_path: Path) -> None:
    """A shown directory reached through a symlink (a virtual environment linked into
    /tmp, or from /tmp to elsewhere) is mounted at its real path, and the name the
    interpreter uses is a symlink to it inside the jail: before, the name was missing, so
    a venv's site-packages vanished and pytest inside collected nothing. Checked both with
    the name under /tmp (made again in each run's fresh /tmp) and outside it, and end to
    end with an interpreter started through a linked virtual environment."""
    import uuid

    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "data.txt").write_text("through the link")
    in_tmp = tmp_path / "link"
    in_tmp.symlink_to(real)
    outside = Path(f"/var/tmp/rlvr-link-{uuid.uuid4().hex[:8]}")
    outside.symlink_to(real)
    old = os.environ.get("RLVR_SANDBOX_SHOW")
    os.environ["RLVR_SANDBOX_SHOW"] = f"{in_tmp}:{outside}"
    try:
        with SandboxPool(1) as pool:
            code = "import os\ndef f(p):\n    return os.path.islink(p), open(p + '/sub/data.txt').read()\n"
            tests = [f"assert f({str(p)!r}) == (True, 'through the link')" for p in (in_tmp, outside)]
            for _ in range(2):  # the link under /tmp is there again in the next run's fresh /tmp
                r = execute(code, tests, FAST, pool=pool)
                assert r.passed == 2, [t.message for t in r.tests]
    finally:
        if old is None:
            os.environ.pop("RLVR_SANDBOX_SHOW", None)
        else:
            os.environ["RLVR_SANDBOX_SHOW"] = old
        outside.unlink()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "only_in_this_venv.py").write_text("X = 42\n")
    linked = tmp_path / "venv-link"
    linked.symlink_to(venv)
    here = Path(__file__).resolve().parents[2]
    script = (
        "from rlvr.sandbox import SandboxPool, execute\n"
        "with SandboxPool(1) as pool:\n"
        "    r = execute('import only_in_this_venv\\ndef f():\\n    return only_in_this_venv.X\\n',"
        " ['assert f() == 42'], pool=pool)\n"
        "print(r.passed, r.tests[0].message)\n"
    )
    deps = os.pathsep.join([str(here), *sys.path[1:]])
    done = subprocess.run(
        [str(linked / "bin" / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": deps},
    )
    assert done.stdout.startswith("1 "), done.stdout + done.stderr
