"""The repository cache: `add` (fetch, find the test requirements, build or reuse the
environment, record it), `list_repos` and `show`. Layout under the cache root
(`RLVR_REPOS_CACHE`, default ~/.cache/rlvr/repos):

    repos/SLUG/tree/        the pristine source (episodes work on copies of it)
    repos/SLUG/repo.json    the record: source, digest, requirements, environment, timings
    envs/KEY/               virtual environments by spec hash (shared between repositories)
    sdists/, wheelhouse/    what was fetched from the registry, reused offline
    repos.lock              sdist sha256s (or the lock file given with --lock)
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.repos.deps import suite_requirements
from rlvr.repos.env import EnvSpec, build_env
from rlvr.repos.source import RepoError, fetch, parse_source

OVERRIDE_KEYS = {"packages", "addopts", "skip", "command", "junit", "show"}


def default_cache() -> Path:
    return Path(os.environ.get("RLVR_REPOS_CACHE") or Path.home() / ".cache" / "rlvr" / "repos")


@dataclass
class Override:
    """A repository's own adjustments: packages beyond those found, pytest `addopts`,
    test ids to skip; or the repository's own pipeline instead of pytest: `command` (a
    string, split as a shell would, or a list; run at the tree's root with the
    environment's bin/ first on PATH) and `junit` (the JUnit XML it writes, relative to
    the tree); `show`: more directories the jail shows read-only (absolute paths: a
    node_modules the pipeline runs, a toolchain)."""

    packages: list[str] = field(default_factory=list)
    addopts: str = ""
    skip: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    junit: str = ""
    show: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path | None) -> Override:
        if path is None:
            return cls()
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise RepoError(f"override file {path}: {e}") from None
        if not isinstance(data, dict) or set(data) - OVERRIDE_KEYS:
            bad = sorted(set(data) - OVERRIDE_KEYS) if isinstance(data, dict) else [type(data).__name__]
            raise RepoError(f"override file {path}: unknown keys {bad}; valid: {', '.join(sorted(OVERRIDE_KEYS))}")
        packages = [str(p) for p in data.get("packages", [])]
        raw = data.get("command", [])
        command = shlex.split(raw) if isinstance(raw, str) else [str(a) for a in raw]
        junit = str(data.get("junit", ""))
        if bool(command) != bool(junit):
            raise RepoError(f"override file {path}: 'command' and 'junit' go together (the JUnit XML it writes)")
        parts = junit.split("/")
        if junit and (junit.startswith("/") or any(p in ("", ".", "..") for p in parts)):
            raise RepoError(f"override file {path}: junit {junit!r} must be a plain path relative to the tree")
        skips = [str(s) for s in data.get("skip", [])]
        show = [str(s) for s in data.get("show", [])]
        for d in show:
            if not os.path.isabs(d) or not os.path.isdir(d):
                raise RepoError(f"override file {path}: show {d!r} is not an absolute path to a directory")
        return cls(packages, str(data.get("addopts", "")), skips, command, junit, show)


@dataclass
class Repo:
    name: str
    slug: str
    source: str
    kind: str
    digest: str
    tree: str
    pythonpath: str  # relative to the tree: "." or "src"
    requirements: list[str]
    requirement_sources: dict[str, list[str]]
    skipped: list[str]
    override: dict[str, Any]
    env_key: str
    env_path: str
    env_size_bytes: int
    env_build_s: float
    env_cached: bool
    fetch_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def add(source_text: str, cache: Path | None = None, override: Path | None = None, lock: Path | None = None) -> Repo:
    cache = (cache or default_cache()).resolve()
    t0 = time.perf_counter()
    got = fetch(parse_source(source_text), cache, lock or cache / "repos.lock")
    fetch_s = time.perf_counter() - t0
    _readable_by_all(got.tree)
    ov = Override.load(override)
    found = suite_requirements(got.tree, ov.packages)
    env = build_env(EnvSpec.for_requirements(found.requirements), cache)
    repo = Repo(
        name=found.name or got.slug,
        slug=got.slug,
        source=source_text,
        kind=got.source.kind,
        digest=got.digest,
        tree=str(got.tree),
        pythonpath=_pythonpath(got.tree),
        requirements=found.requirements,
        requirement_sources=found.sources,
        skipped=found.skipped,
        override=asdict(ov),
        env_key=env.key,
        env_path=str(env.path),
        env_size_bytes=env.size_bytes,
        env_build_s=env.build_s,
        env_cached=env.cached,
        fetch_s=fetch_s,
    )
    record = got.tree.parent / "repo.json"
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps(repo.to_dict(), indent=1) + "\n")
    os.replace(tmp, record)
    return repo


def _readable_by_all(tree: Path) -> None:
    """The sandbox's runs read the pristine tree as a user of their own: every directory
    must be searchable and every file readable by others (a private checkout is not)."""
    for dirpath, _, files in os.walk(tree):
        _add_bits(dirpath, 0o555)
        for f in files:
            path = os.path.join(dirpath, f)
            if not os.path.islink(path):
                _add_bits(path, 0o444)


def _add_bits(path: str, bits: int) -> None:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & bits != bits:
        os.chmod(path, mode | bits)


def _pythonpath(tree: Path) -> str:
    src = tree / "src"
    if src.is_dir() and any(p.suffix == ".py" or (p / "__init__.py").exists() for p in src.iterdir()):
        return "src"
    return "."


def list_repos(cache: Path | None = None) -> list[Repo]:
    root = (cache or default_cache()) / "repos"
    out = []
    for record in sorted(root.glob("*/repo.json")) if root.is_dir() else []:
        out.append(Repo(**json.loads(record.read_text())))
    return out


def show(name: str, cache: Path | None = None) -> Repo:
    repos = list_repos(cache)
    hits = [r for r in repos if name in (r.name, r.slug, r.source)]
    if not hits:
        known = ", ".join(r.slug for r in repos) or "none"
        raise RepoError(f"no repository {name!r} in the cache; cached: {known}")
    return hits[-1]
