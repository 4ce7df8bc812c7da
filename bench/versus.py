"""What the side-by-side benches against TRL share (bench/sft_vs_trl.py, bench/rm_vs_trl.py):
their command line, each side run in its own process one after the other (so each has the
CPU to itself and its peak memory is its own), and the machine named in the results."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def parser(doc: str, steps: int, out: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--smoke", action="store_true", help="rlvr's side only, tiny model, 2 steps of 2")
    ap.add_argument("--report", metavar="RESULTS", help="print the table from a results file and exit")
    ap.add_argument("--out", default=out)
    ap.add_argument("--child", nargs=5, metavar=("SIDE", "DATA", "MODEL", "BATCH", "OUT"), help=argparse.SUPPRESS)
    return ap


def run_sides(script: str, sides: list[str], data: Path, model: str, batch: int) -> dict[str, Any]:
    """Each side's results: `script --child SIDE DATA MODEL BATCH OUT` in a process of its own."""
    results: dict[str, Any] = {}
    for side in sides:
        out = data.parent / f"{side}.json"
        done = subprocess.run([sys.executable, script, "--child", side, str(data), model, str(batch), str(out)])
        if done.returncode != 0:
            raise SystemExit(f"{side}: its run failed (exit {done.returncode}); there is no figure")
        results[side] = json.loads(out.read_text())
    return results


def save(path: str, **fields: Any) -> None:
    """The results with the machine they were measured on."""
    from machine import cpu_kind, cpu_name  # bench/machine.py: the CPU named in every result

    machine = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
    Path(path).write_text(json.dumps({"machine": machine, **fields}, indent=2))
