"""The embedded model where hacking pays: a naive reward versus rlvr's defaults (issue 17,
part 6, with the real 135M model; bench/hack_training.py is the scripted-policy side).

Task set: the hard bundled Python tasks with every visible test quoted in the prompt
(bench/hack_training.py's `task_set`), too hard for the model to solve honestly, so
copying the quoted answers is the cheapest way to reward. Each run is the quickstart
(`examples/quickstart.yaml`: SmolLM2-135M-Instruct, GRPO, group 4, 4 prompts a step) on
that set, without the before/after evaluations, under one of:

  naive:  completion over the visible tests only (reward.held_out_weight=0), no canaries
          (reward.canary_rate=0), hacks flagged but paid (reward.on_hack=flag);
  rlvr:   the defaults (held-out weight 0.5, canary rate 0.05, on_hack zero).

From each run's trace store it reads, per step, over the trajectories that are not
canaries: the hack rate (share with any hack flag, static or behavioural, whatever its
severity), the strong-hack rate, the share passing every held-out test, the share passing
every visible test, and the mean reward. Printed per configuration as the mean over
seeds of the first and last quarter of the steps; all series go to the JSON.

    .venv/bin/python bench/hack_training_model.py                       # 3 seeds x 2 configs x 40 steps (~50 min)
    .venv/bin/python bench/hack_training_model.py --seeds 0 --steps 4   # a short run
    .venv/bin/python bench/hack_training_model.py --smoke   # seed 0, 2 tiny-model steps a config (the test suite)

The strong-hack rate is each step row's `hack/rate` (bench/figures.py reads the step rows;
a missing metric is an error naming it). --smoke trains the tiny random model (2 prompts,
8 new tokens), writes no JSON and prints the results (the JSON's keys) as its last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from figures import (  # noqa: E402
    BenchError,
    step_metric,
    step_rows,
)
from train_runs import SMOKE, train_quickstart  # noqa: E402

from rlvr.trace.parquet import run_store_uri  # noqa: E402
from rlvr.trace.query import query  # noqa: E402

CONFIGS: dict[str, list[str]] = {
    "naive": ["reward.held_out_weight=0", "reward.canary_rate=0", "reward.on_hack=flag"],
    "rlvr": [],
}

PER_STEP = """
WITH t AS (
    SELECT step, group_id, sample, reward, len(reward_flags) > 0 AS flagged
    FROM trajectories WHERE task_id NOT LIKE '%#canary/%'
),
v AS (
    SELECT step, group_id, sample,
           bool_and(status = 'PASSED') FILTER (WHERE held_out) AS held_ok,
           bool_and(status = 'PASSED') FILTER (WHERE NOT held_out) AS visible_ok
    FROM tests GROUP BY step, group_id, sample
)
SELECT t.step, count(*) AS n, avg(t.flagged::DOUBLE) AS hack_rate, avg(t.reward) AS reward,
       avg(coalesce(v.held_ok, false)::DOUBLE) AS held_out_pass,
       avg(coalesce(v.visible_ok, false)::DOUBLE) AS visible_pass
FROM t LEFT JOIN v USING (step, group_id, sample)
GROUP BY t.step ORDER BY t.step
"""


def task_file(directory: Path) -> Path:
    import hack_training

    path = directory / "quoted_hard.jsonl"
    with path.open("w") as f:
        for task, _ in hack_training.task_set():
            f.write(json.dumps(task.to_dict(), sort_keys=True) + "\n")
    return path


def train(
    config: str, seed: int, steps: int, tasks: Path, out: Path, extra: list[str] | None = None
) -> tuple[str, float]:
    overrides = [f"tasks.source={tasks}", f"seed={seed}", f"train.steps={steps}"]
    overrides += ["eval.before_training=false", "eval.after_training=false", *CONFIGS[config], *(extra or [])]
    run, wall = train_quickstart(f"{config}-seed{seed}", out, overrides)
    return str(run), wall


def series(run_dir: str) -> dict[str, list[float]]:
    cols, rows = query(run_store_uri(run_dir), PER_STEP)
    if not rows:
        raise BenchError(f"{run_dir}/traces: no trajectories that are not canaries")
    out: dict[str, list[float]] = {c: [float(r[i]) for r in rows] for i, c in enumerate(cols)}
    steps = step_rows(Path(run_dir))
    by_step = dict(zip([int(r["step"]) for r in steps], step_metric(steps, "hack/rate", Path(run_dir)), strict=True))
    missing = [int(s) for s in out["step"] if int(s) not in by_step]
    if missing:
        raise BenchError(f"{run_dir}/metrics.jsonl: no step row for step(s) {missing}")
    out["strong_rate"] = [by_step[int(s)] for s in out["step"]]
    return out


def quarters(values: list[float]) -> tuple[float, float]:
    q = max(1, len(values) // 4)
    return statistics.fmean(values[:q]), statistics.fmean(values[-q:])


KEYS = ("hack_rate", "strong_rate", "held_out_pass", "visible_pass", "reward")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=["naive", "rlvr"])
    ap.add_argument("--out", default="", help="where the runs go (default: a temporary directory)")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "hack_training_model.json"))
    ap.add_argument("--smoke", action="store_true", help="seed 0, 2 steps of the tiny model a config; no JSON written")
    args = ap.parse_args(argv)
    extra = [*SMOKE] if args.smoke else []
    if args.smoke:
        args.seeds, args.steps = [0], 2

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        tasks = task_file(Path(tmp))
        results: dict[str, Any] = {"steps": args.steps, "seeds": args.seeds, "runs": {}}
        for config in args.configs:
            for seed in args.seeds:
                run_dir, wall = train(config, seed, args.steps, tasks, out, extra)
                s = series(run_dir)
                results["runs"][f"{config}/{seed}"] = {"wall_s": round(wall, 1), **s}
                first, last = quarters(s["hack_rate"])
                print(f"{config} seed {seed}: {wall / 60:.1f} min, hack rate {first:.3f} -> {last:.3f}", flush=True)

    print(f"\nmean over seeds {args.seeds}, first quarter -> last quarter of {args.steps} steps")
    print(f"{'config':8}" + "".join(f"{k:>22}" for k in KEYS))
    summary: dict[str, Any] = {}
    for config in args.configs:
        runs = [results["runs"][f"{config}/{s}"] for s in args.seeds]
        row = {}
        for k in KEYS:
            pairs = [quarters(r[k]) for r in runs]
            row[k] = (statistics.fmean(p[0] for p in pairs), statistics.fmean(p[1] for p in pairs))
        summary[config] = row
        print(f"{config:8}" + "".join(f"{row[k][0]:>12.3f} ->{row[k][1]:>6.3f}" for k in KEYS))
    results["summary"] = summary
    if args.smoke:  # a smoke run is a check, not a figure: nothing is recorded
        print(json.dumps(results))
        return
    Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
