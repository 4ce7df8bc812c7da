"""The same short quickstart run and the same CLI commands on two commits, back to back on
this machine: per-step generation and learner seconds, the CLI's start, and whether the
final weights are equal (the redesign issue's A/B: "behaviour, figures and bit-for-bit
determinism unchanged").

    .venv/bin/python bench/ab_commits.py --base 5aef8ba --head HEAD [--steps 3] [--rounds 2]
    .venv/bin/python bench/ab_commits.py --smoke [--base HEAD --head HEAD]   # the test suite

Each commit is checked out in a temporary git worktree and run with this checkout's
virtual environment, the worktree first on the path (so its `rlvr` package is the one
imported; the script checks that). Rounds alternate base and head, so a machine that
slows down during the bench slows both. Results: bench/results/ab_commits.json.
What it does not show: runs longer than a few steps, the async driver, Ray.

Step figures are read through bench/figures.py (a missing metric is an error naming it);
a run or command that fails is an error, never a figure. --smoke: 1 round of 1 step of
the tiny random model (2 prompts, 8 new tokens) on each side and one start of each
command, nothing written, the record (its keys) printed as the last line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = Path(sys.executable)  # this checkout's virtual environment, wherever it lives (a fresh clone's too)
sys.path.insert(0, str(ROOT / "bench"))

from figures import (  # noqa: E402
    BenchError,
    step_metric,
    step_rows,
)
from train_runs import SMOKE  # noqa: E402

CLI = [
    ["--help"],
    ["config", "examples/quickstart.yaml"],
    ["score", "rlvr/tasks/data/python_functions.jsonl", "-", "--task-id", "py/add_2"],
]


def run_py(tree: Path, args: list[str], stdin: str = "") -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    done = subprocess.run([str(PY), *args], cwd=tree, env=env, input=stdin, capture_output=True, text=True)
    return done, time.perf_counter() - t0


def _failed(what: str, done: subprocess.CompletedProcess[str]) -> SystemExit:
    """A failed run or command: its error output's tail on stderr, then one line."""
    print(done.stderr[-3000:], file=sys.stderr)
    last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
    return SystemExit(f"{what} failed (exit {done.returncode}): {last}")


def train_once(tree: Path, out: Path, steps: int, extra: list[str] | None = None) -> dict[str, float | str]:
    args = [
        "-m", "rlvr.cli", "train", "examples/quickstart.yaml", f"train.steps={steps}", "eval.before_training=false",
        "eval.after_training=false", "eval.sources=[]", f"output_dir={out}", "name=ab", *(extra or []), "--quiet",
    ]  # fmt: skip
    done, wall = run_py(tree, args)
    if done.returncode != 0:
        raise _failed(f"training at {tree}", done)
    steps_rows = step_rows(out / "ab")
    weights = next((out / "ab" / "checkpoints").glob("step-*/model/model.safetensors"), None)
    if weights is None:
        raise BenchError(f"{out / 'ab'}/checkpoints: no step-*/model/model.safetensors (the final weights)")
    return {
        "wall_s": wall,
        "generate_s": sum(step_metric(steps_rows, "rollout/generate_s", out / "ab")),
        "train_s": sum(r["time/train_s"] for r in steps_rows),
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
    }


def cli_once(tree: Path, repeats: int = 5) -> dict[str, float]:
    """Each command's fastest of `repeats` starts (the least disturbed by the machine)."""
    out = {}
    for args in CLI:
        walls = []
        for _ in range(repeats):
            done, wall = run_py(tree, ["-m", "rlvr.cli", *args], stdin="def add_2(x):\n    return x + 2\n")
            if done.returncode != 0:
                raise _failed(f"rlvr {' '.join(args)} at {tree}", done)
            walls.append(wall)
        out[" ".join(args[:1])] = min(walls)
    return out


def worktree(commit: str, where: Path) -> Path:
    done = subprocess.run(
        ["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise _failed(f"git worktree add {commit}", done)
    done, _ = run_py(where, ["-c", "import rlvr, sys; print(rlvr.__file__)"])
    if not Path(done.stdout.strip() or "/").resolve().is_relative_to(where.resolve()):
        raise SystemExit(f"{commit}: imported {done.stdout.strip() or done.stderr.strip()}, not the worktree's package")
    return where


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="required but with --smoke (then HEAD)")
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cli-only", action="store_true", help="only the CLI's start, no training")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ab_commits.json"))
    ap.add_argument(
        "--smoke", action="store_true", help="1 round of 1 step of the tiny model, one start of each command"
    )
    a = ap.parse_args()
    extra: list[str] = []
    repeats = 5
    if a.smoke:
        a.base, a.steps, a.rounds, repeats = a.base or "HEAD", 1, 1, 1
        extra = [*SMOKE]
    elif a.base is None:
        ap.error("--base is required (or --smoke)")
    results: dict[str, list[dict[str, float | str]]] = {"base": [], "head": []}
    cli: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {k: worktree(c, Path(tmp) / k) for k, c in (("base", a.base), ("head", a.head))}
        try:
            for r in range(a.rounds):
                for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                    if not a.cli_only:
                        results[side].append(train_once(trees[side], Path(tmp) / f"run-{side}-{r}", a.steps, extra))
                    cli[side].append(cli_once(trees[side], repeats))
        finally:
            for t in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(t)], cwd=ROOT, capture_output=True)
    keys = ("generate_s", "train_s", "wall_s") if not a.cli_only else ()
    med = {s: {k: statistics.median(float(x[k]) for x in results[s]) for k in keys} for s in results}
    cli_med = {s: {k: statistics.median(x[k] for x in cli[s]) for k in cli[s][0]} for s in cli}
    same = {str(x["weights_sha256"]) for x in results["base"] + results["head"]}
    print(f"{'':24}{'base ' + a.base:>16}{'head ' + a.head:>16}{'head/base':>11}")
    for k in keys:
        b, h = med["base"][k], med["head"][k]
        print(f"{k + f' ({a.steps} steps)':24}{b:16.2f}{h:16.2f}{h / b:11.3f}")
    for k in cli_med["base"]:
        b, h = cli_med["base"][k], cli_med["head"][k]
        print(f"{'rlvr ' + k + ' (s)':24}{b:16.3f}{h:16.3f}{h / b:11.3f}")
    if not a.cli_only:
        print(f"final weights equal across all {2 * a.rounds} runs: {len(same) == 1}")
    record = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "base": a.base, "head": a.head, "steps": a.steps, "rounds": a.rounds,
        "median": med, "cli_median_s": cli_med, "runs": results, "cli_runs": cli, "weights_equal": len(same) == 1,
    }  # fmt: skip
    if a.smoke:  # a smoke run is a check, not a figure: nothing is recorded
        print(json.dumps(record))
        return
    out = Path(a.out) if not a.cli_only else Path(a.out).with_name("ab_commits_cli.json")
    out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
