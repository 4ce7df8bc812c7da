"""The task check before training: the verdicts on a task set, cached by content, and the
quarantine rule. What a verdict holds is decided above (rlvr.envs.task_check scores each
task's reference, do-nothing replies and generic exploits through its environment);
this module only keeps and reads verdicts, so it runs nothing and imports no
environment.

A task is quarantined when any probe fails: the reference (where there is one) earns less
than full completion, or a reply that does nothing or only exploits the checker earns
more than the task's wrong answer. A run leaves quarantined tasks out, and stops (fail
closed) when more than half of any domain's tasks are quarantined, unless told to go on.

Verdicts are cached one file per task under the cache directory, named by a SHA-256 of
the task's JSON and of the checker's `salt` (the probe set's version and the reward
settings that can change a score), so an unchanged task is never checked twice and a
changed one is always checked again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rlvr.types import Task

QUARANTINE_SHARE = 0.5
"""A domain with more than this share of its tasks quarantined stops the run."""


@dataclass(frozen=True)
class TaskVerdict:
    """One task's check: each probe's reward (`scores`, by probe name) and the problems
    found, one line each; quarantined when there is any problem."""

    task_id: str
    domain: str
    scores: dict[str, float] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def quarantined(self) -> bool:
        return bool(self.problems)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["problems"] = list(self.problems)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskVerdict:
        return cls(
            task_id=str(d["task_id"]),
            domain=str(d["domain"]),
            scores={str(k): float(v) for k, v in d.get("scores", {}).items()},
            problems=tuple(str(p) for p in d.get("problems", ())),
        )


def task_fingerprint(task: Task, salt: str) -> str:
    """SHA-256 of the task's canonical JSON and the checker's salt."""
    text = json.dumps(task.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{salt}\n{text}".encode()).hexdigest()


def default_cache_dir() -> Path:
    """$RLVR_CACHE_DIR/task-check, else $XDG_CACHE_HOME/rlvr/task-check, else
    ~/.cache/rlvr/task-check."""
    if os.environ.get("RLVR_CACHE_DIR"):
        return Path(os.environ["RLVR_CACHE_DIR"]) / "task-check"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rlvr" / "task-check"


class VerdictCache:
    """Verdicts on disk, one JSON file per fingerprint (<dir>/<2 hex>/<64 hex>.json),
    each written whole (a temporary file renamed over it); an unreadable entry reads as
    missing and is checked again."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, fingerprint: str) -> Path:
        return self.root / fingerprint[:2] / f"{fingerprint}.json"

    def get(self, fingerprint: str) -> TaskVerdict | None:
        try:
            return TaskVerdict.from_dict(json.loads(self._path(fingerprint).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, fingerprint: str, verdict: TaskVerdict) -> None:
        path = self._path(fingerprint)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(verdict.to_dict(), f, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only or full cache costs a check next time, nothing else


@dataclass
class CheckReport:
    """The verdicts on a task set, in its order, and how many came from the cache;
    `widened`: the domains whose sample failed and which were then checked whole."""

    verdicts: list[TaskVerdict]
    cached: int = 0
    widened: tuple[str, ...] = ()

    @property
    def quarantined(self) -> list[TaskVerdict]:
        return [v for v in self.verdicts if v.quarantined]

    def quarantined_ids(self) -> set[str]:
        return {v.task_id for v in self.verdicts if v.quarantined}

    def by_domain(self) -> dict[str, tuple[int, int]]:
        """{domain: (quarantined, tasks)}, domains sorted."""
        out: dict[str, list[int]] = {}
        for v in self.verdicts:
            n = out.setdefault(v.domain, [0, 0])
            n[0] += v.quarantined
            n[1] += 1
        return {d: (q, t) for d, (q, t) in sorted(out.items())}

    def failing_domains(self, share: float = QUARANTINE_SHARE) -> list[str]:
        """Domains with more than `share` of their tasks quarantined."""
        return [d for d, (q, t) in self.by_domain().items() if q > share * t]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": len(self.verdicts),
            "cached": self.cached,
            "quarantined": [v.to_dict() for v in self.quarantined],
            "domains": {d: {"quarantined": q, "tasks": t} for d, (q, t) in self.by_domain().items()},
            "failing_domains": self.failing_domains(),
        }

    def lines(self, limit: int = 20) -> list[str]:
        """A human summary: one line per domain, then one per quarantined task (at most
        `limit`, each with its first problem)."""
        out = [
            f"{d}: {t - q} of {t} tasks pass" + (f", {q} quarantined" if q else "")
            for d, (q, t) in self.by_domain().items()
        ]
        bad = self.quarantined
        for v in bad[:limit]:
            more = f" (+{len(v.problems) - 1} more)" if len(v.problems) > 1 else ""
            out.append(f"  quarantined {v.task_id}: {v.problems[0]}{more}")
        if len(bad) > limit:
            out.append(f"  ... and {len(bad) - limit} more quarantined (--json lists them all)")
        return out


def check_tasks(
    tasks: Iterable[Task],
    probe: Callable[[Task], TaskVerdict],
    *,
    salt: str,
    cache: VerdictCache | None = None,
    refresh: bool = False,
    workers: int = 4,
) -> CheckReport:
    """Each task's verdict: from the cache when its fingerprint is there (and not
    `refresh`), else from `probe` (in a pool of `workers` threads: probes wait on
    sandboxes), then cached."""
    tasks = list(tasks)
    prints = [task_fingerprint(t, salt) for t in tasks]
    found: list[TaskVerdict | None] = [cache.get(fp) if cache and not refresh else None for fp in prints]
    todo = [i for i, v in enumerate(found) if v is None]

    def run(i: int) -> TaskVerdict:
        verdict = probe(tasks[i])
        if cache is not None:
            cache.put(prints[i], verdict)
        return verdict

    if todo:
        with ThreadPoolExecutor(max(1, min(workers, len(todo)))) as pool:
            for i, verdict in zip(todo, pool.map(run, todo), strict=True):
                found[i] = verdict
    verdicts = [v for v in found if v is not None]
    return CheckReport(verdicts, cached=len(tasks) - len(todo))
