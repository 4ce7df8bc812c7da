"""Metric sinks (rlvr.trace.sinks): what each writes is read back with its library's own
reader (TensorBoard's EventAccumulator, wandb's record protos, MLflow's client), resumed
runs show each step once, failing sinks are disabled with one message, and missing
optional packages are a ConfigError."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from rlvr.config import RunConfig
from rlvr.trace.sinks import mlflow_name, open_sinks
from tests.unit.test_sinks import (
    NAMES,
    _cfg,
    _close,
    _log,
    _wandb_run,
)

# --- MLflow ------------------------------------------------------------------------------


def test_mlflow_name_rule() -> None:
    from mlflow.utils.validation import _validate_metric_name

    for name in NAMES:
        assert mlflow_name(name) == name
    assert mlflow_name("hack/sig:a<b>") == "hack/sig_a_b_"
    assert mlflow_name("/a//b/./c/../d/") == "_/a/_/b/_/c/__/d/_"
    assert mlflow_name("domain/é") == "domain/_"
    long = "x/" * 200
    cut = mlflow_name(long)
    assert len(cut) == 250 and cut != mlflow_name(long + "y") and cut == mlflow_name(long)
    for name in ["hack/sig:a<b>", "/a//b/./c/../d/", "..", ".", "", long, "a/" + "/" * 300]:
        _validate_metric_name(mlflow_name(name))  # MLflow's own check raises if invalid


def test_mlflow_metrics_params_text_and_resume(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    cfg = _cfg(tmp_path, "mlflow")
    sinks = open_sinks(cfg)
    _log(sinks, range(1, 6))
    sinks[0].log_metrics(5, {"hack/sig:x": 2.0})
    sinks[0].log_text(5, "alerts/hack_rate", "hack rate 0.5")
    # crashed here, without close(); resumed from the checkpoint at step 3
    sinks = open_sinks(cfg, resume_step=3)
    _log(sinks, range(4, 7), offset=100.0)
    _close(sinks)

    run_id = (cfg.run_dir / "mlflow_run_id").read_text().strip()
    client = MlflowClient((cfg.run_dir / "mlflow").as_uri())
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "r"
    assert client.get_experiment(run.info.experiment_id).name == "rlvr"
    assert len(client.search_runs([run.info.experiment_id])) == 1  # the same run continued
    for i, name in enumerate(NAMES):
        points = sorted(client.get_metric_history(run_id, name), key=lambda m: m.step)
        assert [m.step for m in points] == [1, 2, 3, 4, 5, 6]
        assert [m.value for m in points] == [s + i / 8 + (100 if s > 3 else 0) for s in range(1, 7)]
    assert client.get_metric_history(run_id, "train/grad_norm") == []
    assert client.get_metric_history(run_id, "hack/sig_x") == []  # logged at step 5, after 3
    params = run.data.params
    assert params["algo.group_size"] == "4" and params["log.sinks"] == '["mlflow"]'
    assert params["train.steps"] == "20" and run.data.tags["rlvr.resumed_at_step"] == "3"
    text = client.download_artifacts(run_id, "text/alerts/hack_rate/step-00000005.txt", str(tmp_path))
    assert Path(text).read_text() == "hack rate 0.5"


def test_mlflow_long_param_values_are_cut(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    cfg = RunConfig.model_validate(
        {"name": "r", "output_dir": str(tmp_path), "log": {"sinks": ["mlflow"]}, "prompt": {"system": "s" * 7000}}
    )
    (sink,) = open_sinks(cfg)
    sink.close()
    run_id = (cfg.run_dir / "mlflow_run_id").read_text().strip()
    params = MlflowClient((cfg.run_dir / "mlflow").as_uri()).get_run(run_id).data.params
    assert params["prompt.system"] == "s" * 6000


def _wandb_rewind_scenario(root: Path) -> tuple[Any, dict[int, dict[str, Any]], Any, dict[int, dict[str, Any]]]:
    """Five steps logged, closed, then a run resumed at step 3 logging steps 4..6: the
    run records and history rows of both offline runs, oldest first."""
    cfg = _cfg(root, "wandb")
    sinks = open_sinks(cfg)
    _log(sinks, range(1, 6))
    sinks[0].log_text(5, "alerts/hack_rate", "hack rate 0.5")
    _close(sinks)
    sinks = open_sinks(cfg, resume_step=3)
    _log(sinks, range(4, 7), offset=100.0)
    _close(sinks)
    first, second = sorted((cfg.run_dir / "wandb").glob("offline-run-*"))
    return (*_wandb_run(first), *_wandb_run(second))


def test_wandb_offline_history_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for var in ("CONFIG", "CACHE", "DATA", "ARTIFACT"):
        monkeypatch.setenv(f"WANDB_{var}_DIR", str(tmp_path / "wandb-home" / var.lower()))
    for var in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_SERVICE", "WANDB_DIR", "WANDB_RUN_ID", "WANDB_RESUME"):
        monkeypatch.delenv(var, raising=False)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    stdout, stderr = sys.stdout, sys.stderr
    cfg = _cfg(tmp_path / "probe", "wandb")
    (sink,) = open_sinks(cfg)
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert sys.stdout is stdout and sys.stderr is stderr
    sink.close()

    # wandb-core now and then leaves a rewound offline run's file without its records by
    # the time the run is finished: once the run record (about 2 runs in 8 when this test
    # was written), once on the CI machine also its history (1 run in the 2026-12-05 CI;
    # 0 in 96 here, loaded or not). That is wandb's writer, not what rlvr logged: such an
    # attempt is run again, at most 3 in all, and every other check holds on each attempt.
    missing = 0
    for attempt in range(3):
        run, rows, resumed, later = _wandb_rewind_scenario(tmp_path / f"attempt-{attempt}")
        out, err = capfd.readouterr()
        assert out == "" and err == ""  # silent, console untouched
        assert run.display_name == "r" and run.project == "rlvr"
        config = {i.key: json.loads(i.value_json) for i in run.config.update}
        assert config["algo"]["group_size"] == 4
        assert sorted(rows) == [1, 2, 3, 4, 5]
        expected = {s: {n: s + i / 8 for i, n in enumerate(NAMES)} for s in range(1, 7)}
        assert {s: {k: v for k, v in r.items() if k in NAMES} for s, r in rows.items()} == {
            s: expected[s] for s in range(1, 6)
        }
        assert rows[5]["alerts/hack_rate"] == "hack rate 0.5"
        if not later:  # no history rows written for the rewound run
            missing += 1
            continue
        # the resumed run rewinds the first to step 3: what sync uploads is 1..3, then 4..6
        assert later == {s: {n: v + 100 for n, v in expected[s].items()} for s in (4, 5, 6)}
        if resumed is not None:
            assert resumed.run_id == run.run_id
            point = resumed.branch_point
            assert (point.run, point.metric, point.value) == (run.run_id, "_step", 3)
        break
    assert missing < 3, "wandb-core wrote no records for the rewound run in 3 attempts"
