"""The repository agent's environment, measured: sandbox seconds per tool call and per
final verdict, episodes per hour on this machine, and whether tasks can be solved through
the tools at all (the scripted policy of rlvr/repos/scripted.py: it locates the bug from
the failing tests' traceback, or by searching for the function, then applies the
reference fix through `edit`).

Baselines, same run:
- the policy that submits at once (the unfixed tree): what doing nothing earns (0 on a
  task that passed the oracle check; anything else is a bug in the reward);
- `read` and `search` done directly in this process on the pristine tree (no sandbox,
  no copy): the cost of running those tools in the jail.

    python bench/repo_agent.py                          # toolz==1.2.0
    python bench/repo_agent.py --repo ./myproject --per-file 6 --tasks 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path

from machine import cpu_name

from rlvr.envs import EnvSettings
from rlvr.repos import RepoError, add
from rlvr.repos.agent import RepoAgentEnv, episode_task
from rlvr.repos.coverage import coverage_map
from rlvr.repos.mine import mine
from rlvr.repos.reward import oracle_check
from rlvr.repos.scripted import solve
from rlvr.repos.suite import BaselineError, ensure_baseline, repo_pool


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def host_baseline(tree: Path, files: list[str], repeats: int = 5) -> dict[str, float]:
    """Median seconds of a 61-line read and of a whole-tree search, in this process."""
    reads, searches = [], []
    rx = re.compile(r"def \w+\(")
    for _ in range(repeats):
        for f in files:
            t0 = time.perf_counter()
            lines = (tree / f).read_text(encoding="utf-8").splitlines()
            "\n".join(f"{k:5d}| {ln}" for k, ln in enumerate(lines[:61], 1))
            reads.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hits = 0
        for p in tree.rglob("*.py"):
            hits += sum(1 for line in p.read_text(encoding="utf-8", errors="replace").splitlines() if rx.search(line))
        searches.append(time.perf_counter() - t0)
    return {"read_s": statistics.median(reads), "search_s": statistics.median(searches)}


def bench_repo(source: str, per_file: int, limit: int, seed: int, cache: Path | None) -> dict:  # type: ignore[type-arg]
    repo = add(source, cache)
    cache_arg = str(cache.resolve()) if cache else None
    with repo_pool([repo], 2) as pool:
        base, _ = ensure_baseline(repo, pool)
        cov = coverage_map(repo, pool, base)
        mined = mine(repo, pool, base, cov, per_file=per_file, seed=seed)
        checked = [t for t in mined.tasks if oracle_check(repo, t, base, pool).ok]
    tasks = checked[:limit]
    if not tasks:
        raise RepoError(f"{source}: no task passed the oracle check ({len(mined.tasks)} mined)")
    episodes, noop = [], []
    t_all = time.perf_counter()
    for t in tasks:
        task = episode_task(repo, t, tier=0, seed=seed, cache=cache_arg)
        t0 = time.perf_counter()
        got = asyncio.run(solve(task))
        episodes.append(
            {
                "task": t.id,
                "reward": got.reward,
                "calls": got.calls,
                "located": got.located,
                "wall_s": time.perf_counter() - t0,
                "tool_s": got.tool_s,
            }
        )
    scripted_s = time.perf_counter() - t_all
    for t in tasks:
        env = RepoAgentEnv(EnvSettings())
        asyncio.run(env.reset(episode_task(repo, t, tier=0, seed=seed, cache=cache_arg)))
        step = asyncio.run(env.step('{"tool": "submit"}'))
        noop.append(step.reward.total if step.reward else 0.0)
    per_tool: dict[str, list[float]] = {}
    for e in episodes:
        for name, xs in e["tool_s"].items():
            per_tool.setdefault(name, []).extend(xs)
    submit_s = per_tool.pop("submit", [])
    n = len(episodes)
    return {
        "source": source,
        "passing": len(base.passing),
        "mined": len(mined.tasks),
        "oracle_checked_tasks": len(checked),
        "episodes": n,
        "scripted": {
            "solved": sum(e["reward"] == 1.0 for e in episodes),
            "solve_rate": sum(e["reward"] == 1.0 for e in episodes) / n,
            "reward_mean": sum(e["reward"] for e in episodes) / n,
            "located_traceback": sum(e["located"] == "traceback" for e in episodes),
            "located_search": sum(e["located"] == "search" for e in episodes),
            "calls_mean": sum(e["calls"] for e in episodes) / n,
            "episode_s_p50": statistics.median(e["wall_s"] for e in episodes),
            "episodes_per_hour_one_at_a_time": n / scripted_s * 3600,
        },
        "noop_baseline": {"reward_mean": sum(noop) / n, "paid": sum(r > 0 for r in noop)},
        "tool_s": {k: {"n": len(v), "p50": statistics.median(v), "p95": pct(v, 0.95)} for k, v in per_tool.items()},
        "submit_s": {
            "n": len(submit_s),
            "p50": statistics.median(submit_s) if submit_s else 0.0,
            "p95": pct(submit_s, 0.95),
        },
        "host_baseline": host_baseline(Path(repo.tree), sorted({t.file for t in tasks})),
        "failures": [e["task"] for e in episodes if e["reward"] != 1.0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", help="a SOURCE for rlvr repos add (repeatable; default toolz==1.2.0)")
    ap.add_argument("--per-file", type=int, default=4, help="candidate mutants drawn per module (default 4)")
    ap.add_argument("--tasks", type=int, default=40, help="at most this many oracle-checked tasks a repository")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, help="the repository cache (default: rlvr's)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/repo_agent.json"))
    args = ap.parse_args(argv)
    results = []
    for source in args.repo or ["toolz==1.2.0"]:
        try:
            r = bench_repo(source, args.per_file, args.tasks, args.seed, args.cache)
        except (RepoError, BaselineError) as e:
            print(f"repo_agent: {source}: {e}", file=sys.stderr)
            return 2
        results.append(r)
        _print(r)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = f"{cpu_name()}, {time.strftime('%Y-%m-%d')}"
    args.out.write_text(json.dumps({"machine": machine, "repos": results}, indent=1) + "\n")
    print(f"wrote {args.out}")
    print(json.dumps({"repos": [_headline(r) for r in results]}))
    return 0


def _print(r: dict) -> None:  # type: ignore[type-arg]
    s, b, h = r["scripted"], r["noop_baseline"], r["host_baseline"]
    print(f"{r['source']}: {r['episodes']} tier-0 episodes on oracle-checked tasks ({r['mined']} mined)")
    print(
        f"  scripted policy: {s['solved']}/{r['episodes']} solved ({s['solve_rate']:.0%}); located by traceback "
        f"{s['located_traceback']}, by search {s['located_search']}; {s['calls_mean']:.1f} calls, "
        f"{s['episode_s_p50']:.2f} s an episode (p50), {s['episodes_per_hour_one_at_a_time']:.0f} episodes/hour"
    )
    print(f"  baseline, submit at once: reward {b['reward_mean']:.2f} ({b['paid']} paid)")
    for name, t in sorted(r["tool_s"].items()):
        print(f"  {name:10s} p50 {t['p50'] * 1000:7.1f} ms  p95 {t['p95'] * 1000:7.1f} ms  (n={t['n']})")
    sub = r["submit_s"]
    print(f"  submit     p50 {sub['p50'] * 1000:7.1f} ms  p95 {sub['p95'] * 1000:7.1f} ms  (the whole suite)")
    print(f"  in-process baseline: read {h['read_s'] * 1000:.2f} ms, search of the tree {h['search_s'] * 1000:.1f} ms")
    for task in r["failures"]:
        print(f"  not solved: {task}")


def _headline(r: dict) -> dict:  # type: ignore[type-arg]
    return {
        "source": r["source"],
        "episodes": r["episodes"],
        "solve_rate": r["scripted"]["solve_rate"],
        "noop_reward": r["noop_baseline"]["reward_mean"],
        "read_p50_s": r["tool_s"].get("read", {}).get("p50", 0.0),
        "run_tests_p50_s": r["tool_s"].get("run_tests", {}).get("p50", 0.0),
        "submit_p50_s": r["submit_s"]["p50"],
        "host_read_s": r["host_baseline"]["read_s"],
    }


if __name__ == "__main__":
    sys.exit(main())
