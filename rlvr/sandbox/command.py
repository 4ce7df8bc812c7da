"""Run a command on a copy of a directory in the sandbox: what a repository's test
pipeline, an agent's tool call or any enterprise CI step needs.

    job = Job(argv=["/env/bin/python", "-m", "pytest", "-q"], tree="/cache/repos/x/tree",
              files={"pkg/mod.py": "..."}, collect=["junit.xml"])
    result = run_job(job, Limits(timeout_s=60), pool)

The tree must be a directory the pool's jail shows (read-only): `SandboxPool(show=...)`
adds it. Inside, the run gets its own copy at /sandbox/repo (the command's cwd, or
`cwd` under it), with `files` written over it and `delete` removed; nothing the command
writes outlives the run, and the tree itself is never written. `collect` names files
(relative to /sandbox) to bring back after the command, each capped at 4 MiB: a JUnit
report, a coverage file. What they say was written by the command, inside the sandbox:
whoever reads them must treat them as the command's claims, not as verdicts made
outside (rlvr.repos protects test files and configuration for that reason).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from rlvr.sandbox.executor import Limits
from rlvr.sandbox.pool import SandboxPool, default_pool
from rlvr.sandbox.workspace import TREE

WORK_TREE = f"/sandbox/{TREE}"  # where the copy is, inside the jail


class JobError(ValueError):
    """A job that cannot be run; the message names the field and the problem."""


def _relative(what: str, rel: str) -> str:
    if not isinstance(rel, str):
        raise JobError(f"{what}: {rel!r} is not a string")
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise JobError(f"{what}: {rel!r} is not a plain relative path (no leading '/', '.', '..' or empty parts)")
    return rel


@dataclass(frozen=True)
class Job:
    argv: list[str]
    tree: str
    files: dict[str, str] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    collect: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(a, str) and a and "\0" not in a for a in self.argv):
            raise JobError("argv: a non-empty list of non-empty strings is needed")
        if not os.path.isabs(self.tree):
            raise JobError(f"tree: {self.tree!r} is not an absolute path")
        for rel in [*self.files, *self.delete, *self.collect]:
            _relative("files/delete/collect", rel)
        if self.cwd:
            _relative("cwd", self.cwd)
        for k, v in self.env.items():
            if not k or "=" in k or "\0" in k or "\0" in v:
                raise JobError(f"env: {k!r} is not a variable name with a value")

    def to_wire(self) -> str:
        return json.dumps(
            {
                "argv": self.argv,
                "tree": self.tree,
                "files": self.files,
                "delete": self.delete,
                "env": self.env,
                "cwd": self.cwd,
                "collect": self.collect,
            }
        )


@dataclass
class JobResult:
    status: str  # "ok" (the command ran and ended) | "timeout" | "error" (could not run) | "sandbox_error"
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    output_truncated: bool = False
    files: dict[str, str] = field(default_factory=dict)
    truncated_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    error: str = ""
    wall_time_s: float = 0.0
    command_s: float = 0.0
    cpu_time_s: float = 0.0
    peak_memory_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.exit_code == 0


def run_job(job: Job, limits: Limits | None = None, pool: SandboxPool | None = None) -> JobResult:
    raw = (pool or default_pool()).run(job.to_wire(), [], limits or Limits(), "command")
    return decode(raw)


def decode(raw: dict[str, Any]) -> JobResult:
    """The raw observations of a command run as a JobResult. Events the job's command
    could have written itself (it shares the run) are read only as claims about files."""
    if "sandbox_error" in raw:
        return JobResult("sandbox_error", error=str(raw["sandbox_error"])[-2000:])
    out = JobResult(
        "error",
        stdout=raw.get("stdout", ""),
        stderr=raw.get("stderr", ""),
        output_truncated=bool(raw.get("output_truncated")),
        wall_time_s=float(raw.get("wall_time_s", 0.0)),
        cpu_time_s=float(raw.get("cpu_time_s", 0.0)),
        peak_memory_mb=float(raw.get("peak_memory_mb", 0.0)),
    )
    ended = False
    for line in raw.get("events", []):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        kind = ev.get("e")
        if kind == "sandbox_error":
            return JobResult("sandbox_error", error=str(ev.get("msg", ""))[-2000:])
        if kind == "error" and not ended:
            out.error = str(ev.get("msg", ""))
        elif kind == "command" and not ended and isinstance(ev.get("exit"), int):
            out.status, out.exit_code, ended = "ok", ev["exit"], True
            out.command_s = float(ev.get("wall_s", 0.0))
        elif kind == "timeout" and not ended:
            out.status, ended = "timeout", True
        elif kind == "file" and isinstance(ev.get("path"), str) and isinstance(ev.get("text"), str):
            out.files.setdefault(ev["path"], ev["text"])
            if ev.get("truncated"):
                out.truncated_files.append(ev["path"])
        elif kind == "missing" and isinstance(ev.get("path"), str):
            out.missing.append(ev["path"])
    if raw.get("timed_out") and not ended:
        out.status = "timeout"
    if out.status == "error" and not out.error:
        out.error = f"the run ended before the command did (exit {raw.get('exit')})"
    return out
