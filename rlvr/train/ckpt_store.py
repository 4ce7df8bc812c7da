"""Checkpoints copied to object storage (`storage.uri`), and fetched back from there.

After each checkpoint is written in the run directory (atomically, rlvr.train.checkpoint),
`upload` copies it to `<uri>/checkpoints/step-N/` through fsspec (a path, or s3://… with
s3fs), `state.json` last: as in the run directory, only a checkpoint with its
`state.json` counts, so an upload cut short is never taken for one. The newest `keep`
are kept there too. A run that starts without a checkpoint of its own (a new machine, a
rescheduled pod) and finds a newer one there `fetch`es it into its run directory first
and resumes from it as from its own.

The durable queue acknowledges a step's batches only once its checkpoint is uploaded,
so losing the learner's machine with its disk loses nothing either.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from pathlib import Path

import fsspec

_STEP_DIR = re.compile(r"^step-(\d{6,})$")


class CheckpointStore:
    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        self.fs, root = fsspec.core.url_to_fs(self.uri)
        self.root = posixpath.join(root, "checkpoints")

    def _dir(self, step: int) -> str:
        return posixpath.join(self.root, f"step-{step:06d}")

    def steps(self) -> list[int]:
        """Complete checkpoints there (those with their state.json), oldest first."""
        if not self.fs.exists(self.root):
            return []
        found = []
        for entry in self.fs.ls(self.root, detail=False):
            m = _STEP_DIR.match(posixpath.basename(str(entry).rstrip("/")))
            if m and self.fs.exists(posixpath.join(str(entry), "state.json")):
                found.append(int(m.group(1)))
        return sorted(found)

    def upload(self, local: Path, keep: int) -> str:
        """Copy the checkpoint directory `local` (step-N) there, state.json last; prune."""
        m = _STEP_DIR.match(local.name)
        if m is None:
            raise ValueError(f"{local} is not a checkpoint directory (step-NNNNNN)")
        target = self._dir(int(m.group(1)))
        if self.fs.exists(target):  # a partial copy from before: start clean
            self.fs.rm(target, recursive=True)
        files = sorted(p for p in local.rglob("*") if p.is_file() and p.name != "state.json")
        for p in files:
            dest = posixpath.join(target, p.relative_to(local).as_posix())
            self.fs.makedirs(posixpath.dirname(dest), exist_ok=True)
            self.fs.put_file(str(p), dest)
        self.fs.put_file(str(local / "state.json"), posixpath.join(target, "state.json"))
        for old in self.steps()[:-keep]:
            self.fs.rm(self._dir(old), recursive=True)
        return target

    def fetch(self, step: int, local_root: Path) -> Path:
        """Checkpoint `step` into `local_root/step-N` (whole, or not at all)."""
        final = local_root / f"step-{step:06d}"
        tmp = local_root / f"step-{step:06d}.fetch"
        shutil.rmtree(tmp, ignore_errors=True)
        source = self._dir(step)
        for entry in self.fs.find(source):
            rel = posixpath.relpath(str(entry), source)
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            self.fs.get_file(str(entry), str(dest))
        if not (tmp / "state.json").is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            raise FileNotFoundError(f"checkpoint {source} has no state.json: not a complete checkpoint")
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        return final
