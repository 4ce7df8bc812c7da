"""The training pipeline: async rollouts, staleness, the buffer in the loop, failure
policy, dynamic sampling, and resume after kill -9."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rlvr.pipeline.producer import RolloutFailed
from rlvr.train.checkpoint import latest_checkpoint
from rlvr.train.loop import train
from tests.integration.test_train import _toy_cfg
from tests.integration.toy_env import write_flaky_tasks

ROOT = Path(__file__).parents[2]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    ckpt = latest_checkpoint(run / "checkpoints")
    assert ckpt is not None
    return load_file(str(ckpt / "model" / "model.safetensors"))


def _steps(run: Path) -> list[dict]:
    return [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["event"] == "step"]


def _trained(run: Path) -> list[dict]:
    rows = map(json.loads, (run / "trajectories.jsonl").read_text().splitlines())
    return [r for r in rows if not r.get("dropped")]


def test_async_with_staleness_0_equals_sync(tmp_path: Path) -> None:
    common = ["train.steps=3", "eval.before_training=false", "eval.num_tasks=1"]
    sync = train(_toy_cfg(tmp_path, "name=sync", *common), quiet=True)
    asy = train(_toy_cfg(tmp_path, "name=async0", "rollout.mode=async", "rollout.max_staleness=0", *common), quiet=True)
    assert asy.rewards == sync.rewards
    a, b = _weights(tmp_path / "sync"), _weights(tmp_path / "async0")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("staleness", [0, 1])
def test_async_rollouts_go_on_after_a_step_the_learner_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, staleness: int
) -> None:
    """A step with nothing usable leaves the policy version where it was; the generator
    must not wait for a version that never comes (it used to, forever)."""
    import threading

    from rlvr.learner.learner import Learner

    real, calls = Learner.step, [0]

    def sometimes_nothing(self: Learner, trajs: list) -> dict[str, float]:  # type: ignore[type-arg]
        calls[0] += 1
        return {"skipped": 1.0} if calls[0] in (2, 3) else real(self, trajs)

    monkeypatch.setattr(Learner, "step", sometimes_nothing)
    cfg = _toy_cfg(
        tmp_path, f"name=skip{staleness}", "rollout.mode=async", f"rollout.max_staleness={staleness}",
        "train.steps=5", "eval.before_training=false", "eval.num_tasks=1",
    )  # fmt: skip
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(train(cfg, quiet=True)), daemon=True)
    worker.start()
    worker.join(timeout=240)
    assert done, "training hung after a skipped learner step"
    assert [r["step"] for r in _steps(tmp_path / f"skip{staleness}")] == [1, 2, 3, 4, 5]


def test_async_staleness_1_stays_within_bound_and_trains_every_batch(tmp_path: Path) -> None:
    cfg = _toy_cfg(
        tmp_path, "name=async1", "rollout.mode=async", "rollout.max_staleness=1", "train.steps=4",
        "eval.before_training=false", "eval.num_tasks=1", "algo.importance=token", "algo.decoupled=true",
    )  # fmt: skip
    train(cfg, quiet=True)
    run = tmp_path / "async1"
    steps = _steps(run)
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    assert all(0 <= r["train/staleness_mean"] <= 1 for r in steps)
    assert any(r["train/staleness_mean"] > 0 for r in steps)  # it really ran ahead
    assert all("train/is_weight_mean" in r and "train/behaviour_prox_mismatch" in r for r in steps)
    groups = [t["group_id"] for t in _trained(run)]
    assert len(groups) == 4 * 2 * 4 and len(set(groups)) == 4 * 2  # each group trained once


def test_failed_episodes_are_retried_then_dropped_or_fail_the_run(tmp_path: Path) -> None:
    tasks = write_flaky_tasks(tmp_path / "flaky.jsonl", ["ok-a", "ok-b", "ok-c", "retry?", "broken!", "ok-d"])
    common = [
        f"tasks.source={tasks}",
        "tasks.eval_fraction=0.01",
        "eval.before_training=false",
        "eval.after_training=false",
    ]
    cfg = _toy_cfg(tmp_path, "name=drop", "train.steps=3", "train.prompts_per_step=6", "algo.group_size=2", *common)
    cfg.eval.num_tasks = None
    cfg.tasks.eval_fraction = 0.01
    s = train(cfg, quiet=True)
    run = tmp_path / "drop"
    steps = _steps(run)
    assert all(r["rollout/dropped_failed"] >= 1 for r in steps)  # the broken task, every step it was drawn
    assert sum(r.get("rollout/retries", 0) for r in steps) >= 2  # retry? succeeded on a retry
    dropped = [r for r in map(json.loads, (run / "trajectories.jsonl").read_text().splitlines()) if r.get("dropped")]
    assert dropped and all(r["status"] == "error" and "crashed" in r["error"] for r in dropped)
    assert all(t["task_id"] != "broken!" for t in _trained(run))
    assert len(s.rewards) == 3
    with pytest.raises(RolloutFailed, match="broken! crashed"):
        train(
            _toy_cfg(
                tmp_path, "name=fail", "train.steps=1", "train.prompts_per_step=6", "rollout.on_failure=fail", *common
            ),
            quiet=True,
        )


def test_dynamic_sampling_drops_or_refills_flat_groups(tmp_path: Path) -> None:
    # Greedy-ish sampling with temperature 1e-3 makes most groups unanimous (flat rewards).
    common = ["train.steps=2", "eval.before_training=false", "eval.num_tasks=1", "generation.temperature=0.001"]
    train(_toy_cfg(tmp_path, "name=drop", "algo.dynamic_sampling=drop", *common), quiet=True)
    drop = _steps(tmp_path / "drop")
    assert sum(r.get("rollout/dropped_uninformative", 0) for r in drop) >= 1
    train(_toy_cfg(tmp_path, "name=refill", "algo.dynamic_sampling=refill", *common), quiet=True)
    refill = _steps(tmp_path / "refill")
    assert max(r["rollout/rounds"] for r in refill) > 1  # it sampled more prompts


def _spawn(tmp_path: Path, name: str, *extra: str) -> subprocess.Popen[str]:
    tasks = tmp_path / "toy.jsonl"
    args = [
        "model.name_or_path=tiny-random", "generation.max_new_tokens=6", "train.prompts_per_step=2",
        "train.lr=1e-3", "eval.num_tasks=1", "eval.before_training=false", f"tasks.source={tasks}",
        "tasks.eval_fraction=0.25", "algo.group_size=4", "train.checkpoint_every=1", "train.keep_checkpoints=10",
        "train.auto_resume=true", f"output_dir={tmp_path}", f"name={name}", "plugins=[tests.integration.toy_env]",
        *extra,
    ]  # fmt: skip
    cmd = [sys.executable, "-m", "rlvr.cli", "train", "examples/quickstart.yaml", *args, "--quiet"]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_after_checkpoint(proc: subprocess.Popen[str], run: Path, step: int) -> None:
    deadline = time.time() + 300
    while time.time() < deadline:
        if (run / "checkpoints" / f"step-{step:06d}" / "state.json").is_file():
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return
        if proc.poll() is not None:
            raise AssertionError(f"run ended before checkpoint {step}: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    raise AssertionError("no checkpoint in time")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_kill_9_then_resume(tmp_path: Path, mode: str) -> None:
    """N steps straight versus N/2 steps, kill -9, resume (the same command, auto_resume),
    N/2 more. Sync: identical weights. Async: every step trained once, no group twice."""
    from tests.integration.toy_env import write_toy_tasks

    write_toy_tasks(tmp_path / "toy.jsonl")
    extra = ["train.steps=6", f"rollout.mode={mode}", *(["rollout.max_staleness=1"] if mode == "async" else [])]
    straight = _spawn(tmp_path, "straight", *extra)
    assert straight.wait(timeout=600) == 0, straight.stderr.read() if straight.stderr else ""
    victim = _spawn(tmp_path, "victim", *extra)
    _kill_after_checkpoint(victim, tmp_path / "victim", 3)
    resumed = _spawn(tmp_path, "victim", *extra)  # the same command: auto_resume picks up
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read() if resumed.stderr else ""
    run = tmp_path / "victim"
    assert [r["step"] for r in _steps(run)] == [1, 2, 3, 4, 5, 6]  # logs cut back to the checkpoint
    groups = [t["group_id"] for t in _trained(run)]
    assert len(groups) == 6 * 2 * 4 and len(set(groups)) == 6 * 2
    from rlvr.trace.parquet import read_table  # the Parquet store is cut back and redone the same way

    traced = read_table(str(run / "traces")).to_pylist()
    assert sorted({r["step"] for r in traced}) == [1, 2, 3, 4, 5, 6]
    assert [r["group_id"] for r in traced if r["trained"]] == groups
    if mode == "sync":
        a, b = _weights(tmp_path / "straight"), _weights(run)
        assert all(torch.equal(a[k], b[k]) for k in a)
        assert _steps(run)[-1]["reward/mean"] == _steps(tmp_path / "straight")[-1]["reward/mean"]
