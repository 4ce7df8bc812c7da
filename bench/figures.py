"""A training run's figures as the benches read them, from what the run itself wrote: the
step rows of its trace store / metrics.jsonl (metric names as docs/traces.md lists them)
and the trace store's trajectories table (every trajectory generated, trained or
dropped). One reader for every bench, so a renamed metric fails here, by name, in the
bench smoke tests (tests/integration/test_benches.py), not in the next measurement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STEP_METRICS = ("time/rollout_wait_s", "time/train_s", "reward/mean")
"""What every bench quotes per step; a run that lacks one is an error, not a zero."""


class BenchError(RuntimeError):
    """A run's records lack what a bench reads, or a baseline's runs failed."""


def step_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The run's step rows, each checked for STEP_METRICS."""
    from rlvr.trace.store import read_jsonl

    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise BenchError(f"{run_dir}: no metrics.jsonl (did the run start?)")
    rows = [r for r in read_jsonl(path) if r.get("event") == "step"]
    if not rows:
        raise BenchError(f"{path}: no step rows")
    for r in rows:
        missing = [k for k in STEP_METRICS if k not in r]
        if missing:
            raise BenchError(f"{path}: step {r.get('step')} lacks {', '.join(missing)} (docs/traces.md names them)")
    return rows


def step_metric(rows: list[dict[str, Any]], key: str, run: Path) -> list[float]:
    """`key` of every step row (rows from step_rows): a metric beyond STEP_METRICS, or an error naming it."""
    missing = [r.get("step") for r in rows if key not in r]
    if missing:
        raise BenchError(f"{run}/metrics.jsonl: step(s) {missing} lack '{key}' (docs/traces.md names the metrics)")
    return [float(r[key]) for r in rows]


def generated_tokens(run_dir: Path) -> dict[int, int]:
    """Completion tokens generated per step (trained and dropped), from the trace store."""
    from rlvr.trace.parquet import read_table, run_store_uri

    table = read_table(run_store_uri(str(run_dir)), "trajectories")
    for col in ("step", "completion_tokens"):
        if col not in table.column_names:
            raise BenchError(f"{run_dir}/traces: the trajectories table has no '{col}' column")
    out: dict[int, int] = {}
    for step, n in zip(table.column("step").to_pylist(), table.column("completion_tokens").to_pylist(), strict=True):
        out[int(step)] = out.get(int(step), 0) + int(n)
    return out


def learner_tokens(run_dir: Path) -> int:
    """Tokens the learner's gradient passes run over the whole run: the completion of every
    trained row whose advantage is not zero (rows of zero loss are left out of the passes)
    plus each such group's prompt once (a group's prompt pass is shared). 6 x parameters x
    this is the learner's model FLOPs."""
    from rlvr.trace.parquet import read_table, run_store_uri

    table = read_table(run_store_uri(str(run_dir)), "trajectories")
    cols = ("step", "group_id", "trained", "advantage", "prompt_tokens", "completion_tokens")
    missing = [c for c in cols if c not in table.column_names]
    if missing:
        raise BenchError(f"{run_dir}/traces: the trajectories table has no {', '.join(missing)} column")
    rows = zip(*(table.column(c).to_pylist() for c in cols), strict=True)
    total, prompts = 0, {}
    for step, group, trained, adv, p_tok, c_tok in rows:
        if trained and adv:
            total += int(c_tok)
            prompts[(step, group)] = int(p_tok)
    return total + sum(prompts.values())


def run_figures(run_dir: Path, *, skip_first: int = 0) -> dict[str, Any]:
    """Tokens generated, seconds and rewards over the run's steps, leaving out the first
    `skip_first` (warm-up). tokens_per_s is completion tokens generated per second of
    the steps' wall time (waiting for the rollout + the learner's update)."""
    rows = step_rows(run_dir)
    if skip_first and len(rows) > skip_first:
        rows = rows[skip_first:]
    tokens = generated_tokens(run_dir)
    missing = [r["step"] for r in rows if r["step"] not in tokens]
    if missing:
        raise BenchError(f"{run_dir}/traces: no trajectories of step(s) {missing}")
    step_s = [r["time/rollout_wait_s"] + r["time/train_s"] for r in rows]
    total = sum(tokens[r["step"]] for r in rows)
    return {
        "steps_timed": len(rows),
        "tokens": total,
        "steps_s": sum(step_s),
        "step_s": step_s,
        "tokens_per_s": total / sum(step_s),
        "rollout_s": sum(r["time/rollout_wait_s"] for r in rows),
        "train_s": sum(r["time/train_s"] for r in rows),
        "generate_s": sum(r.get("rollout/generate_s", 0.0) for r in rows),
        "reward": [r["reward/mean"] for r in rows],
        "mismatch": _mean([r["train/logprob_mismatch"] for r in rows if "train/logprob_mismatch" in r]),
    }


def held_out_pass_at_1(run_dir: Path) -> dict[str, float]:
    """Held-out pass@1 of the run's own split, {"before": ..., "after": ...} (other suites,
    HumanEval, are left out), from metrics.jsonl; a run that evaluated neither is an error."""
    from rlvr.trace.store import read_jsonl

    path = run_dir / "metrics.jsonl"
    out = {
        r["when"]: float(r["pass_at_1"])
        for r in (read_jsonl(path) if path.exists() else [])
        if r.get("event") == "eval" and "suite" not in r and r.get("when") in ("before", "after")
    }
    if set(out) != {"before", "after"}:
        raise BenchError(f"{path}: held-out pass@1 before and after training not both recorded (found {sorted(out)})")
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0
