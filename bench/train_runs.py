"""One `rlvr train` run of the quickstart config with overrides, as the benches that
compare training configurations start them (bench/curriculum.py,
bench/hack_training_model.py)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def train_quickstart(name: str, out: Path, overrides: list[str]) -> tuple[Path, float]:
    """Train `examples/quickstart.yaml` as run `name` under `out` with `overrides`; the run
    directory and the wall seconds. Exits with the run's error output if it fails.
    HumanEval, which the quickstart evaluates before and after (about 8 minutes on 2
    cores), is left out unless `overrides` names `eval.sources` again."""
    cmd = [
        str(ROOT / ".venv" / "bin" / "rlvr"),
        "train",
        str(ROOT / "examples" / "quickstart.yaml"),
        f"name={name}",
        f"output_dir={out}",
        "eval.sources=[]",
        *overrides,
    ]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return out / name, time.monotonic() - t0
