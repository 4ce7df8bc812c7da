"""rlvr train with queue.backend redis: every batch goes through a Redis stream, is
acknowledged only after the checkpoint that includes it, and a run killed at any point
resumes with the batches it had generated, training each exactly once; the run's own
redis-server may die mid-run and is started again. Against a real redis-server (skipped
without one, except under CI=true)."""

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
import torch

from rlvr.config import ConfigError
from rlvr.pipeline.channel import decode_batch, encode_batch
from rlvr.pipeline.redis_queue import RedisQueue
from rlvr.pipeline.redis_server import LocalRedis
from rlvr.train.loop import train
from rlvr.types import RolloutBatch
from tests.integration.test_pipeline import _spawn, _steps, _trained, _weights
from tests.integration.test_train import _toy_cfg
from tests.integration.toy_env import write_toy_tasks

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("CI") != "true",
    reason="redis-server is not installed (make redis)",
)
COMMON = ["train.steps=3", "eval.before_training=false", "eval.num_tasks=1", "train.checkpoint_every=2"]


def _stream_depth(run: Path, name: str) -> tuple[int, int]:
    with LocalRedis(run / "queue") as server:
        q = RedisQueue(server.url, stream=f"rlvr:{name}")
        d = q.depth()
        q.close()
    return d.waiting, d.pending


