"""The shipped set of real-repository tasks (bundled:repos) against its manifest: the
file's hash, every project locked by its sdist's sha256, the split by repository, every
task loadable as a repo_agent task; and a sample of ~20 toolz tasks oracle-checked again
on a fresh fetch (the registry once, through the shipped lock)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import rlvr.repos.agent  # noqa: F401  (registers the repo_agent domain, as plugins: does)
from rlvr.repos.bundle import LOCK, PROJECTS, TASKS, load_manifest
from rlvr.repos.mine import RepoTask
from rlvr.repos.reward import oracle_check
from rlvr.repos.store import Repo
from rlvr.repos.suite import ensure_baseline, repo_pool
from rlvr.tasks import load_tasks


def test_the_set_matches_its_manifest_and_is_split_by_repository() -> None:
    manifest = load_manifest()
    assert hashlib.sha256(TASKS.read_bytes()).hexdigest() == manifest["tasks_sha256"]
    tasks = load_tasks("bundled:repos")  # every task passes the environment's check_task
    assert len(tasks) == manifest["tasks"] == sum(p["tasks"] for p in manifest["projects"])
    assert [p["source"] for p in manifest["projects"]] == [p.source for p in PROJECTS]
    lock = json.loads(LOCK.read_text())["sdists"]
    by_slug = {p["slug"]: p for p in manifest["projects"]}
    for p in manifest["projects"]:
        assert lock[p["source"]]["sha256"] == p["digest"], p["source"]  # an sdist's tree digest is its sha256
    for t in tasks:
        project = by_slug[t.tests["repo"]]
        assert t.metadata["split"] == project["split"] and t.tests["task"]["digest"] == project["digest"]
        assert not set(t.tests["held_out"]) & {ln[2:] for ln in t.prompt.splitlines() if ln.startswith("- ")}
    eval_repos = {p["slug"] for p in manifest["projects"] if p["split"] == "eval"}
    assert eval_repos and eval_repos != set(by_slug)
    assert {t.tests["repo"] for t in tasks if t.metadata["split"] == "eval"} == eval_repos


def test_a_sample_of_the_shipped_tasks_passes_the_oracle_check_again(toolz_repo: tuple[Path, Repo]) -> None:
    _, repo = toolz_repo
    rows = [json.loads(line) for line in TASKS.read_text().splitlines()]
    mine = [RepoTask.from_dict(r["tests"]["task"]) for r in rows if r["tests"]["repo"] == repo.slug]
    assert mine and all(t.digest == repo.digest for t in mine)
    sample = random.Random(0).sample(mine, min(20, len(mine)))
    with repo_pool([repo], 2) as pool:
        base, _ = ensure_baseline(repo, pool)
        failed = {t.id: r.reason for t in sample if not (r := oracle_check(repo, t, base, pool)).ok}
    assert failed == {}
