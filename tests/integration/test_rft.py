"""Rejection-sampling fine-tuning: what is kept (hand-made trajectories), and a round on
the tiny model with a scripted policy that answers half its samples right: the right
ones are kept, traced as trained, and change the weights; a run stopped after a round
and resumed ends with the uninterrupted run's weights; `rlvr rft` as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import rlvr.sft.rft as rft_mod
from rlvr.config import load_config
from rlvr.sft.rft import keep, round_tasks, run_rft
from rlvr.trace.query import query
from rlvr.types import RewardBreakdown, Task, Trajectory
from tests.integration.helpers import ScriptedPolicy, write_add_tasks

ROOT = Path(__file__).parents[2]


def _t(task: str, total: float, ids: list[int], *, flags: list[str] | None = None, finish: str = "eos") -> Trajectory:
    t = Trajectory(task_id=task, domain="python", group_id=task, completion_ids=ids, finish_reason=finish)
    t.reward = RewardBreakdown(total, {"completion": total}, flags=flags or [])
    return t


def test_keep_takes_paid_unflagged_finished_samples_best_first_and_at_most_per_task() -> None:
    a1, a2, a3 = _t("a", 1.0, [1, 2, 3]), _t("a", 1.2, [1, 2, 3, 4]), _t("a", 1.0, [9])
    dup = _t("a", 1.2, [1, 2, 3, 4])
    hacked = _t("b", 1.5, [5], flags=["hardcoded_outputs"])
    cut = _t("b", 1.0, [6], finish="length")
    low = _t("b", 0.5, [7])
    failed = _t("c", 1.0, [8])
    failed.status = "error"
    trajs = [a1, a2, a3, dup, hacked, cut, low, failed]
    # per task 2: the highest reward, then the shorter of the two 1.0s; the duplicate once
    assert keep(trajs, min_reward=1.0, per_task=2) == [a2, a3]
    assert keep(trajs, min_reward=1.0, per_task=1) == [a2]
    assert keep(trajs, min_reward=0.5, per_task=3) == [a1, a2, a3, low]
    assert keep(trajs, min_reward=2.0, per_task=3) == []


def test_round_tasks_are_all_or_a_draw_fixed_by_seed_and_round() -> None:
    tasks = [Task(id=f"t{i}", domain="python", prompt="") for i in range(20)]
    assert round_tasks(tasks, None, seed=0, rnd=0) == tasks
    one = round_tasks(tasks, 5, seed=0, rnd=1)
    assert len(one) == 5 and one == round_tasks(tasks, 5, seed=0, rnd=1)
    assert one != round_tasks(tasks, 5, seed=0, rnd=2)


def _cfg(tmp_path: Path, name: str, rounds: int) -> Any:
    tasks = write_add_tasks(tmp_path / "add.jsonl", n=8)
    return load_config(
        None,
        [
            "model.name_or_path=tiny-random", f"tasks.source={tasks}", "tasks.eval_fraction=0.25",
            f"output_dir={tmp_path}", f"name={name}", f"rft.rounds={rounds}", "rft.samples=2", "rft.accumulate=true",
            "sft.batch_size=2", "sft.lr=1e-3", "eval.before_training=false", "eval.after_training=false",
            "generation.max_new_tokens=40", "prompt.response_prefix=\"```python\\n\"",
        ],
    )  # fmt: skip


def _scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedPolicy:
    from rlvr.rollout.models import load_tokenizer

    policy = ScriptedPolicy(load_tokenizer("tiny-random"), None)
    monkeypatch.setattr(rft_mod, "make_engine", lambda cfg, model, tok, **kw: policy.bind(model))
    return policy


def _weights(run: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(run / "model" / "model.safetensors"))


def test_a_round_keeps_the_right_samples_and_changes_the_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _scripted(monkeypatch)
    cfg = _cfg(tmp_path, "whole", rounds=2)
    s = run_rft(cfg, quiet=True)
    n_train = s.sampled[0] // 2
    assert s.sampled == [2 * n_train] * 2 and s.kept == [n_train] * 2  # one right sample per task
    rows = [json.loads(x) for x in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if r.get("event") == "step"]
    assert [r["rft/kept"] for r in steps] == [n_train, n_train]
    assert steps[0]["train/steps"] > 0 and steps[0]["weights_fingerprint"] != steps[1]["weights_fingerprint"]
    # every sample traced; the kept ones (right answers) marked as trained
    _, got = query(str(tmp_path / "whole" / "traces"), "SELECT trained, completion FROM trajectories WHERE step = 1")
    assert len(got) == 2 * n_train
    assert all(("return x +" in c) == bool(tr) for tr, c in got)
    from rlvr.rollout.models import TINY, load_policy

    base, _ = load_policy(TINY, seed=0)
    tuned = _weights(tmp_path / "whole")
    assert max(float((tuned[k] - v).abs().max()) for k, v in base.state_dict().items() if k in tuned) > 1e-4
    # stopped after round 1, resumed to 2: the uninterrupted run's weights
    _scripted(monkeypatch)
    run_rft(_cfg(tmp_path, "cut", rounds=1), quiet=True)
    _scripted(monkeypatch)
    run_rft(_cfg(tmp_path, "cut", rounds=2), resume=True, quiet=True)
    a, b = _weights(tmp_path / "whole"), _weights(tmp_path / "cut")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_rlvr_rft_reports_a_round_that_keeps_nothing(tmp_path: Path) -> None:
    """The tiny random model never ends a reply, so nothing is kept: said, not hidden."""
    r = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", "rft", "examples/quickstart.yaml", "--plain",
         "model.name_or_path=tiny-random", "generation.max_new_tokens=8", "rft.rounds=1", "rft.samples=2",
         "rft.tasks_per_round=3", "eval.num_tasks=2",
         f"output_dir={tmp_path}", "name=r"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "round 1: no sample reached rft.min_reward 1.0: nothing kept" in r.stderr
    assert "samples kept per round: 0/6" in r.stdout
    assert (tmp_path / "r" / "model" / "model.safetensors").is_file()


def test_rlvr_rft_resumes_after_kill_9_to_the_uninterrupted_weights(tmp_path: Path) -> None:
    """`rlvr rft` as a user runs it, with the scripted engine as a plugin (samples the
    reward pays): killed with SIGKILL after its first round's checkpoint and resumed, it
    ends with the weights of a run that was never interrupted."""
    import os
    import signal
    import time

    tasks = write_add_tasks(tmp_path / "add.jsonl", n=8)
    common = [
        "rft", "examples/quickstart.yaml", "--plain", "model.name_or_path=tiny-random", f"tasks.source={tasks}",
        "tasks.eval_fraction=0.25", "plugins=[tests/integration/plugins/scripted_add.py]", "engine.kind=scripted_add",
        "rft.rounds=4", "rft.samples=2", "rft.accumulate=true", "sft.batch_size=2", "sft.epochs=3", "sft.lr=1e-3",
        "eval.before_training=false", "eval.after_training=false", "generation.max_new_tokens=40",
        f"output_dir={tmp_path}",
    ]  # fmt: skip
    whole = subprocess.run([sys.executable, "-m", "rlvr.cli", *common, "name=whole"], capture_output=True,
                           text=True, cwd=ROOT, timeout=600)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    assert "samples kept per round: 6/12, 6/12, 6/12, 6/12" in whole.stdout
    proc = subprocess.Popen([sys.executable, "-m", "rlvr.cli", *common, "name=cut"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    first = tmp_path / "cut" / "checkpoints" / "step-000001" / "state.json"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not first.exists():
        assert proc.poll() is None
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.name for p in (tmp_path / "cut" / "checkpoints").iterdir() if (p / "state.json").exists())
    assert done and done[-1] < "step-000004", "the run ended before it was killed"
    resumed = subprocess.run([sys.executable, "-m", "rlvr.cli", *common, "name=cut", "--resume"],
                             capture_output=True, text=True, cwd=ROOT, timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    a, b = _weights(tmp_path / "whole"), _weights(tmp_path / "cut")
    assert all(torch.equal(a[k], b[k]) for k in a)
    rounds = [json.loads(x)["step"] for x in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()
              if '"event": "step"' in x]  # fmt: skip
    assert rounds == [1, 2, 3, 4]
