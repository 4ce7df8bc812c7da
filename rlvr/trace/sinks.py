"""Metric sinks: where every step's numbers go besides metrics.jsonl and the trace store
(log.sinks: tensorboard, wandb, mlflow).

The training loop opens them once with `open_sinks(cfg, resume_step=...)` and calls
`log_metrics(step, metrics)` each step, `log_text(step, key, text)` for messages such as
alerts, and `close()` at the end. Metric names pass through unchanged (MLflow alone
rewrites characters it rejects, see `mlflow_name`); non-finite values are skipped, as in
metrics.jsonl. Each sink comes wrapped in a `GuardedSink`: a sink that fails mid-run (a
full disk, a crashed W&B service) is reported once on stderr and disabled, and training
goes on with the others. wandb and mlflow are optional packages, imported only when named.

Resuming from a checkpoint at step S re-logs the steps after S; each sink hides what the
crashed run logged after S where its library allows it:
- tensorboard: a new event file with `purge_step=S+1`; TensorBoard's readers drop the
  earlier files' events at steps > S.
- wandb: a new run that rewinds the previous one (`resume_from="<id>?_step=S"`, W&B's run
  rewind). Offline, both runs stay as separate directories under <run>/wandb, the new
  one's run record carrying the branch point; `wandb sync` of both, oldest first, leaves
  one history on the server (the server does the rewind).
- mlflow: the same MLflow run continues (its id is kept in <run>/mlflow_run_id). With a
  local file store the crashed run's points after S are removed from its metric files;
  MLflow's API has no way to delete metric points, so with a server or database store
  those steps keep both points (the resumed ones are the later).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TextIO, runtime_checkable
from urllib.parse import urlparse
from urllib.request import url2pathname

from rlvr.config import ConfigError, RunConfig
from rlvr.config.base import redact

__all__ = [
    "GuardedSink",
    "MetricSink",
    "MlflowSink",
    "TensorBoardSink",
    "WandbSink",
    "finite_metrics",
    "mlflow_name",
    "open_sinks",
]


@runtime_checkable
class MetricSink(Protocol):
    """One destination of the per-step metrics."""

    name: str

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        """Record one training step's numbers (non-finite values are skipped)."""

    def log_text(self, step: int, key: str, text: str) -> None:
        """Record a message at a step, e.g. an alert under key 'alerts/<rule>'."""

    def close(self) -> None:
        """Flush and release the sink; it is not used afterwards."""


def finite_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The metrics as floats, without NaN, infinities and values that are not numbers:
    no sink can chart them, and metrics.jsonl stores them as null."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, str | bytes):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[key] = number
    return out


class GuardedSink:
    """A sink whose failures cannot stop training: the first exception raised by one of
    its calls is reported on stderr with the sink's name, and the sink is disabled for the
    rest of the run (later calls do nothing). KeyboardInterrupt and other BaseExceptions
    that are not Exceptions pass through."""

    def __init__(self, sink: MetricSink, stream: TextIO | None = None) -> None:
        self.sink = sink
        self.name = sink.name
        self.disabled = False
        self._closed = False
        self._stream = stream

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        if not self.disabled:
            try:
                self.sink.log_metrics(step, metrics)
            except Exception as err:
                self._fail(f"logging the metrics of step {step}", err)

    def log_text(self, step: int, key: str, text: str) -> None:
        if not self.disabled:
            try:
                self.sink.log_text(step, key, text)
            except Exception as err:
                self._fail(f"logging text '{key}' at step {step}", err)

    def close(self) -> None:
        # A disabled sink is still closed, to release what it holds; a second failure
        # of a sink already reported is not reported again. Closing twice does nothing.
        if self._closed:
            return
        self._closed = True
        try:
            self.sink.close()
        except Exception as err:
            if not self.disabled:
                self._fail("closing", err)
        self.disabled = True

    def _fail(self, what: str, err: Exception) -> None:
        self.disabled = True
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        stream = self._stream or sys.stderr
        print(
            f"rlvr: metric sink '{self.name}' failed {what} ({type(err).__name__}: {message}); "
            "it is disabled for the rest of this run (metrics.jsonl and the other sinks go on)",
            file=stream,
            flush=True,
        )


