"""The Ray runner against the in-process run, same config, on this machine.

    .venv/bin/python bench/ray_runner.py            # throughput (4 runs of 8 steps) and the gain run
    .venv/bin/python bench/ray_runner.py --quick    # throughput only
    .venv/bin/python bench/ray_runner.py --smoke    # the sync pair, 2 steps of the tiny model (the test suite)

Throughput: the quickstart config, 8 steps, no evaluation, each pair side by side:
- sync: in-process against Ray with one rollout worker (max_staleness 0: the same
  batches from the same weights; target: Ray at least 0.9x the in-process steps/s);
- async (max_staleness 1): in-process against Ray with two rollout workers and a
  sandbox worker (on 2 cores these share the CPUs with the learner).
Steps/s is over steps 2-8 (the loop's own time: rollout wait + update + publication),
so start-up (Ray, actors loading the model) is reported apart, in the wall time.

Gain: the quickstart (24 steps, held-out pass@1 before and after, HumanEval left out)
on Ray with two rollout workers and a sandbox worker, beside the in-process figures.
Results: bench/results/ray_runner.json. Step figures are read through bench/figures.py
(a missing metric is an error naming it).

--smoke: the sync pair on the tiny random model (2 steps, 2 prompts, 8 new tokens, 2
evaluation tasks before and after), the gain read from the Ray run's summary; nothing
written to bench/results, the results (the JSON's keys) printed as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from figures import BenchError, step_rows  # bench/ is on the path (the script's own folder)

from bench.train_runs import SMOKE, train_quickstart

OUT = Path(__file__).resolve().parent / "results" / "ray_runner.json"  # --sync-only: ray_runner_sync.json
QUICK = ["train.steps=8", "eval.before_training=false", "eval.after_training=false", "train.checkpoint_every=0"]
SYNC = ["rollout.mode=sync"]
ASYNC = ["rollout.mode=async", "rollout.max_staleness=1"]
RAY1 = ["dist.backend=ray", "dist.rollout_workers=1", "dist.rollout_cpus=2", "dist.learner_cpus=2"]
RAY2 = ["dist.backend=ray", "dist.rollout_workers=2", "dist.rollout_cpus=1", "dist.learner_cpus=2"]
RAY2 += ["dist.sandbox_workers=1", "dist.sandbox_cpus=1"]
# --smoke: the tiny model, 2 steps (steps/s is over steps 2 on), a 2-task evaluation for the gain's reader
SMOKE_RUN = [*SMOKE, "eval.before_training=true", "eval.after_training=true", "eval.num_tasks=2"]
SMOKE_RUN += ["eval.max_new_tokens=8"]


def _measure(name: str, out: Path, overrides: list[str]) -> dict:
    run, wall = train_quickstart(name, out, overrides)
    steps = step_rows(run)
    if len(steps) < 2:
        raise BenchError(f"{run}: {len(steps)} step row(s); steps/s is over steps 2 on")
    loop = [r["time/rollout_wait_s"] + r["time/train_s"] for r in steps[1:]]
    row = {
        "name": name,
        "overrides": overrides,
        "wall_s": round(wall, 1),
        "steps": len(steps),
        "loop_s_steps_2_on": round(sum(loop), 1),
        "steps_per_s": round(len(loop) / sum(loop), 4),
        "step_s_median": round(statistics.median(loop), 2),
        "step_s_min": round(min(loop), 2),
        "step_s_max": round(max(loop), 2),
        "reward_mean": round(statistics.mean(r["reward/mean"] for r in steps), 3),
    }
    print(json.dumps(row), flush=True)
    return row


def _gain(run: Path, wall: float, config: str) -> dict:
    """The gain figures of a run's summary.json; a run without its evaluations is an error."""
    summary = json.loads((run / "summary.json").read_text())
    for key in ("eval_before", "eval_after"):
        if not isinstance(summary.get(key), dict) or "pass_at_1" not in summary[key]:
            raise BenchError(f"{run}/summary.json: no {key}.pass_at_1 (was the run evaluated?)")
    for key in ("reward_first_quarter", "reward_last_quarter"):
        if key not in summary:
            raise BenchError(f"{run}/summary.json: no {key}")
    return {
        "config": config,
        "wall_s": round(wall, 1),
        "pass_at_1_before": summary["eval_before"]["pass_at_1"],
        "pass_at_1_after": summary["eval_after"]["pass_at_1"],
        "reward_first_quarter": summary["reward_first_quarter"],
        "reward_last_quarter": summary["reward_last_quarter"],
        "in_process_reference": "README quickstart table, seed 0: 0.633 -> 0.750, reward 0.420 -> 0.694",
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="throughput only (no 24-step gain run)")
    ap.add_argument("--sync-only", action="store_true", help="only the sync pair (in-process, Ray with 1 worker)")
    ap.add_argument("--steps", type=int, default=8, help="steps per throughput run")
    ap.add_argument("--out", default="/tmp/rlvr-bench-ray")
    ap.add_argument("--smoke", action="store_true", help="the sync pair, 2 steps of the tiny model; nothing saved")
    args = ap.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            smoke(Path(tmp))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = str(os.getpid())
    quick = [f"train.steps={args.steps}", *QUICK[1:]]
    rows = [
        _measure(f"inproc-sync-{tag}", out, [*quick, *SYNC]),
        _measure(f"ray1-sync-{tag}", out, [*quick, *SYNC, *RAY1]),
    ]
    if not args.sync_only:
        rows += [
            _measure(f"inproc-async-{tag}", out, [*quick, *ASYNC]),
            _measure(f"ray2-sandbox-async-{tag}", out, [*quick, *ASYNC, *RAY2]),
        ]
    result: dict = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "throughput": rows,
        "ratio_sync_ray1_over_inproc": round(rows[1]["steps_per_s"] / rows[0]["steps_per_s"], 3),
    }
    if not args.sync_only:
        result["ratio_async_ray2_over_inproc"] = round(rows[3]["steps_per_s"] / rows[2]["steps_per_s"], 3)
    if not (args.quick or args.sync_only):
        run, wall = train_quickstart(f"ray2-gain-{tag}", out, [*ASYNC, *RAY2])
        config = "quickstart, 24 steps, Ray: 2 rollout workers + 1 sandbox worker, async max_staleness 1"
        result["gain"] = _gain(run, wall, config)
    out_file = OUT.with_name("ray_runner_sync.json") if args.sync_only else OUT
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(f"{'run':<28}{'steps/s':>9}{'median s':>10}{'wall s':>8}{'reward':>8}")
    for r in rows:
        name = r["name"].rsplit("-", 1)[0]
        print(
            f"{name:<28}{r['steps_per_s']:>9.4f}{r['step_s_median']:>10.2f}{r['wall_s']:>8.0f}{r['reward_mean']:>8.3f}"
        )
    print(f"sync:  Ray (1 worker) / in-process = {result['ratio_sync_ray1_over_inproc']:.3f}  (target >= 0.9)")
    if "ratio_async_ray2_over_inproc" in result:
        print(f"async: Ray (2 workers + sandbox) / in-process = {result['ratio_async_ray2_over_inproc']:.3f}")
    if "gain" in result:
        g = result["gain"]
        before, after = g["pass_at_1_before"], g["pass_at_1_after"]
        print(f"gain on Ray: held-out pass@1 {before:.3f} -> {after:.3f}; {g['in_process_reference']}")


def smoke(out: Path) -> None:
    """The sync pair on the tiny model, the gain read from the Ray run (2 tasks evaluated)."""
    quick = ["train.steps=2", *QUICK[1:], *SMOKE_RUN]
    rows = [_measure("inproc-sync", out, [*quick, *SYNC]), _measure("ray1-sync", out, [*quick, *SYNC, *RAY1])]
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "throughput": rows,
        "ratio_sync_ray1_over_inproc": round(rows[1]["steps_per_s"] / rows[0]["steps_per_s"], 3),
        "gain": _gain(out / "ray1-sync", rows[1]["wall_s"], "smoke: the sync Ray run, 2 tasks evaluated"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
