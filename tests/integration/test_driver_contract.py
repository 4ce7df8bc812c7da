"""The same bodies over every driver and channel of rlvr.pipeline (inline and thread
drivers; memory and Redis channels): at staleness 0 the four are one run, bit for bit
(trajectories, logged rollout figures, weights), and a thread driver at staleness 1
stays within its bound on either channel. Kill -9 and resume over the same four:
test_pipeline.py::test_kill_9_then_resume (memory) and
test_queued_training.py::test_kill_9_resumes_from_the_queue_and_trains_each_batch_once
(Redis). The Ray learner trains on what the inline driver trains on (below); its faults:
tests/faults/test_ray_faults.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlvr.train.loop import train
from tests.integration.test_pipeline import _steps, _trained, _weights
from tests.integration.test_train import TINY, _toy_cfg

ROOT = Path(__file__).parents[2]

DRIVERS = {"inline": ["rollout.mode=sync"], "thread": ["rollout.mode=async", "rollout.max_staleness=0"]}
CHANNELS = {"memory": [], "redis": ["queue.backend=redis"]}
COMMON = ["train.steps=3", "eval.before_training=false", "eval.after_training=false"]


def _run(tmp_path: Path, driver: str, channel: str, *extra: str) -> Path:
    name = f"{driver}-{channel}"
    train(_toy_cfg(tmp_path, f"name={name}", *COMMON, *DRIVERS[driver], *CHANNELS[channel], *extra), quiet=True)
    return tmp_path / name


def _rollout_figures(run: Path) -> list[dict[str, float]]:
    skip = {"rollout/generate_s", "rollout/from_queue_backlog"}  # a duration; a resume's mark
    return [{k: v for k, v in r.items() if k.startswith("rollout/") and k not in skip} for r in _steps(run)]


def test_every_driver_and_channel_is_the_same_run_at_staleness_0(tmp_path: Path) -> None:
    runs = [_run(tmp_path, d, c) for d in DRIVERS for c in CHANNELS]
    first = runs[0]
    ids = [(t["group_id"], t["completion_ids"], t["reward"]["total"]) for t in _trained(first)]
    assert len(ids) == 3 * 2 * 4
    for run in runs[1:]:
        assert [(t["group_id"], t["completion_ids"], t["reward"]["total"]) for t in _trained(run)] == ids, run.name
        assert _rollout_figures(run) == _rollout_figures(first), run.name  # stale_dropped, retries, groups: equal
        a, b = _weights(first), _weights(run)
        assert all(torch.equal(a[k], b[k]) for k in a), run.name


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_the_thread_driver_keeps_its_bound_on_every_channel(tmp_path: Path, channel: str) -> None:
    run = _run(tmp_path, "thread", channel, "rollout.max_staleness=1", "train.steps=4")
    steps = _steps(run)
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    assert all(0 <= r["train/staleness_mean"] <= 1 for r in steps)  # never more than one version old
    assert sum(r.get("rollout/stale_dropped", 0.0) for r in steps) == 0.0  # within the bound, nothing is dropped
    groups = [t["group_id"] for t in _trained(run)]
    assert len(groups) == 4 * 2 * 4 and len(set(groups)) == 4 * 2  # every step trained once


@pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("CI") != "true",
    reason="redis-server is not installed (make redis)",
)
def test_the_ray_learner_drives_the_same_run(tmp_path: Path) -> None:
    """The Ray learner (tickets to one rollout worker, batches back through the Redis
    channel) is the same run as the inline driver at one seed: the same trajectories,
    rollout figures (stale_dropped included) and final weights, bit for bit, once both
    learners use the same number of threads (Ray gives an actor its own OMP thread
    count, and a different count sums in a different order)."""
    inline = _run(tmp_path, "inline", "memory", "train.threads=1")
    tasks = tmp_path / "toy.jsonl"  # written by the inline run (tests.integration.test_train._toy_cfg)
    ray_cfg = ["dist.backend=ray", "dist.rollout_workers=1", "train.threads=1", "plugins=[tests.integration.toy_env]"]
    cmd = [sys.executable, "-m", "rlvr.cli", "train", "examples/quickstart.yaml", *TINY, f"tasks.source={tasks}",
           "tasks.eval_fraction=0.25", "algo.group_size=4", *COMMON, *ray_cfg, f"output_dir={tmp_path}", "name=ray",
           "--quiet"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    ray = tmp_path / "ray"
    mine = [(t["group_id"], t["completion_ids"], t["reward"]["total"]) for t in _trained(inline)]
    assert [(t["group_id"], t["completion_ids"], t["reward"]["total"]) for t in _trained(ray)] == mine
    skip = {"rollout/worker_timeouts", "rollout/worker", "rollout/weights_load_s"}  # the Ray roles' own figures
    ray_figures = [{k: v for k, v in r.items() if k not in skip and not k.startswith("rollout/sandbox_")}
                   for r in _rollout_figures(ray)]  # fmt: skip
    assert ray_figures == _rollout_figures(inline)
    a, b = _weights(inline), _weights(ray)
    assert all(torch.equal(a[k], b[k]) for k in a)
