"""Running a bench script as a user runs it, for the bench smoke tests
(test_benches*.py): the script from the checkout with this interpreter, its last stdout
line read as the JSON of its figures, and a check that a smoke run records nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def run_bench(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in the checkout; with `ok`, it must exit 0 (its stderr tail otherwise)."""
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if ok:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def last_json(out: str) -> dict[str, Any]:
    """The figures a bench prints as its last line."""
    parsed: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return parsed


@contextmanager
def records_nothing(*paths: Path) -> Iterator[None]:
    """The files `paths` (results, a corpus) are as they were: a smoke run is a check, not a figure."""
    before = [p.read_bytes() if p.exists() else None for p in paths]
    yield
    assert [p.read_bytes() if p.exists() else None for p in paths] == before
