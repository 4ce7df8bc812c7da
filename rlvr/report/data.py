"""A run's trace store read into plain Python for the report: per-step metric series
aligned on the steps that have metrics, the alerts, the evaluations, and a few chosen
trajectories (best, worst, flagged) with everything a person needs to read them."""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

# Names the metrics had before they were grouped (docs/traces.md), so that runs written
# before the rename still chart in the same places. A grouped name wins when both exist.
LEGACY_NAMES = {
    "reward_mean": "reward/mean",
    "pass_rate": "reward/pass_rate",
    "hack_rate": "hack/rate",
    "loss": "train/loss",
    "pg_loss": "train/pg_loss",
    "grad_norm": "train/grad_norm",
    "entropy": "train/entropy",
    "kl": "train/kl",
    "clip_frac": "train/clip_frac",
    "logprob_mismatch": "train/logprob_mismatch",
    "lr": "train/lr",
    "completion_len_mean": "rollout/completion_len_mean",
    "truncated_frac": "rollout/truncated_frac",
    "staleness_mean": "train/staleness_mean",
    "rollout_wait_s": "time/rollout_wait_s",
    "train_s": "time/train_s",
    "tokens_per_s": "time/tokens_per_s",
    "gen_tokens_per_s": "time/gen_tokens_per_s",
}
SKIPPED = {"step", "weights_fingerprint"}  # the x axis itself; a checksum of the weights (not a metric)

# the columns read from every part to choose which trajectories to show
_CHOOSE_COLUMNS = ["step", "reward", "reward_flags"]
_PART = re.compile(r"^step-(\d+)(?:-([a-z]+))?\.parquet$")  # a store's part (not a temporary file)


@dataclass
class RunData:
    """One run as the report shows it. `series[name][i]` is the metric at `steps[i]`
    (None where that step did not log it)."""

    name: str
    source: str  # RUN as the user gave it
    uri: str  # its trace store
    config: dict[str, Any] | None = None
    config_text: str | None = None
    steps: list[int] = field(default_factory=list)
    series: dict[str, list[float | None]] = field(default_factory=dict)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)
    # "flagged", "best", "worst": trajectory rows (docs/traces.md) plus "index", the row's
    # position in its step's part (with the step, a stable identity)
    trajectories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    num_trajectories: int = 0
    num_flagged: int = 0
    task_check: dict[str, Any] | None = None  # the run's task_check.json (rlvr.tasks.check)


def metric_name(raw: str) -> str | None:
    """The grouped name of a logged metric (None: not charted)."""
    if raw in SKIPPED:
        return None
    if raw in LEGACY_NAMES:
        return LEGACY_NAMES[raw]
    if raw.startswith("status/"):
        return "sandbox/" + raw
    return raw


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def metric_series(rows: list[dict[str, Any]]) -> tuple[list[int], dict[str, list[float | None]]]:
    """Rows of the metrics table -> (the steps, in order, once each; every metric's value at
    each of those steps). A step written twice keeps its last row."""
    by_step: dict[int, dict[str, float | None]] = {}
    for row in rows:
        values: dict[str, float | None] = {}
        grouped: set[str] = set()
        for raw, v in row.get("values") or []:
            name = metric_name(raw)
            if name is None or (name in grouped and raw != name):
                continue  # a grouped name wins over its legacy alias
            values[name] = _number(v)
            if raw == name:
                grouped.add(name)
        by_step[int(row["step"])] = values
    steps = sorted(by_step)
    names = sorted({n for v in by_step.values() for n in v})
    return steps, {n: [by_step[s].get(n) for s in steps] for n in names}


def _as_dict(pairs: Any) -> dict[str, Any]:
    if isinstance(pairs, dict):
        return dict(pairs)
    return {str(k): v for k, v in (pairs or [])}


def _trajectory(row: dict[str, Any], index: int) -> dict[str, Any]:
    row = dict(row)
    row["index"] = index
    row["reward_components"] = _as_dict(row.get("reward_components"))
    row["timings"] = _as_dict(row.get("timings"))
    row["reward_flags"] = list(row.get("reward_flags") or [])
    row["turns"] = list(row.get("turns") or [])
    row["tests"] = list(row.get("tests") or [])
    return row


def choose(
    candidates: list[tuple[int, int, float | None, bool]], top: int, max_flagged: int
) -> dict[str, list[tuple[int, int]]]:
    """From (step, index, reward, flagged) of every trajectory: the `top` best and worst by
    reward (later steps first among equals) and the latest `max_flagged` flagged ones, as
    (step, index) in display order."""
    scored = [c for c in candidates if c[2] is not None]
    best = sorted(scored, key=lambda c: (-(c[2] or 0.0), -c[0], c[1]))[:top]
    worst = sorted(scored, key=lambda c: ((c[2] or 0.0), -c[0], c[1]))[:top]
    flagged = sorted(c for c in candidates if c[3])[-max_flagged:] if max_flagged > 0 else []
    return {
        "flagged": [(c[0], c[1]) for c in flagged],
        "best": [(c[0], c[1]) for c in best],
        "worst": [(c[0], c[1]) for c in worst],
    }


