"""`rlvr repos add|list|show`: real repositories as environments (docs/repos.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    rp = sub.add_parser("repos", help="fetch a repository and build its test environment once; list the cache")
    rps = rp.add_subparsers(dest="repos_command", required=True)
    a = rps.add_parser("add", help="add SOURCE: a directory, a git repository PATH[@REV], or name==version")
    a.add_argument("source")
    a.add_argument("--override", type=Path, help="YAML: packages (extra requirements), addopts, skip (test ids)")
    a.add_argument("--lock", type=Path, help="the lock file of sdist sha256s (default: the cache's repos.lock)")
    a.add_argument("--json", action="store_true", help="print the record as one JSON object")
    a.add_argument("--runs", type=int, default=3, help="runs of the whole suite for its baseline (default 3)")
    a.add_argument("--no-baseline", action="store_true", help="do not run the suite (no passing set yet)")
    for name, what in (("list", "the cached repositories"), ("show", "one repository's record")):
        p = rps.add_parser(name, help=what)
        if name == "show":
            p.add_argument("name", help="its name, slug or SOURCE")
        p.add_argument("--json", action="store_true")
    for p in rps.choices.values():
        p.add_argument("--cache", type=Path, help="the cache root (default: $RLVR_REPOS_CACHE or ~/.cache/rlvr/repos)")


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _summary(r: Any) -> str:
    env = "cached" if r.env_cached else f"built in {r.env_build_s:.1f} s"
    return (
        f"{r.slug}  {r.kind} {r.source}  env {r.env_key} ({env}, {_mib(r.env_size_bytes)}), "
        f"{len(r.requirements)} requirements, PYTHONPATH {r.pythonpath}"
    )


def _baseline_line(b: Any, cached: bool) -> str:
    when = "recorded" if cached else f"{b.runs} runs of {max(b.run_wall_s):.1f} s at most"
    return (
        f"  suite ({when}): {len(b.passing)} passing, {len(b.flaky)} flaky (quarantined), "
        f"{len(b.failing)} failing, {len(b.skipped)} skipped"
    )


def _baseline_dict(b: Any) -> dict[str, Any]:
    return {
        "runs": b.runs,
        "passing": len(b.passing),
        "flaky": b.flaky,
        "failing": b.failing,
        "skipped": len(b.skipped),
        "run_wall_s": b.run_wall_s,
    }


def run(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError, add, list_repos, show
    from rlvr.repos.suite import BaselineError, ensure_baseline, load_baseline

    try:
        if args.repos_command == "add":
            if args.runs < 1:
                raise RepoError(f"--runs must be at least 1, got {args.runs}")
            repo = add(args.source, args.cache, args.override, args.lock)
            base = None if args.no_baseline else ensure_baseline(repo, runs=args.runs)
            if args.json:
                print(json.dumps({**repo.to_dict(), "baseline": _baseline_dict(base[0]) if base else None}))
                return 0
            print(_summary(repo))
            print(f"  tree: {repo.tree}\n  env:  {repo.env_path}")
            for where, reqs in repo.requirement_sources.items():
                print(f"  from {where}: {', '.join(reqs)}")
            for line in repo.skipped:
                print(f"  skipped: {line}")
            if base:
                print(_baseline_line(*base))
                for t in base[0].flaky:
                    print(f"  flaky: {t}")
            return 0
        if args.repos_command == "list":
            repos = list_repos(args.cache)
            if args.json:
                print(json.dumps([r.to_dict() for r in repos]))
            elif not repos:
                print("no repositories cached (rlvr repos add SOURCE)")
            for r in [] if args.json else repos:
                print(_summary(r))
                b = load_baseline(r)
                print(_baseline_line(b, True) if b else "  suite: no baseline yet (rlvr repos add runs it)")
            return 0
        repo = show(args.name, args.cache)
        b = load_baseline(repo)
        record = {**repo.to_dict(), "baseline": _baseline_dict(b) if b else None}
        print(json.dumps(record, indent=None if args.json else 1))
        return 0
    except (RepoError, BaselineError) as e:
        print(f"rlvr: error: {e}", file=sys.stderr)
        return 2
