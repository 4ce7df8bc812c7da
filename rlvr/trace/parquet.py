"""The trace store: every trajectory and every step's metrics as Parquet, one part file
per step, under a local path or any fsspec URL (`s3://bucket/run` through s3fs,
`memory://...` in tests).

    <uri>/trajectories/step-000001.parquet       one row per trajectory of step 1 (trained or dropped)
    <uri>/metrics/step-000001.parquet            one row: step 1's metrics
    <uri>/alerts/step-000001.parquet             the alerts raised at step 1 (only steps that raised any)
    <uri>/evals/step-000000-before.parquet       one row: a held-out evaluation (step 0: before training)
    <uri>/eval_trajectories/step-000000-before.parquet   its trajectories, one per held-out task

A part is written under a temporary name and then moved into place, so a reader never
sees half a part and a crash loses at most the step being written; a resumed run
rewrites the parts of the steps it redoes (`truncate_after`). Every file carries
`rlvr.schema_version` in its metadata; the columns are documented in docs/traces.md.
Reading: `read_table(uri, "trajectories")` (pyarrow), or DuckDB over the same files.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Sequence
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rlvr.trace.store import StoreError
from rlvr.types import Trajectory

__all__ = ["StoreError", "TraceStore", "read_part", "read_table", "run_store_uri"]

SCHEMA_VERSION = 2  # 2: evals.suite


TABLES = ("trajectories", "metrics", "alerts", "evals", "eval_trajectories")
_PART = re.compile(r"step-(\d+)(?:-([a-z]+(?:-[a-z0-9_]+)?))?\.parquet$")  # step-N[-phase[-suite]]

_TURN = pa.struct(
    [("role", pa.string()), ("content", pa.string()), ("n_tokens", pa.int32()), ("trainable", pa.bool_())]
)
_TEST = pa.struct(
    [("name", pa.string()), ("status", pa.string()), ("message", pa.string()), ("duration_s", pa.float64())]
)
TRAJECTORY_SCHEMA = pa.schema(
    [
        ("step", pa.int32()),
        ("trained", pa.bool_()),
        ("task_id", pa.string()),
        ("domain", pa.string()),
        ("group_id", pa.string()),
        ("sample", pa.int32()),  # its place in the group (0..G-1): (step, group_id, sample) is unique
        ("policy_version", pa.int32()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("finish_reason", pa.string()),
        ("completion", pa.string()),
        ("turns", pa.list_(_TURN)),
        ("prompt_tokens", pa.int32()),
        ("completion_tokens", pa.int32()),
        ("trained_tokens", pa.int32()),
        ("logprob_mean", pa.float64()),
        ("logprob_min", pa.float64()),
        ("advantage", pa.float64()),
        ("reward", pa.float64()),
        ("reward_components", pa.map_(pa.string(), pa.float64())),
        ("reward_flags", pa.list_(pa.string())),
        ("reward_details", pa.string()),
        ("exec_status", pa.string()),
        ("exec_passed", pa.int32()),
        ("exec_total", pa.int32()),
        ("exec_wall_s", pa.float64()),
        ("exec_cpu_s", pa.float64()),
        ("exec_peak_mb", pa.float64()),
        ("exec_error", pa.string()),
        ("exec_stdout", pa.string()),
        ("exec_stderr", pa.string()),
        ("tests", pa.list_(_TEST)),
        ("timings", pa.map_(pa.string(), pa.float64())),
    ]
)
METRICS_SCHEMA = pa.schema([("step", pa.int32()), ("values", pa.map_(pa.string(), pa.float64()))])
ALERTS_SCHEMA = pa.schema(
    [
        ("step", pa.int32()),
        ("rule", pa.string()),  # e.g. "hack_rate", "entropy_floor" (docs/alerts.md)
        ("category", pa.string()),  # "hacking" | "collapse" | "infrastructure"
        ("action", pa.string()),  # "warn" | "checkpoint" | "stop"
        ("value", pa.float64()),  # what was observed
        ("threshold", pa.float64()),  # the level it crossed
        ("message", pa.string()),  # one line for a person
    ]
)
EVALS_SCHEMA = pa.schema(
    [
        ("step", pa.int32()),  # the policy's step: 0 before training
        ("phase", pa.string()),  # "before" | "after" | "periodic" (not "when": a SQL keyword)
        ("pass_at_1", pa.float64()),
        ("mean_reward", pa.float64()),
        ("num_tasks", pa.int32()),
        ("by_domain", pa.map_(pa.string(), pa.float64())),  # pass@1 per domain
        ("by_difficulty", pa.map_(pa.string(), pa.float64())),  # pass@1 per difficulty level
        ("suite", pa.string()),  # v2: the eval.sources suite ('' for the held-out split)
    ]
)
SCHEMAS = {
    "trajectories": TRAJECTORY_SCHEMA,
    "metrics": METRICS_SCHEMA,
    "alerts": ALERTS_SCHEMA,
    "evals": EVALS_SCHEMA,
    "eval_trajectories": TRAJECTORY_SCHEMA,
}


def _finite(x: Any) -> float | None:
    """A float for the store; NaN, infinities and non-numbers become null."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def trajectory_row(step: int, t: Trajectory, trained: bool, sample: int = 0) -> dict[str, Any]:
    """One row of the trajectories table (see docs/traces.md)."""
    trained_lp = [lp for lp, m in zip(t.logprobs, t.loss_mask, strict=False) if m]
    ex, rw = t.execution, t.reward
    return {
        "step": step,
        "trained": trained,
        "task_id": t.task_id,
        "domain": t.domain,
        "group_id": t.group_id,
        "sample": sample,
        "policy_version": t.policy_version,
        "status": t.status,
        "error": t.error,
        "finish_reason": t.finish_reason,
        "completion": t.completion_text,
        "turns": [
            {"role": u.role, "content": u.content, "n_tokens": len(u.token_ids), "trainable": u.trainable}
            for u in t.turns
        ],
        "prompt_tokens": len(t.prompt_ids),
        "completion_tokens": len(t.completion_ids),
        "trained_tokens": sum(1 for m in t.loss_mask if m),
        "logprob_mean": _finite(sum(trained_lp) / len(trained_lp)) if trained_lp else None,
        "logprob_min": _finite(min(trained_lp)) if trained_lp else None,
        "advantage": _finite(t.advantage),
        "reward": _finite(rw.total) if rw else None,
        "reward_components": [(k, _finite(v)) for k, v in rw.components.items()] if rw else [],
        "reward_flags": list(rw.flags) if rw else [],
        "reward_details": json.dumps(rw.details, default=str, ensure_ascii=False) if rw else None,
        "exec_status": ex.status.value if ex else None,
        "exec_passed": ex.passed if ex else None,
        "exec_total": ex.total if ex else None,
        "exec_wall_s": ex.wall_time_s if ex else None,
        "exec_cpu_s": ex.cpu_time_s if ex else None,
        "exec_peak_mb": ex.peak_memory_mb if ex else None,
        "exec_error": ex.error if ex else None,
        "exec_stdout": ex.stdout if ex else None,
        "exec_stderr": ex.stderr if ex else None,
        "tests": [
            {"name": r.name, "status": r.status.value, "message": r.message, "duration_s": r.duration_s}
            for r in (ex.tests if ex else [])
        ],
        "timings": [(k, _finite(v)) for k, v in t.timings.items()],
    }


