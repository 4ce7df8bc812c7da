"""bench/figures.py, the one reader of a run's figures for every bench: a missing metric
is an error that names it, and tokens count every trajectory generated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from figures import BenchError, run_figures, step_rows

from rlvr.trace.parquet import TraceStore
from rlvr.types import Trajectory


def _run(tmp_path: Path, rows: list[dict], tokens: dict[int, list[tuple[int, bool]]]) -> Path:
    (tmp_path / "config.yaml").write_text("name: bench\n")  # a run directory: its store in traces/
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = TraceStore(str(tmp_path / "traces"))
    for step, trajs in tokens.items():
        made = [
            (Trajectory(task_id="t", domain="python", group_id="g", completion_ids=[1] * n), kept) for n, kept in trajs
        ]
        store.write_step(step, made, {})
    return tmp_path


def _row(step: int, wait: float, train: float, reward: float) -> dict:
    return {"event": "step", "step": step, "time/rollout_wait_s": wait, "time/train_s": train, "reward/mean": reward}


def test_figures_count_trained_and_dropped_tokens_over_the_steps_wall_time(tmp_path: Path) -> None:
    run = _run(
        tmp_path, [_row(1, 1.0, 3.0, 0.5), _row(2, 0.5, 1.5, 0.25)], {1: [(10, True), (6, False)], 2: [(8, True)]}
    )
    f = run_figures(run)
    # 16 + 8 tokens over (1 + 3) + (0.5 + 1.5) = 6 s
    assert f["tokens"] == 24 and f["steps_s"] == 6.0 and f["tokens_per_s"] == 4.0
    assert f["reward"] == [0.5, 0.25] and f["rollout_s"] == 1.5 and f["train_s"] == 4.5
    warm = run_figures(run, skip_first=1)  # the first step left out: 8 tokens over 2 s
    assert warm["steps_timed"] == 1 and warm["tokens_per_s"] == 4.0 and warm["tokens"] == 8


def test_a_missing_metric_is_named(tmp_path: Path) -> None:
    row = _row(1, 1.0, 1.0, 0.0)
    del row["time/train_s"]
    (tmp_path / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(BenchError, match="step 1 lacks time/train_s"):
        step_rows(tmp_path)
    with pytest.raises(BenchError, match=r"no metrics\.jsonl"):
        step_rows(tmp_path / "nowhere")


def test_a_step_without_trajectories_is_an_error(tmp_path: Path) -> None:
    run = _run(tmp_path, [_row(1, 1.0, 1.0, 0.0), _row(2, 1.0, 1.0, 0.0)], {1: [(4, True)]})
    with pytest.raises(BenchError, match=r"no trajectories of step\(s\) \[2\]"):
        run_figures(run)