class TensorBoardSink:
    """Scalars and text in TensorBoard event files under <run>/tensorboard, flushed every
    step so that a live `tensorboard --logdir` sees each step as it ends. Scalars are
    stored as TensorBoard's float32 simple values."""

    name = "tensorboard"

    def __init__(self, log_dir: Path, *, resume_step: int = 0) -> None:
        from torch.utils.tensorboard import SummaryWriter

        # purge_step writes a session-start event at S+1: readers then drop the events of
        # earlier files at steps > S (what a crashed run logged after its checkpoint).
        self._writer = SummaryWriter(log_dir=str(log_dir), purge_step=resume_step + 1 if resume_step > 0 else None)

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        for key, value in finite_metrics(metrics).items():
            self._writer.add_scalar(key, value, step)
        self._writer.flush()

    def log_text(self, step: int, key: str, text: str) -> None:
        self._writer.add_text(key, text, step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class WandbSink:
    """A Weights & Biases run: offline (the default) it is written under <run>/wandb with
    no network and no login, to be uploaded later with `wandb sync`. wandb prints nothing
    (silent) and does not capture the console; its service is a subprocess. The run id is
    kept in <run>/wandb_run_id so that a resumed run can rewind it."""

    name = "wandb"

    def __init__(self, cfg: RunConfig, *, resume_step: int = 0) -> None:
        wandb = _import_optional("wandb")
        run_dir = cfg.run_dir
        id_file = run_dir / "wandb_run_id"
        previous = id_file.read_text(encoding="utf-8").strip() if resume_step > 0 and id_file.is_file() else ""
        extra: dict[str, Any] = {}
        if re.fullmatch(r"[A-Za-z0-9_-]+", previous):
            extra["resume_from"] = f"{previous}?_step={resume_step}"
        self._run = wandb.init(
            mode=cfg.log.wandb_mode,
            dir=str(run_dir),
            project=cfg.log.wandb_project,
            name=cfg.name,
            config=redact(cfg.model_dump(mode="json")),
            # several runs may exist in one process (tests, notebooks): never reuse or
            # finish another one
            reinit="create_new",
            settings=wandb.Settings(silent=True, console="off"),
            **extra,
        )
        id_file.write_text(self._run.id + "\n", encoding="utf-8")

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        values = finite_metrics(metrics)
        if values:
            self._run.log(values, step=step)

    def log_text(self, step: int, key: str, text: str) -> None:
        # a string in the step's history row (W&B charts numbers, lists strings)
        self._run.log({key: text}, step=step)

    def close(self) -> None:
        self._run.finish()


# MLflow's own name rule also allows other Unicode word characters and, off Windows,
# colons; the ASCII subset below is valid on every MLflow server.
_MLFLOW_BAD_CHAR = re.compile(r"[^A-Za-z0-9_.\- /]")
_MLFLOW_MAX_KEY = 250  # mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH
_MLFLOW_MAX_PARAM_VALUE = 6000  # mlflow.utils.validation.MAX_PARAM_VAL_LENGTH
_MLFLOW_BATCH = 100  # params per log_batch call (metrics: up to 1000)


def mlflow_name(name: str) -> str:
    """A metric or param name MLflow accepts, the same for the same input: characters
    other than ASCII letters, digits, '_', '-', '.', ' ' and '/' become '_'; path segments
    that would not survive path normalisation become underscores ('' and '.' -> '_', '..'
    -> '__', so '/a' -> '_/a', 'a//b' -> 'a/_/b'); a name longer than MLflow's 250
    characters is cut to 241 and ends with '-' and 8 hex digits of its SHA-1. Valid names
    (all of rlvr's own) are unchanged. Two names that differ only in rejected characters
    map to one; in one step the later value wins."""
    cleaned = _MLFLOW_BAD_CHAR.sub("_", name)
    segments = ["_" if s in ("", ".") else "__" if s == ".." else s for s in cleaned.split("/")]
    cleaned = "/".join(segments)
    if len(cleaned) > _MLFLOW_MAX_KEY:
        digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
        cleaned = f"{cleaned[: _MLFLOW_MAX_KEY - 9]}-{digest}"
    return cleaned


def _flatten(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """Dotted keys and string values of a nested config (lists and scalars as JSON)."""
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value if isinstance(value, str) else json.dumps(value)


def _local_store_root(uri: str) -> Path | None:
    """The directory of a file-store tracking URI ('file:...' or a plain path), else None."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(url2pathname(parsed.path))
    if parsed.scheme == "" or len(parsed.scheme) == 1:  # a path; one letter: a Windows drive
        return Path(uri)
    return None


class MlflowSink:
    """An MLflow run in an experiment named by log.mlflow_experiment: params are the
    flattened config (values cut to MLflow's 6000 characters), metrics are logged with
    their step, text as artifacts text/<key>/step-<N>.txt.

    The default store is a local file store under <run>/mlflow: MLflow 3's recommended
    sqlite store needs SQLAlchemy and Alembic, which mlflow-skinny does not install, while
    the file store needs nothing more. It is in maintenance mode and refused unless
    MLFLOW_ALLOW_FILE_STORE is true, which this sink sets (unless already set) for file
    stores. `mlflow ui --backend-store-uri <run>/mlflow` shows it (with that variable set)."""

    name = "mlflow"

    def __init__(self, cfg: RunConfig, *, resume_step: int = 0) -> None:
        _import_optional("mlflow")
        from mlflow.entities import Param
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        run_dir = cfg.run_dir
        uri = cfg.log.mlflow_tracking_uri or (run_dir / "mlflow").resolve().as_uri()
        store_root = _local_store_root(uri)
        if store_root is not None:
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.tracking_uri = uri
        self._client = MlflowClient(tracking_uri=uri)
        self._names: dict[str, str] = {}

        id_file = run_dir / "mlflow_run_id"
        run = None
        if resume_step > 0 and id_file.is_file():
            try:
                run = self._client.get_run(id_file.read_text(encoding="utf-8").strip())
            except MlflowException:
                run = None  # another store, or the run was removed: start a new one
            if run is not None and run.info.lifecycle_stage != "active":
                run = None
        if run is not None:
            self.run_id = run.info.run_id
            self._client.update_run(self.run_id, status="RUNNING")
            self._client.set_tag(self.run_id, "rlvr.resumed_at_step", str(resume_step))
            if store_root is not None:
                metrics_dir = store_root.resolve() / run.info.experiment_id / self.run_id / "metrics"
                _drop_points_after(metrics_dir, resume_step)
            logged = set(run.data.params)  # params cannot change once logged
        else:
            experiment_id = self._experiment_id(cfg.log.mlflow_experiment)
            run = self._client.create_run(
                experiment_id, run_name=cfg.name, tags={"rlvr.run_dir": str(run_dir.resolve())}
            )
            self.run_id = run.info.run_id
            id_file.write_text(self.run_id + "\n", encoding="utf-8")
            logged = set()
        params: dict[str, str] = {}
        for key, value in _flatten(redact(cfg.model_dump(mode="json"))):
            params.setdefault(mlflow_name(key), value[:_MLFLOW_MAX_PARAM_VALUE])
        todo = [Param(k, v) for k, v in params.items() if k not in logged]
        for i in range(0, len(todo), _MLFLOW_BATCH):
            self._client.log_batch(self.run_id, params=todo[i : i + _MLFLOW_BATCH])

    def _experiment_id(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        found = self._client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(self._client.create_experiment(name))
        except MlflowException:  # created meanwhile by another run
            found = self._client.get_experiment_by_name(name)
            if found is None:
                raise
            return str(found.experiment_id)

    def _name(self, key: str) -> str:
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = mlflow_name(key)
        return name

    def log_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        from mlflow.entities import Metric

        values = {self._name(k): v for k, v in finite_metrics(metrics).items()}
        if not values:
            return
        stamp = int(time.time() * 1000)
        points = [Metric(k, v, stamp, step) for k, v in values.items()]
        for i in range(0, len(points), 1000):
            self._client.log_batch(self.run_id, metrics=points[i : i + 1000])

    def log_text(self, step: int, key: str, text: str) -> None:
        self._client.log_text(self.run_id, text, f"text/{mlflow_name(key)}/step-{step:08d}.txt")

    def close(self) -> None:
        self._client.set_terminated(self.run_id)


def _drop_points_after(metrics_dir: Path, step: int) -> None:
    """Remove, from an MLflow file store run's metric files, the points logged at steps
    after `step`. Each file holds one metric, one point a line:
    '<timestamp ms> <value> <step>' (two fields: step 0; five: with a dataset)."""
    if not metrics_dir.is_dir():
        return
    for path in list(metrics_dir.rglob("*")):
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if _point_step(line) <= step]
        if not kept:  # MLflow reads an empty metric file as malformed
            path.unlink()
        elif len(kept) != len(lines):
            tmp = path.with_name(path.name + ".rlvr-tmp")
            tmp.write_text("".join(kept), encoding="utf-8")
            tmp.replace(path)
    for folder in sorted((p for p in metrics_dir.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):  # a metric namespace ('hack/...') left empty
            folder.rmdir()


def _point_step(line: str) -> int:
    fields = line.split()
    try:
        return int(fields[2]) if len(fields) >= 3 else 0
    except ValueError:
        return 0


def _import_optional(module: str) -> ModuleType:
    """Import an optional sink's package, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise  # the package is there but one of its own imports is broken
        raise ConfigError(
            f"log.sinks has {module} but the {module} package is not installed: pip install 'rlvr[{module}]'"
        ) from err


def check_sinks(cfg: RunConfig) -> None:
    """ConfigError naming the extra to install for each optional sink whose package is missing."""
    for kind in dict.fromkeys(cfg.log.sinks):
        if kind in ("wandb", "mlflow"):
            _import_optional(kind)


def open_sinks(cfg: RunConfig, *, resume_step: int = 0) -> list[MetricSink]:
    """Open the sinks named in cfg.log.sinks (each once, in order), each wrapped in a
    GuardedSink. `resume_step` is the checkpoint step a resumed run starts after (0: a new
    run). A missing optional package is a ConfigError, checked before any sink is opened;
    a sink that cannot open raises, after the ones already opened are closed."""
    kinds = list(dict.fromkeys(cfg.log.sinks))
    for kind in kinds:
        if kind in ("wandb", "mlflow"):
            _import_optional(kind)
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    opened: list[MetricSink] = []
    try:
        for kind in kinds:
            sink: MetricSink
            if kind == "tensorboard":
                sink = TensorBoardSink(cfg.run_dir / "tensorboard", resume_step=resume_step)
            elif kind == "wandb":
                sink = WandbSink(cfg, resume_step=resume_step)
            else:
                sink = MlflowSink(cfg, resume_step=resume_step)
            opened.append(GuardedSink(sink))
    except BaseException:
        for done in opened:
            done.close()
        raise
    return opened