def _wait_for(cond, what: str, proc, timeout: float = 300.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {what}: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    raise AssertionError(f"no {what} in time")


def _logged_steps(run: Path) -> int:
    p = run / "metrics.jsonl"
    if not p.is_file():
        return 0
    return sum(1 for line in p.read_text().splitlines() if line.endswith("}") and '"event": "step"' in line)


def test_encoding_round_trips_a_batch() -> None:
    batch = RolloutBatch(4, 3, [], [], {"groups": 2.0}, {"domain/python": 0.5})
    back, state = decode_batch(encode_batch(batch, {"rng": [1, 2]}))
    assert back.to_dict() == batch.to_dict() and state == {"rng": [1, 2]}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_through_redis_equals_the_in_process_run(tmp_path: Path, mode: str) -> None:
    """The stream carries batches losslessly: same rewards, bit-identical weights; at the
    end every entry is acknowledged and the checkpoint lists the ids trained on."""
    extra = [f"rollout.mode={mode}", *(["rollout.max_staleness=0"] if mode == "async" else []), *COMMON]
    mem = train(_toy_cfg(tmp_path, "name=mem", *extra), quiet=True)
    red = train(_toy_cfg(tmp_path, "name=red", "queue.backend=redis", *extra), quiet=True)
    assert red.rewards == mem.rewards
    a, b = _weights(tmp_path / "mem"), _weights(tmp_path / "red")
    assert all(torch.equal(a[k], b[k]) for k in a)
    state = json.loads((tmp_path / "red" / "checkpoints" / "step-000003" / "state.json").read_text())
    assert state["queue"] == {"backend": "redis", "stream": "rlvr:red", "trained": ["step/1", "step/2", "step/3"]}
    assert json.loads((tmp_path / "mem" / "checkpoints" / "step-000003" / "state.json").read_text())["queue"] == {
        "backend": "memory"
    }
    assert _stream_depth(tmp_path / "red", "red") == (0, 0)  # all acknowledged after the last checkpoint
    assert not (tmp_path / "red" / "queue" / "redis.pid").is_file() or not _redis_alive(tmp_path / "red")


def _redis_alive(run: Path) -> bool:
    pid = int((run / "queue" / "redis.pid").read_text().split()[0])
    try:
        return b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_kill_9_resumes_from_the_queue_and_trains_each_batch_once(tmp_path: Path, mode: str) -> None:
    """Checkpoint after step 2, kill -9 once step 3 is logged (its batch taken, not
    acknowledged), run the same command again: step 3 is trained from the queue, not
    generated again, every step and group exactly once. Sync: the weights equal a run
    that was never killed, so the sampler continued exactly where the dead process was."""
    write_toy_tasks(tmp_path / "toy.jsonl")
    extra = [
        "train.steps=5",
        "train.checkpoint_every=2",
        "queue.backend=redis",
        f"rollout.mode={mode}",
        *(["rollout.max_staleness=1"] if mode == "async" else []),
    ]
    run = tmp_path / "victim"
    victim = _spawn(tmp_path, "victim", *extra)
    _wait_for(lambda: _logged_steps(run) >= 3, "step 3", victim)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert (run / "checkpoints" / "step-000002" / "state.json").is_file()
    assert not (run / "checkpoints" / "step-000004").exists()
    resumed = _spawn(tmp_path, "victim", *extra)  # the same command: auto_resume picks up
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read() if resumed.stderr else ""
    steps = _steps(run)
    assert [r["step"] for r in steps] == [1, 2, 3, 4, 5]
    assert steps[2].get("rollout/from_queue_backlog") == 1.0  # trained from the stream, not generated again
    groups = [t["group_id"] for t in _trained(run)]
    assert len(groups) == 5 * 2 * 4 and len(set(groups)) == 5 * 2
    from rlvr.trace.parquet import read_table

    traced = read_table(str(run / "traces")).to_pylist()
    assert [r["group_id"] for r in traced if r["trained"]] == groups  # counted in the trace store: once each
    assert len({(r["group_id"], r["sample"]) for r in traced if r["trained"]}) == 5 * 2 * 4  # trajectory ids
    assert _stream_depth(run, "victim") == (0, 0)
    if mode == "sync":  # a run never killed, for comparison
        straight = _spawn(tmp_path, "straight", *extra)
        assert straight.wait(timeout=600) == 0, straight.stderr.read() if straight.stderr else ""
        a, b = _weights(tmp_path / "straight"), _weights(run)
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_runs_redis_server_killed_mid_run_is_started_again(tmp_path: Path) -> None:
    write_toy_tasks(tmp_path / "toy.jsonl")
    run = tmp_path / "r"
    proc = _spawn(tmp_path, "r", "train.steps=5", "queue.backend=redis", "rollout.mode=async")
    _wait_for(lambda: _logged_steps(run) >= 2, "step 2", proc)
    pid = int((run / "queue" / "redis.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    assert proc.wait(timeout=600) == 0, proc.stderr.read() if proc.stderr else ""
    assert "starting it again" in (proc.stderr.read() if proc.stderr else "")
    assert [r["step"] for r in _steps(run)] == [1, 2, 3, 4, 5]
    groups = [t["group_id"] for t in _trained(run)]
    assert len(groups) == 5 * 2 * 4 and len(set(groups)) == 5 * 2


def test_a_fresh_run_refuses_a_stream_that_holds_entries(tmp_path: Path) -> None:
    with LocalRedis(tmp_path / "shared") as server:
        q = RedisQueue(server.url, stream="rlvr:taken")
        q.put("step/1", b"{}")
        q.close()
        cfg = _toy_cfg(tmp_path, "name=taken", "queue.backend=redis", f"queue.url={server.url}", *COMMON)
        with pytest.raises(ConfigError, match="already holds 1 entries"):
            train(cfg, quiet=True)


def test_a_redis_checkpoint_does_not_resume_without_its_queue(tmp_path: Path) -> None:
    train(_toy_cfg(tmp_path, "name=q", "queue.backend=redis", *COMMON, "train.steps=2"), quiet=True)
    cfg = _toy_cfg(tmp_path, "name=q", *COMMON, "train.steps=3")
    with pytest.raises(ConfigError, match=r"queue\.backend=redis"):
        train(cfg, resume=True, quiet=True)


def test_a_memory_checkpoint_resumes_onto_redis(tmp_path: Path) -> None:
    """The untrained batch a memory-queue checkpoint holds moves into the stream and is
    trained from there."""
    extra = ["rollout.mode=async", "rollout.max_staleness=1", *COMMON]
    train(_toy_cfg(tmp_path, "name=m", *extra), quiet=True)
    run = tmp_path / "m"
    shutil.rmtree(run / "checkpoints" / "step-000003")  # as if it died after checkpoint 2
    held = json.loads((run / "checkpoints" / "step-000002" / "queue.json").read_text())["pending"]
    assert [b["step"] for b in held] == [2]  # the generator was a step ahead (0-based step 2: the third)
    train(_toy_cfg(tmp_path, "name=m", "queue.backend=redis", *extra), resume=True, quiet=True)
    steps = _steps(run)
    assert [r["step"] for r in steps] == [1, 2, 3] and steps[2].get("rollout/from_queue_backlog") == 1.0
    groups = [t["group_id"] for t in _trained(run)]
    assert len(set(groups)) == len(groups) // 4 == 3 * 2
