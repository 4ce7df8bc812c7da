"""A repository's virtual environment: its test requirements installed once, keyed by a
hash of what goes into it (this interpreter's version and the sorted requirements), so
an unchanged spec is never rebuilt and two repositories with the same needs share one.

Packages come from a wheelhouse in the cache (`cache/wheelhouse`): an install is tried
offline from it first (`--no-index`), and only what it lacks is downloaded, so a rebuild
after the first fetch needs no network. The repository itself is not installed: its tree
goes on PYTHONPATH (the `src/` directory of a src layout), so a patched tree needs no
reinstall.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rlvr.repos.source import RepoError, last_line

MARKER = "rlvr-env.json"  # written last: an environment without it is a failed build


@dataclass(frozen=True)
class EnvSpec:
    python: str
    requirements: tuple[str, ...]

    @classmethod
    def for_requirements(cls, requirements: list[str]) -> EnvSpec:
        v = sys.version_info
        return cls(f"{sys.implementation.name}-{v.major}.{v.minor}.{v.micro}", tuple(sorted(requirements)))

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Env:
    path: Path
    key: str
    cached: bool  # found built; nothing was installed
    build_s: float  # the build's wall time (the recorded one when cached)
    size_bytes: int

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def build_env(spec: EnvSpec, cache: Path) -> Env:
    path = cache / "envs" / spec.key
    marker = path / MARKER
    if marker.is_file():
        meta = json.loads(marker.read_text())
        return Env(path, spec.key, True, float(meta["build_s"]), int(meta["size_bytes"]))
    shutil.rmtree(path, ignore_errors=True)  # a build that did not finish
    t0 = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)], "creating the virtual environment")
    reqs = path / "requirements.txt"
    reqs.write_text("".join(r + "\n" for r in spec.requirements))
    wheelhouse = cache / "wheelhouse"
    wheelhouse.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(path / "bin" / "python")]
    offline = [*pip, "install", "--quiet", "--no-index", "--find-links", str(wheelhouse), "-r", str(reqs)]
    if subprocess.run(offline, capture_output=True, text=True, check=False).returncode != 0:
        download = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
        _run([*download, "-d", str(wheelhouse), "-r", str(reqs)], "fetching the test requirements")
        _run(offline, "installing the test requirements")
    build_s = time.perf_counter() - t0
    size = _size(path)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps({"spec": asdict(spec), "build_s": build_s, "size_bytes": size}, indent=1) + "\n")
    os.replace(tmp, marker)
    return Env(path, spec.key, False, build_s, size)


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = last_line(done.stderr) or last_line(done.stdout) or f"exit {done.returncode}"
        raise RepoError(f"{what} failed: {why}")


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total
