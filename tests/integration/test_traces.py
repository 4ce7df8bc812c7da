"""The Parquet trace store (issue 13, part 1): every trajectory and every step's metrics,
one part file per step, readable while a run writes and after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rlvr.config import load_config
from rlvr.trace.parquet import SCHEMA_VERSION, TraceStore, read_table
from rlvr.train.loop import train

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
TINY = [
    "model.name_or_path=tiny-random",
    "generation.max_new_tokens=6",
    "algo.group_size=2",
    "train.prompts_per_step=2",
    "eval.num_tasks=2",
    "eval.before_training=false",
]


def test_a_run_leaves_one_part_per_step_that_matches_the_jsonl_log(tmp_path: Path) -> None:
    train(load_config(QUICK, [*TINY, "train.steps=2", f"output_dir={tmp_path}", "name=t"]), quiet=True)
    run = tmp_path / "t"
    uri = str(run / "traces")
    assert TraceStore(uri).steps() == [1, 2] and TraceStore(uri).steps("metrics") == [1, 2]
    rows = read_table(uri).to_pylist()
    logged = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == len(logged) == 2 * 2 * 2
    for row, log in zip(rows, logged, strict=True):
        assert (row["step"], row["task_id"], row["group_id"]) == (log["step"], log["task_id"], log["group_id"])
        assert row["trained"] is not log.get("dropped", False)
        assert row["reward"] == log["reward"]["total"]
        assert dict(row["reward_components"]) == log["reward"]["components"]
        assert row["exec_status"] == log["execution"]["status"]
        assert [t["name"] for t in row["tests"]] == [t["name"] for t in log["execution"]["tests"]]
        assert row["completion_tokens"] == len(log["completion_ids"]) and row["turns"][-1]["role"] == "assistant"
        assert row["completion"] == log["turns"][-1]["content"]
    metrics = read_table(uri, "metrics").to_pylist()
    steps = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if '"event": "step"' in x]
    assert [m["step"] for m in metrics] == [1, 2]
    for m, s in zip(metrics, steps, strict=True):
        assert dict(m["values"])["reward/mean"] == s["reward/mean"]
    part = pq.read_metadata(run / "traces" / "trajectories" / "step-000001.parquet")
    assert part.metadata[b"rlvr.schema_version"] == str(SCHEMA_VERSION).encode()
    assert not list((run / "traces").rglob("*.tmp"))  # parts are moved into place whole


def test_any_fsspec_url_and_truncation_after_a_crash(tmp_path: Path) -> None:
    uri = "memory://rlvr-test-traces/run"
    train(
        load_config(QUICK, [*TINY, "train.steps=3", f"output_dir={tmp_path}", "name=m", f"trace.uri={uri}"]), quiet=True
    )
    store = TraceStore(uri)
    assert store.steps() == [1, 2, 3] and read_table(uri).num_rows == 3 * 4
    assert not (tmp_path / "m" / "traces").exists()  # everything went to the URL
    with store.fs.open(f"{store.root}/trajectories/.step-000004.x.tmp", "wb") as f:
        f.write(b"torn")  # what a crash mid-write leaves
    store.truncate_after(1)  # the resumed run redoes steps 2 and 3
    assert store.steps() == [1] and store.steps("metrics") == [1]
    assert not [n for n in store.fs.ls(f"{store.root}/trajectories", detail=False) if str(n).endswith(".tmp")]
    assert read_table(uri, "metrics").num_rows == 1


def test_traces_command_lists_queries_and_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rlvr.cli import main

    train(load_config(QUICK, [*TINY, "train.steps=2", f"output_dir={tmp_path}", "name=q"]), quiet=True)
    run = str(tmp_path / "q")
    capsys.readouterr()
    assert main(["traces", run]) == 0
    listing = capsys.readouterr().out
    for view in ("trajectories (8 rows)", "turns", "tests", "metrics (", "alerts (", "evals (", "eval_trajectories ("):
        assert view in listing
    sql = "SELECT step, count(*) AS n, count(DISTINCT group_id) AS groups FROM trajectories GROUP BY step ORDER BY step"
    assert main(["traces", run, sql, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"step": 1, "n": 4, "groups": 2}, {"step": 2, "n": 4, "groups": 2}]
    assert (
        main(["traces", run, "SELECT name, value FROM metrics WHERE step = 2 AND name = 'reward/mean'", "--csv"]) == 0
    )
    assert capsys.readouterr().out.splitlines() == ["name,value", "reward/mean,0.0"]
    assert main(["traces", run, "SELECT role, count(*) FROM turns GROUP BY role ORDER BY role"]) == 0
    table = capsys.readouterr().out
    assert "assistant" in table and "system" in table and "(3 rows)" in table
    task = read_table(str(tmp_path / "q" / "traces")).to_pylist()[0]["task_id"]
    assert main(["traces", "show", run, "--step", "1", "--task", task, "--sample", "0"]) == 0
    shown = capsys.readouterr().out
    assert f"step 1 · task {task}" in shown and "--- assistant · attempt 1" in shown and "--- sandbox:" in shown
    assert shown.count("step 1 · task") == 1
    # bad input: one line each, exit 2
    assert main(["traces", run, "SELECT nope FROM trajectories"]) == 2
    assert main(["traces", "show", run, "--step", "7"]) == 2
    assert main(["traces", str(tmp_path / "missing")]) == 2
    assert main(["traces", run, "SELECT", "1"]) == 2  # an unquoted query
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(e.startswith("rlvr: error:") for e in err), err
    assert "no step 7" in err[1] and "steps: 1..2" in err[1]
