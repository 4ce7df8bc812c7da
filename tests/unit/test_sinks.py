"""Metric sinks (rlvr.trace.sinks): what each writes is read back with its library's own
reader (TensorBoard's EventAccumulator, wandb's record protos, MLflow's client), resumed
runs show each step once, failing sinks are disabled with one message, and missing
optional packages are a ConfigError."""

from __future__ import annotations

import json
import math
import struct
import sys
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rlvr.config import ConfigError, RunConfig
from rlvr.trace.sinks import GuardedSink, MetricSink, finite_metrics, open_sinks

NAMES = [
    "reward/mean",
    "reward/pass_rate",
    "hack/rate",
    "domain/code/reward/mean",
    "train/loss",
    "time/train_s",
    "sandbox/status/TIMEOUT",
]


def _cfg(tmp_path: Path, *sinks: str) -> RunConfig:
    return RunConfig.model_validate({"name": "r", "output_dir": str(tmp_path), "log": {"sinks": list(sinks)}})


def _metrics(step: int, offset: float = 0.0) -> dict[str, float]:
    # multiples of 1/8: exact in float32, as TensorBoard stores scalars
    values = {name: step + i / 8 + offset for i, name in enumerate(NAMES)}
    return {**values, "train/grad_norm": math.nan, "train/entropy": math.inf}


def _log(sinks: list[MetricSink], steps: range, offset: float = 0.0) -> None:
    for step in steps:
        for sink in sinks:
            sink.log_metrics(step, _metrics(step, offset))


def _close(sinks: list[MetricSink]) -> None:
    for sink in sinks:
        sink.close()


def test_finite_metrics_skips_what_cannot_be_charted() -> None:
    got = finite_metrics({"a": 1, "b": 0.5, "c": math.nan, "d": -math.inf, "e": "x", "f": None, "g": True})
    assert got == {"a": 1.0, "b": 0.5, "g": 1.0}


# --- TensorBoard -------------------------------------------------------------------------


def _tensorboard(log_dir: Path) -> Any:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_tensorboard_scalars_and_text_read_back(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "tensorboard")
    sinks = open_sinks(cfg)
    assert [s.name for s in sinks] == ["tensorboard"] and isinstance(sinks[0], GuardedSink)
    _log(sinks, range(1, 4))
    sinks[0].log_text(2, "alerts/reward_collapse", "reward fell to 0")
    _close(sinks)

    acc = _tensorboard(cfg.run_dir / "tensorboard")
    assert sorted(acc.Tags()["scalars"]) == sorted(NAMES)  # NaN and inf never written
    for i, name in enumerate(NAMES):
        events = acc.Scalars(name)
        assert [e.step for e in events] == [1, 2, 3]
        assert [e.value for e in events] == [s + i / 8 for s in (1, 2, 3)]
    (text,) = acc.Tensors("alerts/reward_collapse/text_summary")
    assert text.step == 2 and text.tensor_proto.string_val == [b"reward fell to 0"]


def test_tensorboard_resume_purges_the_crashed_runs_later_steps(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "tensorboard")
    sinks = open_sinks(cfg)
    _log(sinks, range(1, 6))  # crashed after step 5, last checkpoint at step 3
    _close(sinks)
    sinks = open_sinks(cfg, resume_step=3)
    _log(sinks, range(4, 7), offset=100.0)
    _close(sinks)

    acc = _tensorboard(cfg.run_dir / "tensorboard")
    for i, name in enumerate(NAMES):
        events = acc.Scalars(name)
        assert [e.step for e in events] == [1, 2, 3, 4, 5, 6]
        assert [e.value for e in events] == [s + i / 8 + (100 if s > 3 else 0) for s in range(1, 7)]


# --- W&B ---------------------------------------------------------------------------------


