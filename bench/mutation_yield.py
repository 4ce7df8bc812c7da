"""Mutants of the bundled Python functions and the share their gold tests kill (issues 32
and 36: the one mutation engine, rlvr/tasks/mutate.py).

For every task of bundled:python_functions, the reference's first-order mutants
(`mutants(reference, family=...)`, both families) each run in the sandbox against the
task's visible and held-out tests; a mutant is killed when any test fails or the run does
not end OK. The reference itself runs first and must pass every test (a task whose
reference fails is an error, not a figure). Printed per operator: mutants, killed by the
visible tests, by the held-out tests, by both; overall per family; mutants per task
(median, max, tasks with none); sandbox wall and CPU per mutant run.

Baseline, in the same run: the weakest suite that still names the function (the first
visible test alone), so the figure says how much the gold suites add; and the first
measurement in issue 36 (1,010 single-site mutants of the 308 functions, 95.1% killed by
the gold tests, another operator set) for context.

Survivors of every gold test are presumed equivalent (or a gap in the tests); their
share is what the test-writing domain drops before scoring.

    .venv/bin/python bench/mutation_yield.py           # bench/results/mutation_yield.json
    .venv/bin/python bench/mutation_yield.py --smoke   # 12 tasks, writes nothing
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import cpu_kind, cpu_name  # noqa: E402
from rlvr.sandbox import Limits, execute_many  # noqa: E402
from rlvr.tasks.mutate import mutants  # noqa: E402
from rlvr.types import RunStatus  # noqa: E402

DATA = ROOT / "rlvr" / "tasks" / "data" / "python_functions.jsonl"
RESULTS = ROOT / "bench" / "results" / "mutation_yield.json"
LIMITS = Limits(timeout_s=5.0, memory_mb=512)
SMOKE_TASKS = 12
ISSUE_BASELINE = {"mutants": 1010, "killed_share": 0.951, "source": "issue 36, another operator set"}


class ReferenceFailed(RuntimeError):
    pass


def _killed(result: Any) -> tuple[bool, bool, bool]:
    """(killed by the visible tests, by the held-out ones, by the first visible test)."""
    if result.status is not RunStatus.OK:
        return True, True, True
    visible, held = result.partition()
    first = result.tests[0] if result.tests else None
    first_fails = first is None or first.status.value != "PASSED"
    return visible.passed < visible.total, held.passed < held.total, first_fails


def measure(tasks: list[dict[str, Any]], workers: int) -> dict[str, Any]:
    refs = execute_many([(t["reference"], t["tests"]) for t in tasks], LIMITS, workers=workers)
    bad = [t["id"] for t, r in zip(tasks, refs, strict=True) if r.status is not RunStatus.OK or r.passed < r.total]
    if bad:
        raise ReferenceFailed(f"{len(bad)} reference(s) fail their own tests: {', '.join(bad[:5])}")
    jobs: list[tuple[str, Any]] = []
    owners: list[tuple[str, str, str]] = []  # (task id, operator, family)
    per_task: dict[str, int] = {}
    for t in tasks:
        ms = mutants(t["reference"], family=None)
        per_task[t["id"]] = len(ms)
        for m in ms:
            jobs.append((m.source, t["tests"]))
            owners.append((t["id"], m.operators[0], m.family))
    t0, c0 = time.perf_counter(), time.process_time()
    results = execute_many(jobs, LIMITS, workers=workers)
    wall, caller_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    survivors: list[str] = []
    sandbox_cpu = 0.0
    run_walls: list[float] = []
    timeouts = 0
    for (tid, op, fam), r in zip(owners, results, strict=True):
        if r.status is RunStatus.SANDBOX_ERROR:
            raise RuntimeError(f"the sandbox failed on a mutant of {tid}: {r.error}")
        vis, held, first = _killed(r)
        sandbox_cpu += r.cpu_time_s
        run_walls.append(r.wall_time_s)
        timeouts += r.status is RunStatus.TIMEOUT
        for key in (op, f"family:{fam}"):
            row = rows[key]
            row["mutants"] += 1
            row["killed_visible"] += vis
            row["killed_held_out"] += held
            row["killed"] += vis or held
            row["killed_first_test"] += first
        if not (vis or held):
            survivors.append(f"{tid} {op}")
    counts = list(per_task.values())
    n = len(jobs)
    return {
        "tasks": len(tasks),
        "mutants": n,
        "per_task": {
            "median": statistics.median(counts),
            "max": max(counts),
            "tasks_without": sum(c == 0 for c in counts),
        },
        "rows": {
            k: {**v, "killed_share": v["killed"] / v["mutants"]}
            for k, v in sorted(rows.items(), key=lambda kv: (kv[0].startswith("family:"), kv[0]))
        },
        "killed_share": sum(rows[f"family:{f}"]["killed"] for f in ("train", "hidden")) / max(n, 1),
        "first_test_killed_share": sum(rows[f"family:{f}"]["killed_first_test"] for f in ("train", "hidden"))
        / max(n, 1),
        "survivors": survivors,
        "timeouts": timeouts,
        "run_wall_ms_p50": 1000 * statistics.median(run_walls) if run_walls else 0.0,
        "run_wall_ms_p95": 1000 * sorted(run_walls)[int(0.95 * (len(run_walls) - 1))] if run_walls else 0.0,
        "wall_ms_per_mutant": 1000 * wall / max(n, 1),
        "run_cpu_ms_per_mutant": 1000 * sandbox_cpu / max(n, 1),
        "caller_cpu_ms_per_mutant": 1000 * caller_cpu / max(n, 1),
        "workers": workers,
    }


def report(r: dict[str, Any]) -> None:
    print(f"{r['tasks']} tasks, {r['mutants']} first-order mutants (both families), sandbox x{r['workers']}")
    pt = r["per_task"]
    print(f"mutants per task: median {pt['median']}, max {pt['max']}, tasks with none {pt['tasks_without']}")
    print(f"\n{'operator':<22}{'mutants':>8}{'visible':>9}{'held-out':>10}{'either':>8}{'share':>8}{'1st test':>10}")
    for k, v in r["rows"].items():
        print(
            f"{k:<22}{v['mutants']:>8}{v['killed_visible']:>9}{v['killed_held_out']:>10}{v['killed']:>8}"
            f"{v['killed_share']:>8.3f}{v['killed_first_test'] / v['mutants']:>10.3f}"
        )
    print(
        f"\nkilled by the gold tests: {r['killed_share']:.3f} of {r['mutants']}; by the first visible test alone "
        f"(baseline): {r['first_test_killed_share']:.3f}; issue 36's first count: {ISSUE_BASELINE['mutants']} "
        f"mutants, {ISSUE_BASELINE['killed_share']:.3f} killed ({ISSUE_BASELINE['source']})"
    )
    print(f"survivors (presumed equivalent or untested): {len(r['survivors'])}")
    print(
        f"a mutant's run: {r['run_wall_ms_p50']:.1f} ms wall p50, {r['run_wall_ms_p95']:.1f} p95; "
        f"{r['timeouts']} ran into the {LIMITS.timeout_s:g} s limit (a loop that no longer ends)"
    )
    print(
        f"per mutant, all in: {r['wall_ms_per_mutant']:.1f} ms wall, {r['run_cpu_ms_per_mutant']:.1f} ms CPU in the"
        f" run's processes, {r['caller_cpu_ms_per_mutant']:.1f} ms in this process"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help=f"the first {SMOKE_TASKS} tasks; writes nothing")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--tasks", type=Path, default=DATA, help="a task file of the python_functions schema")
    args = ap.parse_args(argv)
    tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    if args.smoke:
        tasks = tasks[:: max(len(tasks) // SMOKE_TASKS, 1)][:SMOKE_TASKS]
    try:
        r = measure(tasks, args.workers)
    except ReferenceFailed as e:
        print(f"mutation_yield: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    r["machine"] = {"cpu": cpu_name(), "kind": cpu_kind()}
    r["baseline"] = ISSUE_BASELINE
    report(r)
    if not (args.smoke or args.no_write or args.tasks != DATA):
        RESULTS.write_text(json.dumps(r, indent=1) + "\n")
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    print(json.dumps({k: v for k, v in r.items() if k not in ("rows", "survivors")}))


if __name__ == "__main__":
    main()
