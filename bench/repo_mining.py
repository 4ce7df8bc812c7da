"""Real repositories end to end, with figures: the environment built (cold, cached), the
suite's three-run baseline in the sandbox, the per-test coverage map, bug-injection
mining (yield per operator, tasks per CPU-hour, sandbox seconds per verdict) and the
oracle check of every kept task.

Baseline, same run: the same candidate mutants validated without the coverage map (the
whole suite run for each, as a miner that does not know which tests reach a line must):
its CPU per validated task and whether it keeps the same tasks.

Harder tasks: pairs of a module's kept single-site mutations combined in one mutant
(rlvr.repos.mine.mine_combined, order 2), validated and oracle-checked the same way.

    python bench/repo_mining.py                          # toolz==1.2.0
    python bench/repo_mining.py --repo isodate==0.7.2 --repo ./myproject --per-file 10
    python bench/repo_mining.py --shipped --cache /tmp/cold   # the 9 projects of bundled:repos, built cold
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from rlvr.repos import Repo, RepoError, add
from rlvr.repos.bundle import PROJECTS, Project, add_project
from rlvr.repos.coverage import coverage_map
from rlvr.repos.mine import Mined, mine, mine_combined, mutant_limits
from rlvr.repos.reward import oracle_check
from rlvr.repos.suite import BaselineError, ensure_baseline, repo_pool, run_suite


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _name(source: str | Project) -> str:
    return source.source if isinstance(source, Project) else source


def _mining(mined: Mined) -> dict:  # type: ignore[type-arg]
    kept = len(mined.tasks)
    return {
        **mined.summary(),
        "yield": kept / max(1, mined.candidates()),
        "yield_of_run": kept / max(1, len(mined.run_s)),
        "tasks_per_cpu_hour": kept / max(1e-9, mined.cpu_s) * 3600,
        "verdict_s_p50": statistics.median(mined.run_s) if mined.run_s else 0.0,
        "verdict_s_p95": pct(mined.run_s, 0.95),
    }


def bench_repo(
    source: str | Project, per_file: int, unguided: int, seed: int, cache: Path | None, order2: int = 2
) -> dict:  # type: ignore[type-arg]
    """One repository's figures; a Project (one of the shipped set) is added with its
    override and checked against the shipped lock."""

    def _add() -> Repo:
        return add_project(source, cache) if isinstance(source, Project) else add(source, cache)

    t0 = time.perf_counter()
    repo = _add()
    add_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = _add()
    cached_s = time.perf_counter() - t0
    with repo_pool([repo], 2) as pool:
        t0 = time.perf_counter()
        base, was_cached = ensure_baseline(repo, pool)
        baseline_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        cov = coverage_map(repo, pool, base)
        coverage_s = time.perf_counter() - t0
        mined = mine(repo, pool, base, cov, per_file=per_file, seed=seed)
        t0 = time.perf_counter()
        checks = [oracle_check(repo, t, base, pool) for t in mined.tasks]
        oracle_s = time.perf_counter() - t0
        passed = [t for t, c in zip(mined.tasks, checks, strict=True) if c.ok]
        harder = mine_combined(repo, pool, base, cov, passed, order=2, per_file=order2, seed=seed) if order2 else None
        harder_checks = [oracle_check(repo, t, base, pool) for t in harder.tasks] if harder else []
        # the baseline miner: the same first `unguided` candidates, the whole suite for each
        cap = max(1, int(0.2 * len(base.passing)))
        u_cpu, g_cpu, u_kept, agree = 0.0, 0.0, 0, 0
        sample = mined.runs[:unguided]
        for c in sample:
            run = run_suite(repo, pool, files={c.file: c.mutant.source}, limits=mutant_limits(base, base.passing))
            failed = [t for t in base.passing if run.outcome(t) != "passed"]
            kept = run.status == "ok" and 1 <= len(failed) <= cap
            u_cpu += run.cpu_s
            g_cpu += c.cpu_s
            u_kept += kept
            agree += kept == (c.outcome == "kept")
    return {
        "source": _name(source),
        "env": {
            "cold_s": add_s,
            "cached_s": cached_s,
            "size_mib": repo.env_size_bytes / 2**20,
            "env_build_s": repo.env_build_s,
            "env_was_cached": repo.env_cached,
            "second_add_cached": again.env_cached,
        },
        "suite": {
            "tests": base.tests,
            "passing": len(base.passing),
            "flaky": len(base.flaky),
            "unstable": len(base.unstable),
            "failing": len(base.failing),
            "skipped": len(base.skipped),
            "run_wall_s": base.run_wall_s,
            "baseline_s": baseline_s,
            "baseline_cached": was_cached,
        },
        "coverage_s": coverage_s,
        "covered_modules": len(cov.source_files()),
        "mining": _mining(mined),
        "order2": {
            **(_mining(harder) if harder else {}),
            "oracle_checked": len(harder_checks),
            "oracle_passed": sum(c.ok for c in harder_checks),
        },
        "oracle": {
            "checked": len(checks),
            "passed": sum(c.ok for c in checks),
            "wall_s": oracle_s,
            "failures": {c.task: c.reason for c in checks if not c.ok},
        },
        "unguided_baseline": {
            "mutants": len(sample),
            "cpu_s": u_cpu,
            "kept": u_kept,
            "guided_cpu_s": g_cpu,
            "agree": agree,
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", help="a SOURCE for rlvr repos add (repeatable; default toolz==1.2.0)")
    ap.add_argument("--shipped", action="store_true", help="the projects of bundled:repos, with their overrides")
    ap.add_argument("--order2", type=int, default=2, help="order-2 mutants combined per module (0: none; default 2)")
    ap.add_argument("--per-file", type=int, default=8, help="candidate mutants drawn per module (default 8)")
    ap.add_argument("--unguided", type=int, default=12, help="candidates validated again by the whole suite")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, help="the repository cache (default: rlvr's)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/repo_mining.json"))
    args = ap.parse_args(argv)
    if args.shipped and args.repo:
        ap.error("--shipped benches the shipped projects: give it or --repo, not both")
    sources: list[str | Project] = list(PROJECTS) if args.shipped else list(args.repo or ["toolz==1.2.0"])
    results: list[dict] = []  # type: ignore[type-arg]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for source in sources:
        try:
            r = bench_repo(source, args.per_file, args.unguided, args.seed, args.cache, args.order2)
        except (RepoError, BaselineError) as e:
            print(f"repo_mining: {_name(source)}: {e}", file=sys.stderr)
            return 2
        results.append(r)
        _print(r)
        # after every repository: a long run stopped early keeps what it measured
        done = {"machine": _machine(), "complete": len(results) == len(sources), "repos": results}
        args.out.write_text(json.dumps(done, indent=1) + "\n")
    print(f"wrote {args.out}")
    print(json.dumps({"repos": [_headline(r) for r in results]}))
    return 0


def _print(r: dict) -> None:  # type: ignore[type-arg]
    e, m, s, u, o = r["env"], r["mining"], r["suite"], r["unguided_baseline"], r["oracle"]
    state = "found cached" if e["env_was_cached"] else "built now"
    print(
        f"{r['source']}: env built in {e['env_build_s']:.1f} s ({e['size_mib']:.1f} MiB; {state}); "
        f"add took {e['cold_s']:.1f} s, the second add {e['cached_s']:.1f} s"
    )
    print(
        f"  suite: {s['passing']} passing, {s['flaky']} flaky, {s['unstable']} unstable ids, {s['failing']} failing, "
        f"{s['skipped']} skipped; run {statistics.median(s['run_wall_s']):.2f} s; coverage map {r['coverage_s']:.1f} s"
    )
    print(
        f"  mining: {m['kept']} kept of {m['candidates']} candidates ({m['yield']:.0%}; "
        f"{m['yield_of_run']:.0%} of those run), {m['tasks_per_cpu_hour']:.0f} tasks per CPU-hour, "
        f"verdict p50 {m['verdict_s_p50']:.2f} s p95 {m['verdict_s_p95']:.2f} s"
    )
    for op, c in m["per_operator"].items():
        print(f"    {op:17s} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    print(f"  oracle check: {o['passed']} of {o['checked']} passed")
    h = r["order2"]
    if h.get("candidates") == 0:  # absent: --order2 0
        print("  order 2: no pair of kept tasks combined (a module needs two whose sites do not overlap)")
    elif h.get("candidates"):
        print(
            f"  order 2: {h['kept']} kept of {h['candidates']} combined candidates ({h['yield']:.0%}), "
            f"{h['tasks_per_cpu_hour']:.0f} tasks per CPU-hour; oracle check {h['oracle_passed']} of "
            f"{h['oracle_checked']} passed"
        )
    for task, why in o["failures"].items():
        print(f"    failed: {task}: {why}")
    if u["mutants"]:
        print(
            f"  baseline (whole suite per mutant) on {u['mutants']} candidates: {u['cpu_s']:.1f} CPU-s, "
            f"kept {u['kept']}; coverage-guided {u['guided_cpu_s']:.1f} CPU-s; same decision on {u['agree']}"
        )


def _headline(r: dict) -> dict:  # type: ignore[type-arg]
    m, o, u = r["mining"], r["oracle"], r["unguided_baseline"]
    return {
        "source": r["source"],
        "passing": r["suite"]["passing"],
        "candidates": m["candidates"],
        "kept": m["kept"],
        "oracle_passed": o["passed"],
        "oracle_checked": o["checked"],
        "order2_kept": r["order2"].get("kept", 0),
        "order2_oracle_passed": r["order2"]["oracle_passed"],
        "tasks_per_cpu_hour": m["tasks_per_cpu_hour"],
        "unguided_mutants": u["mutants"],
        "unguided_cpu_s": u["cpu_s"],
        "guided_cpu_s": u["guided_cpu_s"],
    }


def _machine() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        model = "unknown CPU"
    import os

    return f"{os.cpu_count()}-core {model}, {time.strftime('%Y-%m-%d')}"


if __name__ == "__main__":
    sys.exit(main())