def _wandb_records(path: Path) -> Iterator[Any]:
    """The records of a .wandb file: a 7-byte header (':W&B', 0xBEE1, version 0) and then
    LevelDB log format (32 KiB blocks; chunks with a CRC-32, a length and a type: full,
    first, middle, last), each record a wandb_internal_pb2.Record."""
    from wandb.proto.wandb_internal_pb2 import Record  # type: ignore[attr-defined]

    data = path.read_bytes()
    assert struct.unpack("<4sHB", data[:7]) == (b":W&B", 0xBEE1, 0)
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        room = 32768 - pos % 32768
        if room < 7:  # block trailer
            pos += room
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0:  # zero padding
            pos += room
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc
        pos += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = Record()
            record.ParseFromString(pending)
            yield record


def _wandb_run(run_dir: Path) -> tuple[Any, dict[int, dict[str, Any]]]:
    """The run record and the history rows ({step: {key: value}}) of one offline run."""
    (path,) = run_dir.glob("*.wandb")
    run, rows = None, {}
    for record in _wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
        elif kind == "history":
            items = {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in record.history.item}
            rows[items.pop("_step")] = {k: v for k, v in items.items() if not k.startswith("_")}
    return run, rows


# --- failures ----------------------------------------------------------------------------


class _Failing:
    name = "flaky"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        self.calls.append(f"metrics {step}")
        if step >= 2:
            raise OSError(28, "No space left on device")

    def log_text(self, step: int, key: str, text: str) -> None:
        self.calls.append(f"text {step}")

    def close(self) -> None:
        self.calls.append("close")
        raise RuntimeError("already broken")


def test_guarded_sink_reports_once_and_disables(capsys: pytest.CaptureFixture[str]) -> None:
    inner = _Failing()
    sink = GuardedSink(inner)
    assert isinstance(sink, MetricSink)
    for step in (1, 2, 3):
        sink.log_metrics(step, {"reward/mean": 1.0})
        sink.log_text(step, "alerts/x", "y")
    sink.close()
    sink.close()
    assert inner.calls == ["metrics 1", "text 1", "metrics 2", "close"]
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.count("'flaky'") == 1
    assert "step 2" in err and "No space left on device" in err and "disabled" in err


def test_guarded_sink_lets_interrupts_through() -> None:
    class Interrupted(_Failing):
        def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
            raise KeyboardInterrupt

    sink = GuardedSink(Interrupted())
    with pytest.raises(KeyboardInterrupt):
        sink.log_metrics(1, {})
    assert not sink.disabled


def test_a_failing_real_sink_is_disabled_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from torch.utils.tensorboard import SummaryWriter

    (sink,) = open_sinks(_cfg(tmp_path, "tensorboard"))
    sink.log_metrics(1, {"reward/mean": 1.0})

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SummaryWriter, "flush", full)
    sink.log_metrics(2, {"reward/mean": 1.0})
    sink.log_metrics(3, {"reward/mean": 1.0})
    assert "metric sink 'tensorboard' failed" in capsys.readouterr().err
    monkeypatch.undo()
    sink.close()


@pytest.mark.parametrize("package", ["wandb", "mlflow"])
def test_missing_package_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # import raises ModuleNotFoundError
    cfg = _cfg(tmp_path, "tensorboard", package)
    message = f"log.sinks has {package} but the {package} package is not installed: pip install 'rlvr[{package}]'"
    with pytest.raises(ConfigError) as info:
        open_sinks(cfg)
    assert str(info.value) == message
    assert not cfg.run_dir.exists()  # checked before any sink was opened


def test_rlvr_train_says_so_before_the_run_directory_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli import main

    monkeypatch.setitem(sys.modules, "wandb", None)
    quick = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
    argv = ["train", str(quick), "model.name_or_path=tiny-random", "log.sinks=[tensorboard, wandb]",
            f"output_dir={tmp_path}", "name=w"]  # fmt: skip
    assert main(argv) == 2
    assert "pip install 'rlvr[wandb]'" in capsys.readouterr().err
    assert not (tmp_path / "w").exists()  # nothing to clean up before the next try
