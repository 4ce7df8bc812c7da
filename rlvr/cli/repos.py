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
    a.add_argument("source", nargs="?", help="omit with --bundled")
    a.add_argument("--bundled", action="store_true", help="every project of the shipped set (bundled:repos)")
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
    m = rps.add_parser("mine", help="mine bug-injection tasks from a cached repository, each oracle-checked")
    m.add_argument("name", help="its name, slug or SOURCE")
    m.add_argument("--per-file", type=int, help="at most this many candidate mutants per module (drawn by --seed)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--cap", type=float, default=0.2, help="most of the passing set a task may fail (default 0.2)")
    m.add_argument("--file", action="append", dest="files", help="only this module (repeatable)")
    m.add_argument("--no-check", action="store_true", help="keep tasks without the oracle check (not for training)")
    m.add_argument("--order", type=int, default=1, help="2 or 3: combine the saved single-site tasks of a module")
    m.add_argument("--history", action="store_true", help="tasks from fix commits (a git repository), not mutants")
    m.add_argument("--limit", type=int, default=200, help="--history: the last N commits looked at (default 200)")
    u = rps.add_parser("import", help="add tasks written by a user: FILE (YAML) of {issue, fix (a revision), tests}")
    u.add_argument("name", help="its name, slug or SOURCE (a git repository)")
    u.add_argument("file", type=Path)
    m.add_argument("--json", action="store_true")
    b = rps.add_parser("bundle", help="(maintainers) mine the shipped set again and write rlvr/tasks/data/repos.*")
    b.add_argument("--per-file", type=int, default=6, help="at least this many candidate mutants a module (default 6)")
    b.add_argument("--per-project", type=int, default=80, help="most oracle-checked tasks kept a project (default 80)")
    b.add_argument("--seed", type=int, default=0)
    t = rps.add_parser("tasks", help="write a repository's mined tasks as repo_agent training tasks (JSONL)")
    t.add_argument("name", help="its name, slug or SOURCE")
    t.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    t.add_argument("--tier", type=int, default=0, choices=[0, 1], help="0: failing tests with messages; 1: names only")
    t.add_argument("--seed", type=int, default=0, help="draws which failing tests are held out")
    t.add_argument("--calls", type=int, default=30, help="tool calls an episode may make (default 30)")
    t.add_argument("--wall", type=float, default=1800.0, help="seconds an episode may take (default 1800)")
    w = rps.add_parser(
        "test-writing", help="write test-writing tasks for a repository's functions, paid by its mined bugs (JSONL)"
    )
    w.add_argument("name", help="its name, slug or SOURCE")
    w.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    w.add_argument("--max-mutants", type=int, default=10, help="mined bugs paid a function at most (default 10)")
    w.add_argument("--json", action="store_true", help="print the summary as one JSON object")
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
        + (f", {len(b.unstable)} with ids that follow the hash seed (quarantined)" if b.unstable else "")
    )


def _baseline_dict(b: Any) -> dict[str, Any]:
    return {
        "runs": b.runs,
        "passing": len(b.passing),
        "flaky": b.flaky,
        "failing": b.failing,
        "skipped": len(b.skipped),
        "unstable": len(b.unstable),
        "run_wall_s": b.run_wall_s,
    }


