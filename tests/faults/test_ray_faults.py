"""The Ray runner under faults, on a local Ray instance with a tiny model: a rollout
worker killed mid-generation, a hung one, the learner killed mid-run, the queue's
redis-server killed. Each run must end with every step, every group and every
trajectory id trained exactly once, counted in the trace store."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("CI") != "true",
    reason="redis-server is not installed (make redis)",
)
STEPS, PROMPTS, GROUP = 5, 2, 4


def _spawn(tmp_path: Path, name: str, *extra: str, sandboxed: bool = False) -> subprocess.Popen[str]:
    """A 5-step run of a tiny model on the toy domain (`sandboxed`: one whose reward is a
    verdict from the sandbox)."""
    from tests.integration.toy_env import write_exec_tasks, write_toy_tasks

    tasks = (write_exec_tasks if sandboxed else write_toy_tasks)(tmp_path / "toy.jsonl")
    args = [
        "model.name_or_path=tiny-random", "generation.max_new_tokens=24", f"train.prompts_per_step={PROMPTS}",
        "train.lr=1e-3", "eval.num_tasks=1", "eval.before_training=false", "eval.after_training=false",
        f"tasks.source={tasks}", "tasks.eval_fraction=0.25", f"algo.group_size={GROUP}", f"train.steps={STEPS}",
        "train.checkpoint_every=2", f"output_dir={tmp_path}", f"name={name}", "plugins=[tests.integration.toy_env]",
        "dist.backend=ray", *extra,
    ]  # fmt: skip
    cmd = [sys.executable, "-m", "rlvr.cli", "train", "examples/quickstart.yaml", *args, "--quiet"]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _procs(title: str, under: int | None = None) -> list[int]:
    """Pids whose command line (Ray's process title) starts with `title`; with `under`,
    only descendants of that process (the run's own Ray, not another's on this machine)."""
    cmds, parents = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmds[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue

    def inside(pid: int) -> bool:
        while pid > 1:
            if pid == under:
                return True
            pid = parents.get(pid, 0)
        return False

    return sorted(p for p, c in cmds.items() if c.startswith(title) and (under is None or inside(p)))


def _wait_for(cond: Callable[[], object], what: str, proc: subprocess.Popen[str], timeout: float = 300) -> object:
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = cond()
        if got:
            return got
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {what}: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"no {what} in time")


def _finish(proc: subprocess.Popen[str]) -> str:
    try:
        _, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"run did not finish: {err[-3000:]}") from None
    assert proc.returncode == 0, err[-5000:]
    return err


def _check_exactly_once(run: Path) -> list[dict]:
    """Every step once in the metrics; every group and trajectory id trained once in the
    trace store; the stream empty (all acknowledged)."""
    from rlvr.trace.parquet import read_table

    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if r["event"] == "step"]
    assert [r["step"] for r in steps] == list(range(1, STEPS + 1))
    traced = [r for r in read_table(str(run / "traces")).to_pylist() if r["trained"]]
    groups = {r["group_id"] for r in traced}
    ids = [(r["group_id"], r["sample"]) for r in traced]
    assert len(groups) == STEPS * PROMPTS and len(ids) == len(set(ids)) == STEPS * PROMPTS * GROUP
    assert sorted({r["step"] for r in traced}) == list(range(1, STEPS + 1))
    from rlvr.pipeline.redis_queue import QueueError, RedisQueue
    from rlvr.pipeline.redis_server import LocalRedis

    server = LocalRedis(run / "queue")
    for _ in range(100):  # the run's own server may still be writing its file out and exiting
        try:
            server.start()
            break
        except QueueError:
            time.sleep(0.1)
    try:
        q = RedisQueue(server.url, stream=f"rlvr:{run.name}")
        d = q.depth()
        q.close()
    finally:
        server.close()
    assert (d.waiting, d.pending) == (0, 0)
    return steps


def test_two_rollout_workers_and_the_learner_killed_mid_run(tmp_path: Path) -> None:
    """Two workers share the steps within the staleness bound; the learner, killed -9
    after checkpoint 2 with step 3 trained, is restarted by Ray and resumes from the
    checkpoint and the stream's backlog."""
    proc = _spawn(tmp_path, "two", "dist.rollout_workers=2", "rollout.mode=async", "rollout.max_staleness=1")
    run = tmp_path / "two"

    def after_checkpoint_2() -> list[int]:
        if not (run / "checkpoints" / "step-000002" / "state.json").is_file():
            return []
        lines = (run / "metrics.jsonl").read_text().splitlines()
        if sum('"event": "step"' in line for line in lines) < 3:
            return []
        return _procs("ray::LearnerRole.train", proc.pid)

    pids = _wait_for(after_checkpoint_2, "step 3 after checkpoint 2", proc)
    assert isinstance(pids, list)
    os.kill(pids[0], signal.SIGKILL)
    _finish(proc)
    steps = _check_exactly_once(run)
    assert {r["rollout/worker"] for r in steps} == {0.0, 1.0}  # both workers produced
    assert all(r["train/staleness_mean"] <= 1 for r in steps)  # the bound holds across processes
    assert any(r.get("rollout/from_queue_backlog") == 1.0 for r in steps[2:])  # trained from the stream
    versions = sorted(p.name for p in (run / "weights").iterdir())
    assert versions and len(versions) <= 3  # published per version, old ones pruned


def test_a_rollout_worker_the_sandbox_servers_and_the_redis_server_killed(tmp_path: Path) -> None:
    """The rollout worker runs its code on a sandbox worker packed beside it (a placement
    group), with a shared one as fallback. kill -9 of the rollout worker inside produce():
    Ray restarts it and runs the ticket again. After checkpoint 2, kill -9 of both
    sandbox servers (requests fail over, the servers are started again on new ports and
    found; no execution fails) and of the queue's redis-server (the driver starts it
    again on its files)."""
    extra = [
        "dist.rollout_workers=1", "dist.sandbox_workers=1", "dist.colocate_sandbox=true", "rollout.mode=async",
        "rollout.max_staleness=1",
    ]  # fmt: skip
    proc = _spawn(tmp_path, "killw", *extra, sandboxed=True)
    run = tmp_path / "killw"
    pids = _wait_for(lambda: _procs("ray::RolloutWorkerRole.produce", proc.pid), "a worker generating", proc)
    assert isinstance(pids, list)
    os.kill(pids[0], signal.SIGKILL)  # mid-generation: the title says it is inside produce()
    _wait_for(lambda: (run / "checkpoints" / "step-000002" / "state.json").is_file(), "checkpoint 2", proc)
    servers = _procs(f"{sys.executable} -m rlvr.cli sandbox serve", proc.pid)
    assert len(servers) >= 2, servers  # the co-located one and the shared one
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
    os.kill(int((run / "queue" / "redis.pid").read_text().split()[0]), signal.SIGKILL)
    err = _finish(proc)
    assert "starting it again" in err
    assert "placement: rollout worker 0 and its sandbox worker packed on one node" in err
    steps = _check_exactly_once(run)
    assert all(r.get("rollout/dropped_failed", 0) == 0 for r in steps)  # every execution got its verdict
    assert steps[-1]["rollout/sandbox_failovers"] >= 1  # some went on to another server meanwhile
    assert steps[0]["rollout/sandbox_local_share"] == 1.0  # before the kill: all run beside the worker
    assert steps[-1]["rollout/sandbox_local_share"] > 0.5


def test_a_hung_rollout_worker_is_replaced_and_the_sandbox_pool_grows_under_load(tmp_path: Path) -> None:
    """A worker stopped (SIGSTOP) inside produce() stops beating: killed and restarted
    after the 5 s heartbeat timeout. Meanwhile the sandbox pool, one server of one slot
    for 8 executions of 0.3 s a step sent 4 at a time, has submissions waiting: it grows
    to its ceiling of 2 (and may shrink back while nothing runs), its load logged."""
    extra = [
        "dist.rollout_workers=1", "dist.heartbeat_timeout_s=5", "dist.sandbox_workers=1",
        "dist.sandbox_max_workers=2", "dist.sandbox_scale_period_s=0.5", "dist.sandbox_concurrency=1",
    ]  # fmt: skip
    proc = _spawn(tmp_path, "hung", *extra, sandboxed=True)
    run = tmp_path / "hung"
    _wait_for(lambda: (run / "checkpoints" / "step-000002" / "state.json").is_file(), "checkpoint 2", proc)
    pids = _wait_for(lambda: _procs("ray::RolloutWorkerRole.produce", proc.pid), "a worker generating", proc)
    assert isinstance(pids, list)
    os.kill(pids[0], signal.SIGSTOP)  # alive, silent: only the heartbeat can tell
    err = _finish(proc)
    assert "no heartbeat" in err and "restarting it" in err
    steps = _check_exactly_once(run)
    assert max(r.get("rollout/worker_timeouts", 0) for r in steps) >= 1
    assert "sandbox pool: 1 -> 2 servers" in err  # grown under load (and drained again while the worker hangs)
    assert {r["rollout/sandbox_workers"] for r in steps} <= {1.0, 2.0}  # within its floor and ceiling
    assert max(r["rollout/sandbox_utilisation"] for r in steps) > 0.5
    assert max(r["rollout/sandbox_executions_per_s"] for r in steps) > 0
