"""The main job as a new user runs it: `rlvr train examples/quickstart.yaml` for several
seeds, timed from the command's start to its end (model load, held-out evaluation before
and after, 24 training steps), on this CPU and, with --avx2, again with PyTorch's kernels
held to AVX2 (`ATEN_CPU_CAPABILITY=avx2`: a proxy for a CPU without AVX-512, labelled as
such; oneDNN's own kernels still see the real CPU).

    .venv/bin/python bench/quickstart.py [--seeds 0 1 2] [--avx2]
    .venv/bin/python bench/quickstart.py --smoke     # 2 steps of the tiny model (the test suite)

Per run: wall seconds, held-out pass@1 before/after and its gain, train reward in the
first and last quarter of the steps, and the steps' split into rollout and learner
(bench/figures.py reads them from the run's own records). The target (issue 31): at most
300 s wall and a gain of at least 0.05 in every seed. Results: bench/results/quickstart.json
(not written by --smoke).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

TARGET_WALL_S, TARGET_GAIN = 300.0, 0.05
SMOKE = ["model.name_or_path=tiny-random", "train.steps=2", "train.prompts_per_step=2", "generation.max_new_tokens=8",
         "eval.num_tasks=4"]  # fmt: skip


def one_run(seed: int, out: Path, extra: list[str], avx2: bool) -> dict[str, Any]:
    from figures import held_out_pass_at_1, run_figures
    from machine import cpu_kind
    from train_runs import train_quickstart

    if avx2:
        os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
    try:
        run, wall = train_quickstart(f"seed{seed}{'-avx2' if avx2 else ''}", out, [f"seed={seed}", *extra])
    finally:
        os.environ.pop("ATEN_CPU_CAPABILITY", None)
    f = run_figures(run)
    p = held_out_pass_at_1(run)
    q = max(1, len(f["reward"]) // 4)
    return {
        "seed": seed,
        "kind": "AVX2 proxy (ATEN_CPU_CAPABILITY=avx2)" if avx2 else cpu_kind(),
        "wall_s": wall,
        "pass_before": p["before"],
        "pass_after": p["after"],
        "gain": p["after"] - p["before"],
        "reward_first_quarter": sum(f["reward"][:q]) / q,
        "reward_last_quarter": sum(f["reward"][-q:]) / q,
        "steps_s": f["steps_s"],
        "rollout_s": f["rollout_s"],
        "generate_s": f["generate_s"],
        "train_s": f["train_s"],
        "meets_target": wall <= TARGET_WALL_S and p["after"] - p["before"] >= TARGET_GAIN,
    }


def report(rows: list[dict[str, Any]]) -> None:
    print(f"\n{'kind':<38}{'seed':>5}{'wall s':>8}{'before':>8}{'after':>7}{'gain':>7}{'rew q1':>8}{'rew q4':>8}"
          f"{'rollout s':>10}{'learner s':>10}  target (<= 300 s, gain >= 0.05)")  # fmt: skip
    for r in rows:
        print(f"{r['kind']:<38}{r['seed']:>5}{r['wall_s']:>8.0f}{r['pass_before']:>8.3f}{r['pass_after']:>7.3f}"
              f"{r['gain']:>+7.3f}{r['reward_first_quarter']:>8.3f}{r['reward_last_quarter']:>8.3f}"
              f"{r['rollout_s']:>10.0f}{r['train_s']:>10.0f}  {'met' if r['meets_target'] else 'MISSED'}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--avx2", action="store_true", help="also each seed with ATEN_CPU_CAPABILITY=avx2 (a proxy)")
    ap.add_argument("--avx2-only", action="store_true", help="only the AVX2 proxy runs")
    ap.add_argument("--smoke", action="store_true", help="2 steps of the tiny model, one seed; nothing saved")
    ap.add_argument(
        "--baseline-with",
        nargs="+",
        metavar="KEY=VALUE",
        help="each seed twice, back to back: as shipped, then with these overrides (e.g. reward.hidden_tests=20); "
        "results in bench/results/quickstart_ab.json (or --ab-out)",
    )
    ap.add_argument("--ab-out", default="quickstart_ab.json", help="the --baseline-with results' file in bench/results")
    a = ap.parse_args()
    extra = SMOKE if a.smoke else []
    if a.baseline_with:
        return ab(a.seeds[:1] if a.smoke else a.seeds, extra, a.baseline_with, a.smoke, a.ab_out)
    seeds = a.seeds[:1] if a.smoke else a.seeds
    kinds = [True] if a.avx2_only else ([False, True] if a.avx2 else [False])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for avx2 in kinds:
            for seed in seeds:
                rows.append(one_run(seed, Path(tmp), extra, avx2))
                report(rows[-1:])
    report(rows)
    from machine import cpu_name

    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "runs": rows}
    if not a.smoke:
        path = ROOT / "bench" / "results" / ("quickstart_avx2.json" if a.avx2_only else "quickstart.json")
        path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


def ab(seeds: list[int], extra: list[str], overrides: list[str], smoke: bool, out: str = "quickstart_ab.json") -> None:
    """Each seed as shipped, then with `overrides`, back to back (same machine, same hour)."""
    from machine import cpu_name

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            for label, more in (("shipped", []), ("with", overrides)):
                row = one_run(seed, Path(tmp) / label, [*extra, *more], False)
                row["variant"] = label
                rows.append(row)
                report(rows[-1:])
    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "overrides": overrides, "runs": rows}
    if not smoke:
        (ROOT / "bench" / "results" / Path(out).name).write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