def _numbered(trajs: list[tuple[Trajectory, bool]]) -> list[tuple[Trajectory, bool, int]]:
    """Each trajectory with its place among the step's trajectories of the same group."""
    seen: dict[str, int] = {}
    out = []
    for t, trained in trajs:
        n = seen.get(t.group_id, 0)
        seen[t.group_id] = n + 1
        out.append((t, trained, n))
    return out


class TraceStore:
    """Writes one step at a time; safe to read while a run writes (parts appear whole)."""

    def __init__(self, uri: str, *, create: bool = True) -> None:
        self.uri = uri.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.uri)
        if create:
            for table in TABLES:
                self.fs.makedirs(f"{self.root}/{table}", exist_ok=True)

    @classmethod
    def open(cls, uri: str) -> TraceStore:
        """An existing store, for reading (nothing is created)."""
        store = cls(uri, create=False)
        if not any(store.fs.isdir(f"{store.root}/{t}") for t in TABLES):
            raise StoreError(f"{uri}: no trace store there (no trajectories/ or metrics/ folder)")
        return store

    def write_step(self, step: int, trajectories: list[tuple[Trajectory, bool]], metrics: dict[str, Any]) -> None:
        """The step's trajectories, each with whether it was trained on (False: dropped),
        and its metrics (numbers; anything else is left out)."""
        rows = [trajectory_row(step, t, trained, n) for t, trained, n in _numbered(trajectories)]
        self._write("trajectories", step, pa.Table.from_pylist(rows, schema=TRAJECTORY_SCHEMA))
        numbers = {k: v for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        values = [(k, _finite(v)) for k, v in numbers.items()]  # NaN and infinities as null
        self._write("metrics", step, pa.Table.from_pylist([{"step": step, "values": values}], schema=METRICS_SCHEMA))

    def write_alerts(self, step: int, alerts: list[dict[str, Any]]) -> None:
        """The alerts raised at `step` (rows of ALERTS_SCHEMA); nothing is written for none."""
        if alerts:
            rows = [
                {**a, "step": step, "value": _finite(a.get("value")), "threshold": _finite(a.get("threshold"))}
                for a in alerts
            ]
            self._write("alerts", step, pa.Table.from_pylist(rows, schema=ALERTS_SCHEMA))

    def write_eval(
        self,
        step: int,
        when: str,
        summary: dict[str, Any],
        trajectories: list[Trajectory],
        suite: str = "",
    ) -> None:
        """A held-out evaluation of the policy after `step` steps (0: before training):
        `summary` has pass_at_1, mean_reward, num_tasks, by_domain, by_difficulty; `suite`
        names an eval.sources suite ('' for the training set's held-out split)."""
        if not re.fullmatch(r"[a-z]+", when):
            raise ValueError(f"evaluation label must be lowercase letters, got {when!r}")
        if not re.fullmatch(r"[a-z0-9_]*", suite):
            raise ValueError(f"suite name must be lowercase letters, digits and _, got {suite!r}")
        row = {
            "step": step,
            "phase": when,
            "pass_at_1": _finite(summary["pass_at_1"]),
            "mean_reward": _finite(summary["mean_reward"]),
            "num_tasks": int(summary["num_tasks"]),
            "by_domain": [(str(k), _finite(v)) for k, v in summary.get("by_domain", {}).items()],
            "by_difficulty": [(str(k), _finite(v)) for k, v in summary.get("by_difficulty", {}).items()],
            "suite": suite,
        }
        label = f"{when}-{suite}" if suite else when
        self._write("evals", step, pa.Table.from_pylist([row], schema=EVALS_SCHEMA), label=label)
        rows = [trajectory_row(step, t, False, n) for t, _, n in _numbered([(t, False) for t in trajectories])]
        self._write("eval_trajectories", step, pa.Table.from_pylist(rows, schema=TRAJECTORY_SCHEMA), label=label)

    def _write(self, table: str, step: int, data: pa.Table, label: str = "") -> None:
        data = data.replace_schema_metadata({"rlvr.schema_version": str(SCHEMA_VERSION), "rlvr.table": table})
        name = f"step-{step:06d}" + (f"-{label}" if label else "")
        final = f"{self.root}/{table}/{name}.parquet"
        tmp = f"{self.root}/{table}/.{name}.{uuid.uuid4().hex}.tmp"
        with self.fs.open(tmp, "wb") as f:
            pq.write_table(data, f, compression="zstd")
        self.fs.mv(tmp, final)

    def parts(self, table: str = "trajectories") -> list[str]:
        """The paths of `table`'s parts, in step order (labelled parts of one step by label)."""
        if not self.fs.isdir(f"{self.root}/{table}"):
            return []
        names = self.fs.ls(f"{self.root}/{table}", detail=False)
        found = [(int(m.group(1)), m.group(2) or "", str(n)) for n in names if (m := _PART.search(str(n)))]
        return [n for _, _, n in sorted(found)]

    def steps(self, table: str = "trajectories") -> list[int]:
        """The steps that have a part in `table`, in order."""
        return sorted({int(m.group(1)) for n in self.parts(table) if (m := _PART.search(n))})

    def truncate_after(self, step: int) -> None:
        """Remove the parts of steps after `step` (what a crashed run wrote after its last
        checkpoint, which the resumed run redoes) and any temporary files left behind."""
        for table in TABLES:
            if not self.fs.isdir(f"{self.root}/{table}"):
                continue
            for name in self.fs.ls(f"{self.root}/{table}", detail=False):
                m = _PART.search(str(name))
                if (m and int(m.group(1)) > step) or str(name).endswith(".tmp"):
                    self.fs.rm(name)


def read_part(fs: Any, path: str, columns: Sequence[str] | None = None) -> pa.Table:
    """One part file, read and closed on the calling thread.

    `pq.read_table` reads a Python file object through pyarrow's dataset layer, whose thread
    pool workers may hold the last reference to that file; when one drops it after the
    interpreter began to exit, the process aborts ("terminate called without an active
    exception", 2 to 10 runs in 60 of `rlvr export` on a loaded 2-core machine). A
    `ParquetFile` reads synchronously and is closed here. Parts are one step each and small.
    """
    with fs.open(path, "rb") as f, pq.ParquetFile(f) as part:
        return part.read(columns=columns, use_threads=False)


def read_table(uri: str, table: str = "trajectories") -> pa.Table:
    """Every part of one table, concatenated in step order (empty when none yet)."""
    if table not in TABLES:
        raise StoreError(f"no trace table '{table}'; tables: {', '.join(TABLES)}")
    store = TraceStore.open(uri)
    parts = []
    for path in store.parts(table):
        parts.append(read_part(store.fs, path))
    # parts written by an older schema lack its newer columns: they read as nulls
    return pa.concat_tables(parts, promote_options="default") if parts else SCHEMAS[table].empty_table()


def run_store_uri(run: str) -> str:
    """The trace store of RUN as a user names it: a run directory (its config's
    `trace.uri`, else <storage.uri>/traces, else <run>/traces), or a store's own path or URL."""
    import yaml

    fs, root = fsspec.core.url_to_fs(run)
    if fs.isdir(f"{root}/trajectories") or fs.isdir(f"{root}/metrics"):
        return run.rstrip("/")
    cfg_file = f"{root}/config.yaml"
    if fs.isfile(cfg_file):
        with fs.open(cfg_file, "r") as f:
            cfg = yaml.safe_load(f) or {}
        uri = (cfg.get("trace") or {}).get("uri")
        if uri:
            return str(uri)
        storage = (cfg.get("storage") or {}).get("uri")
        if storage:  # storage.uri holds the store when trace.uri is not set
            return f"{str(storage).rstrip('/')}/traces"
        return f"{run.rstrip('/')}/traces"
    raise StoreError(f"{run}: not a run directory (no config.yaml) nor a trace store (no trajectories/)")
