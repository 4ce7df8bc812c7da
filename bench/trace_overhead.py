"""What observability costs a training step: the quickstart (real SmolLM2-135M, real
sandbox) with the Parquet trace store, the TensorBoard sink and the alert rules on,
against the same run with all three off. Same seed, so both modes do the same work step
for step; runs alternate off/on to spread the machine's drift over both.

Two measures:
  - end to end: the wall time between the ends of consecutive steps (median over steps,
    each mode), and the ratio on/off;
  - direct: inside the 'on' runs, the seconds spent in the store's writes and in the
    monitor (sinks + alerts + webhook-free dispatch) per step, over that step's wall time.
The target (issue 13) is at most 2%.

    .venv/bin/python bench/trace_overhead.py [--steps 6] [--pairs 2]
    .venv/bin/python bench/trace_overhead.py --smoke   # the test suite: see below

Results: bench/results/trace_overhead.json. A run whose steps did not each go through the
monitor (and, 'on', the store) is an error: its time would not be what is measured.
--smoke trains the tiny random model (2 prompts x 2 samples, 8 new tokens) for 3 steps,
one pair, writes nothing, and prints the results as one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlvr.config import load_config  # noqa: E402
from rlvr.trace import monitor, parquet  # noqa: E402
from rlvr.train.loop import train  # noqa: E402

SMOKE = ["model.name_or_path=tiny-random", "train.prompts_per_step=2", "algo.group_size=2",
         "generation.max_new_tokens=8", "train.checkpoint_every=0"]  # fmt: skip
"""--smoke's sizes (with 3 steps and one pair): seconds, not minutes."""


def one_run(mode: str, steps: int, out: Path, name: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    overrides = [
        *extra,
        f"train.steps={steps}",
        "eval.before_training=false",
        "eval.after_training=false",
        f"output_dir={out}",
        f"name={name}",
    ]
    if mode == "off":
        overrides += ["log.sinks=[]", "alerts.enabled=false"]
    cfg = load_config(ROOT / "examples" / "quickstart.yaml", overrides)
    ends: list[float] = []
    spent: list[float] = []  # per step: seconds in the store and the monitor
    pending = [0.0]
    writes = [0]  # the store's write_step calls
    originals = (parquet.TraceStore.write_step, parquet.TraceStore.write_alerts, monitor.RunMonitor.step)

    def timed(fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                pending[0] += time.perf_counter() - t

        return wrapper

    def step_end(fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            result = fn(*a, **k)
            ends.append(time.perf_counter())
            spent.append(pending[0])
            pending[0] = 0.0
            return result

        return wrapper

    if mode == "off":
        parquet.TraceStore.write_step = lambda *a, **k: None  # type: ignore[method-assign]
        parquet.TraceStore.write_alerts = lambda *a, **k: None  # type: ignore[method-assign]
        monitor.RunMonitor.step = step_end(lambda self, step, row: [])  # type: ignore[method-assign]
    else:

        def counted(fn: Any) -> Any:
            def wrapper(*a: Any, **k: Any) -> Any:
                writes[0] += 1
                return fn(*a, **k)

            return wrapper

        parquet.TraceStore.write_step = counted(timed(originals[0]))  # type: ignore[method-assign]
        parquet.TraceStore.write_alerts = timed(originals[1])  # type: ignore[method-assign]
        monitor.RunMonitor.step = step_end(timed(originals[2]))  # type: ignore[method-assign]
    try:
        train(cfg, quiet=True)
    finally:
        parquet.TraceStore.write_step, parquet.TraceStore.write_alerts, monitor.RunMonitor.step = originals  # type: ignore[method-assign]
    if len(ends) != steps or (mode == "on" and writes[0] != steps):
        raise SystemExit(
            f"run {name}: {len(ends)} monitor steps and {writes[0]} store writes for {steps} training steps: "
            "the loop no longer goes through RunMonitor.step / TraceStore.write_step, there is no figure"
        )
    walls = [b - a for a, b in itertools.pairwise(ends)]  # step 2 onwards: the first includes warm-up
    return {"mode": mode, "step_wall_s": walls, "observe_s": spent[1:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="the tiny random model, 3 steps, one pair; JSON last")
    args = ap.parse_args()
    extra: tuple[str, ...] = ()
    if args.smoke:
        args.steps, args.pairs, extra = 3, 1, tuple(SMOKE)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for mode in ("off", "on"):
                t = time.perf_counter()
                runs.append(one_run(mode, args.steps, Path(tmp), f"{mode}{i}", extra))
                print(f"run {mode}{i}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
        store = Path(tmp) / "on0" / "traces"
        size = sum(p.stat().st_size for p in store.rglob("*.parquet"))
        n_traj = parquet.read_table(str(store)).num_rows
    off = [w for r in runs if r["mode"] == "off" for w in r["step_wall_s"]]
    on = [w for r in runs if r["mode"] == "on" for w in r["step_wall_s"]]
    direct = [s / w for r in runs if r["mode"] == "on" for s, w in zip(r["observe_s"], r["step_wall_s"], strict=False)]
    obs = [s for r in runs if r["mode"] == "on" for s in r["observe_s"]]
    result = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "model": "tiny-random (smoke)" if args.smoke else "smollm2-135m-instruct (examples/quickstart.yaml)",
        "steps_per_run": args.steps,
        "pairs": args.pairs,
        "step_wall_s": {
            "off": {"median": statistics.median(off), "min": min(off), "max": max(off), "n": len(off)},
            "on": {"median": statistics.median(on), "min": min(on), "max": max(on), "n": len(on)},
            "ratio_on_off_median": statistics.median(on) / statistics.median(off),
        },
        "direct": {
            "observe_s_median": statistics.median(obs),
            "observe_s_max": max(obs),
            "share_of_step_median": statistics.median(direct),
            "share_of_step_max": max(direct),
        },
        "store_bytes_per_1000_trajectories": size / n_traj * 1000,
    }
    print(f"{'':24}{'all off':>12}{'store+TB+alerts':>18}")
    s = result["step_wall_s"]
    print(f"{'step wall, median (s)':24}{s['off']['median']:>12.3f}{s['on']['median']:>18.3f}")
    print(f"{'step wall, min..max (s)':24}{s['off']['min']:>6.2f}..{s['off']['max']:<5.2f}"
          f"{s['on']['min']:>11.2f}..{s['on']['max']:<5.2f}")  # fmt: skip
    print(f"ratio on/off (medians): {s['ratio_on_off_median']:.4f}")
    d = result["direct"]
    print(f"time in store + sinks + alerts per step: median {d['observe_s_median'] * 1000:.1f} ms "
          f"(max {d['observe_s_max'] * 1000:.1f} ms) = {d['share_of_step_median']:.2%} of a step "
          f"(max {d['share_of_step_max']:.2%})")  # fmt: skip
    print(f"store size: {result['store_bytes_per_1000_trajectories'] / 1e6:.2f} MB per 1000 trajectories")
    if args.smoke:  # a check, not a figure: nothing recorded
        print(json.dumps(result))
        return
    out = ROOT / "bench" / "results" / "trace_overhead.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
