"""The same short quickstart run and the same CLI commands on two commits, back to back on
this machine: per-step generation and learner seconds, the CLI's start, and whether the
final weights are equal (the redesign issue's A/B: "behaviour, figures and bit-for-bit
determinism unchanged").

    .venv/bin/python bench/ab_commits.py --base 5aef8ba --head HEAD [--steps 3] [--rounds 2]

Each commit is checked out in a temporary git worktree and run with this checkout's
virtual environment, the worktree first on the path (so its `rlvr` package is the one
imported; the script checks that). Rounds alternate base and head, so a machine that
slows down during the bench slows both. Results: bench/results/ab_commits.json.
What it does not show: runs longer than a few steps, the async driver, Ray.
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
PY = ROOT / ".venv" / "bin" / "python"
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


def train_once(tree: Path, out: Path, steps: int) -> dict[str, float | str]:
    args = [
        "-m", "rlvr.cli", "train", "examples/quickstart.yaml", f"train.steps={steps}", "eval.before_training=false",
        "eval.after_training=false", "eval.sources=[]", f"output_dir={out}", "name=ab", "--quiet",
    ]  # fmt: skip
    done, wall = run_py(tree, args)
    if done.returncode != 0:
        raise SystemExit(f"training at {tree} failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(x) for x in (out / "ab" / "metrics.jsonl").read_text().splitlines()]
    steps_rows = [r for r in rows if r.get("event") == "step"]
    weights = next((out / "ab" / "checkpoints").glob("step-*/model/model.safetensors"))
    return {
        "wall_s": wall,
        "generate_s": sum(r.get("rollout/generate_s", 0.0) for r in steps_rows),
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
                raise SystemExit(f"rlvr {' '.join(args)} at {tree} failed:\n{done.stderr[-2000:]}")
            walls.append(wall)
        out[" ".join(args[:1])] = min(walls)
    return out


def worktree(commit: str, where: Path) -> Path:
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT, check=True, capture_output=True
    )
    done, _ = run_py(where, ["-c", "import rlvr, sys; print(rlvr.__file__)"])
    if not done.stdout.strip().startswith(str(where)):
        raise SystemExit(f"{commit}: imported {done.stdout.strip()}, not the worktree's package")
    return where


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cli-only", action="store_true", help="only the CLI's start, no training")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ab_commits.json"))
    a = ap.parse_args()
    results: dict[str, list[dict[str, float | str]]] = {"base": [], "head": []}
    cli: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {k: worktree(c, Path(tmp) / k) for k, c in (("base", a.base), ("head", a.head))}
        try:
            for r in range(a.rounds):
                for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                    if not a.cli_only:
                        results[side].append(train_once(trees[side], Path(tmp) / f"run-{side}-{r}", a.steps))
                    cli[side].append(cli_once(trees[side]))
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
    out = Path(a.out) if not a.cli_only else Path(a.out).with_name("ab_commits_cli.json")
    out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
