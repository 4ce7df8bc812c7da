"""One `rlvr train` run of the quickstart config with overrides, as the benches that
compare training configurations start them (bench/curriculum.py,
bench/hack_training_model.py, bench/ray_runner.py).

    .venv/bin/python bench/train_runs.py --smoke [OVERRIDES ...]   # 1 step of the tiny model (the test suite)

--smoke trains the quickstart for 1 step of the tiny random model in a temporary directory
and prints, as its last line, the run's figures as bench/figures.py reads them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

SMOKE = ["model.name_or_path=tiny-random", "train.prompts_per_step=2", "generation.max_new_tokens=8"]
"""The sizes of a smoke run (seconds, not minutes): the tiny random model, 2 prompts a
step, 8 new tokens; each bench's --smoke adds its own steps and evaluation."""


def train_quickstart(name: str, out: Path, overrides: list[str], config: str = "quickstart") -> tuple[Path, float]:
    """Train `examples/<config>.yaml` (the quickstart's by default) as run `name` under
    `out` with `overrides`; the run directory and the wall seconds. A failed run is an
    error (its output's tail on stderr, then one line naming the run), never a figure. No
    other suite (HumanEval) is evaluated unless `overrides` names `eval.sources` again."""
    cmd = [
        sys.executable, "-m", "rlvr.cli", "train", str(ROOT / "examples" / f"{config}.yaml"),
        f"name={name}", f"output_dir={out}", "eval.sources=[]", *overrides,
    ]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        raise SystemExit(f"{name}: the training run failed (exit {done.returncode}): {last}")
    return out / name, time.monotonic() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="1 step of the tiny model in a temporary directory")
    ap.add_argument("overrides", nargs="*", help="config overrides (key.path=value) after the smoke sizes")
    args = ap.parse_args(argv)
    if not args.smoke:
        ap.error("nothing to run without --smoke (the benches import train_quickstart)")
    from figures import run_figures

    with tempfile.TemporaryDirectory() as tmp:
        run, wall = train_quickstart("smoke", Path(tmp), [*SMOKE, "train.steps=1", "eval.before_training=false",
                                                           "eval.after_training=false", *args.overrides])  # fmt: skip
        print(json.dumps({"wall_s": wall, **run_figures(run)}))


if __name__ == "__main__":
    main()
