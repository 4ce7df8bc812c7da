"""The shipped set of real-repository tasks (`bundled:repos`): pinned registry projects,
their mined and oracle-checked tasks, split by repository.

    rlvr repos add --bundled     fetch and build every project of the set (sha256-locked)
    rlvr repos bundle            (maintainers) mine the set again and write it

Files, in rlvr/tasks/data/:
    repos.jsonl            Task records of the repo_agent domain (the `bundled:repos` source)
    repos.lock             the sdists' sha256s: `add --bundled` refuses a changed archive
    repos_manifest.json    per project its source, slug, tree digest, split, passing tests
                           and task count; the sha256 of repos.jsonl

Every task in the set passed the oracle check (rlvr.repos.reward) when it was written;
`tests/integration/test_repo_bundle.py` checks the file against the manifest's hash and
runs the check again on a sample. The split is by repository: the projects marked
"eval" are never trained on (metadata.split), so an evaluation measures bugs in code
the policy has not seen, not only bugs it has not seen.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.repos.agent import episode_task
from rlvr.repos.coverage import coverage_map
from rlvr.repos.mine import RepoTask, mine
from rlvr.repos.reward import oracle_check
from rlvr.repos.store import Repo, add
from rlvr.repos.suite import ensure_baseline, repo_pool
from rlvr.tasks.loader import BUNDLED_DIR, task_line
from rlvr.types import Task

TASKS = BUNDLED_DIR / "repos.jsonl"
LOCK = BUNDLED_DIR / "repos.lock"
MANIFEST = BUNDLED_DIR / "repos_manifest.json"


@dataclass(frozen=True)
class Project:
    source: str
    split: str = "train"  # "eval": a held-out repository
    override: dict[str, Any] = field(default_factory=dict)


PROJECTS = (
    Project("toolz==1.2.0"),
    Project("isodate==0.7.2"),
    Project("cachetools==8.0.2"),
    Project("semver==3.1.2"),
    Project("tabulate==0.10.0"),
    Project("boltons==26.2.0"),
    # its pytest configuration asks for pytest-cov's --cov; --no-cov keeps it out of the runs
    Project("parse==1.22.4", override={"packages": ["pytest-cov"], "addopts": "--no-cov"}),
    Project("inflection==0.5.1", split="eval"),
    Project("xmltodict==1.0.4", split="eval"),
)


def add_project(p: Project, cache: Path | None = None, lock: Path = LOCK) -> Repo:
    """`rlvr repos add` for one project of the set, with its override, checked against `lock`."""
    if not p.override:
        return add(p.source, cache, None, lock)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "override.yaml"
        path.write_text(yaml.safe_dump(p.override))
        return add(p.source, cache, path, lock)


def add_bundled(cache: Path | None = None, progress: Callable[[str], None] | None = None) -> list[Repo]:
    """Fetch and build every project of the set, each checked against the shipped lock,
    with its suite's baseline."""
    out = []
    for p in PROJECTS:
        repo = add_project(p, cache, LOCK)
        ensure_baseline(repo)
        out.append(repo)
        if progress is not None:
            progress(f"{repo.slug}: ready")
    return out


def tier_of(task_id: str) -> int:
    """Half the bugs are asked at tier 0 (failing tests with messages), half at tier 1
    (names only), by a hash of the id."""
    return hashlib.sha256(task_id.encode()).digest()[0] % 2


def build(
    cache: Path | None,
    per_file: int = 6,
    per_project: int = 80,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    lock: Path = LOCK,
) -> tuple[list[Task], dict[str, Any]]:
    """Mine every project (at least `per_file` candidates a module, more where a project has
    few modules), keep at most `per_project` oracle-checked tasks of each (drawn by
    `seed`), and return the set with its manifest."""
    say = progress or (lambda line: None)
    tasks: list[Task] = []
    projects = []
    for p in PROJECTS:
        repo = add_project(p, cache, lock)
        with repo_pool([repo], 2) as pool:
            base, _ = ensure_baseline(repo, pool)
            cov = coverage_map(repo, pool, base)
            # enough candidates for the target whatever the module count (kept ~60-90% here)
            modules = max(1, len(cov.source_files()))
            drawn = max(per_file, math.ceil(2 * per_project / modules))
            mined = mine(repo, pool, base, cov, per_file=drawn, seed=seed)
            pool_tasks = sorted(mined.tasks, key=lambda t: t.id)
            random.Random(f"{seed}:{repo.slug}").shuffle(pool_tasks)
            kept: list[RepoTask] = []
            failed = 0
            for t in pool_tasks:
                if len(kept) >= per_project:
                    break
                if oracle_check(repo, t, base, pool).ok:
                    kept.append(t)
                else:
                    failed += 1
        for t in sorted(kept, key=lambda t: t.id):
            task = episode_task(repo, t, tier=tier_of(t.id), seed=seed)
            task.metadata["split"] = p.split
            tasks.append(task)
        projects.append(
            {
                "source": p.source,
                "slug": repo.slug,
                "digest": repo.digest,
                "split": p.split,
                "override": p.override,
                "passing": len(base.passing),
                "per_file": drawn,
                "candidates": mined.candidates(),
                "mined": len(mined.tasks),
                "oracle_failed": failed,
                "tasks": len(kept),
            }
        )
        counts = f"{mined.candidates()} candidates, {len(mined.tasks)} kept by the suite, {failed} failed the oracle"
        say(f"{repo.slug}: {len(kept)} tasks ({counts})")
    manifest = {"per_file": per_file, "per_project": per_project, "seed": seed, "projects": projects}
    return tasks, manifest


def write(tasks: list[Task], manifest: dict[str, Any], data: Path = BUNDLED_DIR) -> None:
    text = "".join(task_line(t) + "\n" for t in tasks)
    manifest = {**manifest, "tasks": len(tasks), "tasks_sha256": hashlib.sha256(text.encode()).hexdigest()}
    for path, body in ((data / TASKS.name, text), (data / MANIFEST.name, json.dumps(manifest, indent=1) + "\n")):
        tmp = path.with_suffix(".tmp")
        tmp.write_text(body)
        os.replace(tmp, path)


def load_manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text())
    return data