def _read_trajectories(uri: str, top: int, max_flagged: int) -> tuple[dict[str, list[dict[str, Any]]], int, int]:
    """The chosen trajectories of a store, reading only the columns needed to choose from
    every part, and whole rows only from the parts that hold a chosen one."""

    from rlvr.trace.parquet import TraceStore, read_part

    store = TraceStore(uri, create=False)
    candidates: list[tuple[int, int, float | None, bool]] = []
    part_of: dict[int, str] = {}
    for path in store.parts("trajectories"):
        table = read_part(store.fs, path, _CHOOSE_COLUMNS)
        for i, row in enumerate(table.to_pylist()):
            step = int(row["step"])
            part_of[step] = path
            candidates.append((step, i, _number(row["reward"]), bool(row["reward_flags"])))
    chosen = choose(candidates, top, max_flagged)
    wanted: dict[int, set[int]] = {}
    for keys in chosen.values():
        for step, i in keys:
            wanted.setdefault(step, set()).add(i)
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for step, indices in wanted.items():
        table = read_part(store.fs, part_of[step])
        for i in indices:
            rows[(step, i)] = _trajectory(table.slice(i, 1).to_pylist()[0], i)
    out = {kind: [rows[k] for k in keys] for kind, keys in chosen.items()}
    return out, len(candidates), sum(1 for c in candidates if c[3])


def _run_file(source: str, uri: str, name: str) -> str | None:
    """The text of a file of the run directory: in RUN, or next to the store when RUN is
    the store itself; None when neither has it."""
    import fsspec

    for base in (source.rstrip("/"), posixpath.dirname(uri.rstrip("/"))):
        if not base:
            continue
        try:
            fs, root = fsspec.core.url_to_fs(base)
            if not fs.isfile(f"{root}/{name}"):
                continue
            with fs.open(f"{root}/{name}", "r") as f:
                return str(f.read())
        except (OSError, ValueError):
            continue
    return None


def _read_task_check(source: str, uri: str) -> dict[str, Any] | None:
    """The run's task_check.json (what the task check quarantined), None when absent or
    unreadable."""
    text = _run_file(source, uri, "task_check.json")
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _read_config(source: str, uri: str) -> tuple[dict[str, Any] | None, str | None]:
    """The run's config.yaml: in RUN, or next to the store when RUN is the store itself."""
    import yaml

    text = _run_file(source, uri, "config.yaml")
    if text is not None:
        from rlvr.config.base import redact

        try:
            cfg = yaml.safe_load(text)
        except yaml.YAMLError:
            return None, None  # unreadable: not shown (it could hold a secret we cannot find)
        if not isinstance(cfg, dict):
            return None, None
        cfg = redact(cfg)  # the page may be mailed around: no webhook URLs, no URL passwords
        return cfg, yaml.safe_dump(cfg, sort_keys=False)
    return None, None


def run_name(source: str, uri: str, config: dict[str, Any] | None) -> str:
    if config and config.get("name"):
        return str(config["name"])
    base = posixpath.basename(source.rstrip("/"))
    if base == "traces":  # the default store inside a run directory: name it by the run
        base = posixpath.basename(posixpath.dirname(source.rstrip("/"))) or base
    return base or source


def _phase_order(phase: str) -> int:
    return {"before": 0, "periodic": 1, "after": 2}.get(phase, 1)


def load_run(source: str, *, top: int = 5, max_flagged: int = 20) -> RunData:
    """Read RUN (a run directory, or a trace store's path or URL) for the report."""
    from rlvr.trace.parquet import read_table, run_store_uri

    uri = run_store_uri(source)
    config, config_text = _read_config(source, uri)
    steps, series = metric_series(read_table(uri, "metrics").to_pylist())
    alerts = sorted(read_table(uri, "alerts").to_pylist(), key=lambda a: int(a["step"]))
    evals = []
    for e in read_table(uri, "evals").to_pylist():
        e["phase"] = str(e.get("phase") or e.get("when") or "")  # `when` in stores written before the rename
        e["by_domain"] = _as_dict(e.get("by_domain"))
        e["by_difficulty"] = _as_dict(e.get("by_difficulty"))
        evals.append(e)
    evals.sort(key=lambda e: (int(e["step"]), _phase_order(e["phase"])))
    trajectories, n, n_flagged = _read_trajectories(uri, top, max_flagged)
    return RunData(
        name=run_name(source, uri, config),
        source=source,
        uri=uri,
        config=config,
        config_text=config_text,
        steps=steps,
        series=series,
        alerts=alerts,
        evals=evals,
        trajectories=trajectories,
        num_trajectories=n,
        num_flagged=n_flagged,
        task_check=_read_task_check(source, uri),
    )


def load_runs(sources: list[str], *, top: int = 5, max_flagged: int = 20) -> list[RunData]:
    """Several runs; runs of the same name get a suffix (#2, #3) so legends tell them apart."""
    runs = [load_run(s, top=top, max_flagged=max_flagged) for s in sources]
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.name] = seen.get(r.name, 0) + 1
        if seen[r.name] > 1:
            r.name = f"{r.name} #{seen[r.name]}"
    return runs


def store_signature(uri: str) -> list[list[Any]]:
    """What the store holds now, cheaply (one listing per table): every part's table, name
    and size. It changes whenever a step lands (or a resumed run rewrites one)."""
    import fsspec

    from rlvr.trace.parquet import TABLES

    fs, root = fsspec.core.url_to_fs(uri.rstrip("/"))
    out: list[list[Any]] = []
    for table in TABLES:
        folder = f"{root}/{table}"
        fs.invalidate_cache(folder)  # object stores' listings are cached: a live run needs a fresh one
        try:
            entries = fs.ls(folder, detail=True)
        except FileNotFoundError:
            continue
        parts = sorted(
            [table, posixpath.basename(str(e["name"])), int(e.get("size") or 0)]
            for e in entries
            if _PART.search(posixpath.basename(str(e["name"])))
        )
        out += parts
    return out


def version_of(signatures: list[list[list[Any]]]) -> str:
    return hashlib.sha1(json.dumps(signatures).encode()).hexdigest()[:16]
