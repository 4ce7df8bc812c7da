"""How long the `rlvr` command takes to answer, as a user runs it: help, the config keys,
scoring one reply, and one-line errors on bad input, each the fastest of a few starts
(the least disturbed by the machine), beside the bare interpreter's start and the
targets (help, keys and every error <= 0.5 s; score <= 1 s).

    .venv/bin/python bench/cli_start.py [--repeats 5] [--smoke]

Results: bench/results/cli_start.json (not written by --smoke, which starts each once).
Every command must exit as the table says (0, or 2 for the errors): a command that
answers faster because it broke is an error, not a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPLY = "def add_2(x):\n    return x + 2\n"
TASKS = "rlvr/tasks/data/python_functions.jsonl"
# (label, arguments, exit status, target seconds)
COMMANDS: list[tuple[str, list[str], int, float]] = [
    ("--help", ["--help"], 0, 0.5),
    ("config --keys", ["config", "--keys"], 0, 0.5),
    ("config (resolved)", ["config", "examples/quickstart.yaml"], 0, 0.5),
    ("score a reply", ["score", TASKS, "-", "--task-id", "py/add_2"], 0, 1.0),
    ("error: no such config", ["train", "no_such.yaml"], 2, 0.5),
    ("error: unknown key", ["train", "examples/quickstart.yaml", "train.stepz=3"], 2, 0.5),
    ("error: bad --checkpoint", ["eval", "examples/quickstart.yaml", "--checkpoint", "/no/such"], 2, 0.5),
    ("error: traces of no run", ["traces", "/no/such/run"], 2, 0.5),
    ("error: replay of no run", ["replay", "/no/such/run", "--step", "1"], 2, 0.5),
    ("error: export extension", ["export", "/no/such/run", "--format", "sft", "--out", "x.csv"], 2, 0.5),
    ("error: unknown task id", ["score", TASKS, "-", "--task-id", "py/no_such"], 2, 0.5),
]


def start(args: list[str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], cwd=ROOT, input=REPLY, capture_output=True, text=True
    )
    return time.perf_counter() - t0, done.returncode, done.stderr


def bare_python(repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="each command once; nothing saved")
    a = ap.parse_args()
    repeats = 1 if a.smoke else a.repeats
    rows = []
    for label, args, want, target in COMMANDS:
        runs = [start(args) for _ in range(repeats)]
        for _, rc, err in runs:
            if rc != want:
                raise SystemExit(f"rlvr {' '.join(args)}: exit {rc}, expected {want}: {err.strip()[-500:]}")
        best = min(s for s, _, _ in runs)
        rows.append({"command": label, "seconds": best, "target_s": target, "within": best <= target})
    bare = bare_python(repeats)
    print(f"{'command':<26}{'seconds':>9}{'target':>8}")
    print(f"{'(python -c pass)':<26}{bare:>9.3f}")
    for r in rows:
        print(f"{r['command']:<26}{r['seconds']:>9.3f}{r['target_s']:>8.1f}{'' if r['within'] else '  MISSED'}")
    out = {"python_start_s": bare, "repeats": repeats, "commands": rows,
           "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}}  # fmt: skip
    if not a.smoke:
        (ROOT / "bench" / "results" / "cli_start.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