def _mine(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError, show
    from rlvr.repos.coverage import coverage_map
    from rlvr.repos.mine import mine, save_tasks
    from rlvr.repos.reward import oracle_check
    from rlvr.repos.suite import ensure_baseline, repo_pool

    if not 0 < args.cap <= 1:
        raise RepoError(f"--cap must be in (0, 1], got {args.cap}")
    if args.per_file is not None and args.per_file < 1:
        raise RepoError(f"--per-file must be at least 1, got {args.per_file}")
    repo = show(args.name, args.cache)
    if args.history:
        return _mine_history(args, repo)
    if args.order != 1:
        return _mine_combined(args, repo)
    with repo_pool([repo], 2) as pool:
        base, _ = ensure_baseline(repo, pool)
        cov = coverage_map(repo, pool, base)
        unknown = sorted(set(args.files or []) - set(cov.source_files()))
        if unknown:
            raise RepoError(f"not a covered module of {repo.name}: {', '.join(unknown)}")
        mined = mine(repo, pool, base, cov, args.cap, files=args.files, per_file=args.per_file, seed=args.seed)
        checks = [] if args.no_check else [oracle_check(repo, t, base, pool) for t in mined.tasks]
    failed = {c.task: c.reason for c in checks if not c.ok}
    kept = [t for t in mined.tasks if t.id not in failed]
    path = save_tasks(repo, kept)
    summary = {
        **mined.summary(),
        "oracle_checked": len(checks),
        "oracle_failed": failed,
        "saved": len(kept),
        "path": str(path),
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{repo.slug}: {summary['candidates']} candidates, {len(mined.tasks)} kept by the suite, ", end="")
    print(f"{len(checks) - len(failed)} of {len(checks)} passed the oracle check; {len(kept)} saved to {path}")
    for op, counts in summary["per_operator"].items():
        print(f"  {op:17s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for task, why in failed.items():
        print(f"  failed the oracle check: {task}: {why}")
    return 0


def _checked(repo: Any, pool: Any, base: Any, tasks: list[Any]) -> tuple[list[Any], dict[str, str]]:
    from rlvr.repos.reward import oracle_check

    checks = [oracle_check(repo, t, base, pool) for t in tasks]
    failed = {c.task: c.reason for c in checks if not c.ok}
    return [t for t in tasks if t.id not in failed], failed


def _mine_combined(args: argparse.Namespace, repo: Any) -> int:
    from rlvr.repos import RepoError
    from rlvr.repos.coverage import coverage_map
    from rlvr.repos.mine import load_tasks, merge_tasks, mine_combined, tasks_path
    from rlvr.repos.suite import ensure_baseline, repo_pool

    if args.order not in (2, 3):
        raise RepoError(f"--order must be 1, 2 or 3, got {args.order}")
    path = tasks_path(repo)
    singles = [t for t in load_tasks(path) if t.order == 1 and t.kind == "mutation"] if path.is_file() else []
    if not singles:
        raise RepoError(f"{repo.slug} has no single-site tasks to combine: rlvr repos mine {args.name} first")
    with repo_pool([repo], 2) as pool:
        base, _ = ensure_baseline(repo, pool)
        cov = coverage_map(repo, pool, base)
        got = mine_combined(repo, pool, base, cov, singles, args.order, args.per_file or 4, args.cap, args.seed)
        kept, failed = (got.tasks, {}) if args.no_check else _checked(repo, pool, base, got.tasks)
    path = merge_tasks(repo, kept)
    summary = {**got.summary(), "oracle_failed": failed, "saved": len(kept), "path": str(path)}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(
        f"{repo.slug}: {summary['candidates']} order-{args.order} candidates, {len(kept)} checked tasks saved to {path}"
    )
    return 0


def _mine_history(args: argparse.Namespace, repo: Any) -> int:
    from rlvr.repos.history import mine_history
    from rlvr.repos.mine import merge_tasks
    from rlvr.repos.suite import ensure_baseline, repo_pool

    with repo_pool([repo], 2) as pool:
        base, _ = ensure_baseline(repo, pool)
        got = mine_history(repo, pool, base, args.cap, args.limit)
        kept, failed = (got.tasks, {}) if args.no_check else _checked(repo, pool, base, got.tasks)
    path = merge_tasks(repo, kept)
    summary = {"outcomes": dict(got.outcomes), "oracle_failed": failed, "saved": len(kept), "path": str(path)}
    if args.json:
        print(json.dumps(summary))
        return 0
    counts = ", ".join(f"{k} {v}" for k, v in sorted(got.outcomes.items()))
    print(f"{repo.slug}: history of the last {args.limit} commits: {counts}; {len(kept)} tasks saved to {path}")
    for task, why in failed.items():
        print(f"  failed the oracle check: {task}: {why}")
    return 0


def _import(args: argparse.Namespace) -> int:
    import yaml

    from rlvr.repos import RepoError, show
    from rlvr.repos.history import user_task
    from rlvr.repos.mine import merge_tasks
    from rlvr.repos.suite import ensure_baseline, repo_pool

    try:
        entries = yaml.safe_load(args.file.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise RepoError(f"{args.file}: {err}") from None
    if not isinstance(entries, list) or not all(isinstance(x, dict) for x in entries):
        raise RepoError(f"{args.file}: a list of tasks, each {{issue, fix, tests}}, is needed")
    for n, entry in enumerate(entries, 1):
        if set(entry) != {"issue", "fix", "tests"} or not isinstance(entry["tests"], list):
            raise RepoError(f"{args.file}: task {n}: keys issue, fix (a revision) and tests (a list) are needed")
    repo = show(args.name, args.cache)
    tasks = []
    with repo_pool([repo], 2) as pool:
        base, _ = ensure_baseline(repo, pool)
        for n, entry in enumerate(entries, 1):
            tests = [str(t) for t in entry["tests"]]
            try:
                tasks.append(user_task(repo, pool, base, str(entry["fix"]), tests, str(entry["issue"])))
            except RepoError as err:
                raise RepoError(f"{args.file}: task {n}: {err}") from None
        kept, failed = _checked(repo, pool, base, tasks)
    if failed:
        raise RepoError(f"{args.file}: failed the oracle check: {'; '.join(f'{k}: {v}' for k, v in failed.items())}")
    path = merge_tasks(repo, kept)
    print(f"{len(kept)} tasks of {repo.slug} checked and saved to {path}")
    return 0


def _add_bundled(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError
    from rlvr.repos.bundle import add_bundled

    if args.source or not args.bundled:
        raise RepoError("give a SOURCE or --bundled (every project of bundled:repos), not both or neither")
    if args.override or args.lock:
        raise RepoError("--bundled uses the set's own overrides and lock file (rlvr/tasks/data/repos.lock)")
    repos = add_bundled(args.cache, progress=None if args.json else print)
    if args.json:
        print(json.dumps([r.to_dict() for r in repos]))
    else:
        print(f"{len(repos)} projects ready for bundled:repos (train with plugins: [rlvr.repos.agent])")
    return 0


def _bundle(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError
    from rlvr.repos.bundle import build, write

    if args.per_file < 1 or args.per_project < 1:
        raise RepoError("--per-file and --per-project must be at least 1")
    tasks, manifest = build(args.cache, args.per_file, args.per_project, args.seed, progress=print)
    write(tasks, manifest)
    splits = {s: sum(t.metadata["split"] == s for t in tasks) for s in ("train", "eval")}
    n = len(manifest["projects"])
    print(f"{len(tasks)} tasks from {n} projects ({splits['train']} train, {splits['eval']} eval)")
    return 0


def _tasks(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError, show
    from rlvr.repos.agent import Budget, episode_task
    from rlvr.repos.mine import load_tasks, tasks_path

    repo = show(args.name, args.cache)
    path = tasks_path(repo)
    if not path.is_file():
        raise RepoError(f"{repo.slug} has no mined tasks yet: rlvr repos mine {args.name}")
    budget = {"calls": args.calls, "wall_s": args.wall}
    try:
        Budget.from_task(budget)
    except ValueError as e:
        raise RepoError(f"--calls/--wall: {e}") from None
    mined = [t for t in load_tasks(path) if t.digest == repo.digest]
    cache = str(args.cache.resolve()) if args.cache else None
    out = [episode_task(repo, t, args.tier, args.seed, budget, cache=cache) for t in mined]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(t.to_dict(), sort_keys=True) + "\n" for t in out))
    held = sum(len(t.tests["held_out"]) for t in out)
    print(f"{len(out)} tasks of {repo.slug} (tier {args.tier}, {held} failing tests held out) written to {args.out}")
    print("  train on them with the plugin that registers the domain: plugins: [rlvr.repos.agent]")
    return 0


def _test_writing(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError, show
    from rlvr.repos.mine import tasks_path
    from rlvr.repos.test_writing import build_tasks, mined_tasks, summary, write
    from rlvr.tasks import load_tasks

    if args.max_mutants < 1:
        raise RepoError(f"--max-mutants must be at least 1, got {args.max_mutants}")
    repo = show(args.name, args.cache)
    path = tasks_path(repo)
    mined = mined_tasks(repo, path, [] if path.is_file() else load_tasks("bundled:repos"))
    if not mined:
        raise RepoError(f"{repo.slug} has no mined tasks yet: rlvr repos mine {args.name}")
    tasks, why = build_tasks(repo, mined, args.max_mutants)
    write(tasks, args.out)
    got = summary(tasks, why)
    if args.json:
        print(json.dumps({**got, "path": str(args.out)}))
        return 0
    paid = f"{got['mutants']} mined bugs paid, {got['eval']} held out"
    print(f"{got['tasks']} test-writing tasks of {repo.slug} ({paid}) written to {args.out}")
    for why_, n in got["skipped"].items():
        print(f"  skipped {n}: {why_}")
    print(f"  train on them: rlvr train examples/test_writing.yaml tasks.source={args.out}")
    return 0


def run(args: argparse.Namespace) -> int:
    from rlvr.repos import RepoError, add, list_repos, show
    from rlvr.repos.suite import BaselineError, ensure_baseline, load_baseline

    try:
        if args.repos_command == "add":
            if args.runs < 1:
                raise RepoError(f"--runs must be at least 1, got {args.runs}")
            if args.bundled or not args.source:
                return _add_bundled(args)
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
        if args.repos_command == "mine":
            return _mine(args)
        if args.repos_command == "tasks":
            return _tasks(args)
        if args.repos_command == "import":
            return _import(args)
        if args.repos_command == "bundle":
            return _bundle(args)
        if args.repos_command == "test-writing":
            return _test_writing(args)
        repo = show(args.name, args.cache)
        b = load_baseline(repo)
        record = {**repo.to_dict(), "baseline": _baseline_dict(b) if b else None}
        print(json.dumps(record, indent=None if args.json else 1))
        return 0
    except (RepoError, BaselineError) as e:
        print(f"rlvr: error: {e}", file=sys.stderr)
        return 2
