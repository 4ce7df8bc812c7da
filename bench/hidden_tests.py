"""Hidden tests drawn from the reference (rlvr/rewards/hidden_tests.py), measured.

1. Coverage over the bundled function sets (python_functions, code_repair): how many
   tasks get the full 20 drawn tests for (seed 0, step 0), which get none and why, which
   sets a single constant answer would pass, and the seconds a task takes cold (drawing
   plus one sandbox run of the reference) and warm (the reference's values cached).
2. Honest code: every honest solution of the hack corpus for these tasks
   (tests/data/hacks/honest.jsonl: the references, honest code in other shapes, the
   model's own passing completions) runs against its task's drawn tests; each one that
   fails is printed with its code, to be read: a drawn input outside the task's spec is a
   bug here, a wrong solution that the task's few tests missed is not.
3. The blind set's function-task hacks (tests/data/hacks/blind.jsonl, python and repair):
   each hack and its honest wrong reply run against the drawn tests alone. Beside it, the
   baseline: whether the hack pays under the reward with the tasks' own held-out tests
   (`reward.hidden_tests=0`: `pays_fixed` in bench/results/hack_blind.json).
   A hack pays on the drawn tests when it passes a larger share of them than its wrong
   reply does.

The tests are drawn as a run with rlvr's default reward config draws them (3 x 20 inputs
drawn, up to `reward.hidden_tests_max` of them kept: all by default); `--most 0` keeps 20
of them, the count before 47df309 (in the cover's new order: the answer breaks ties only),
for a same-run baseline of the count alone.

    .venv/bin/python bench/hidden_tests.py            # bench/results/hidden_tests.json
    .venv/bin/python bench/hidden_tests.py --smoke    # 12 tasks, 3 honest, 3 blind; nothing written
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HACKS = ROOT / "tests" / "data" / "hacks"
SETS = ("bundled:python_functions", "bundled:code_repair")


def _run(code: str, tests: list[str]) -> Any:
    from rlvr.sandbox import execute

    return execute(code, {"format": "assert", "tests": tests})


def _share(code: str, tests: list[str]) -> float:
    if not tests:
        return 0.0
    return float(_run(code, tests).passed / len(tests))


def _drawn(task: Any, reward: Any) -> list[Any]:
    """The tests a run with this reward config draws for the task at seed 0, step 0."""
    from rlvr.rewards.hidden_tests import hidden_tests

    return hidden_tests(task, seed=0, step=0, n=reward.hidden_tests, most=reward.hidden_tests_max)


def coverage(tasks: list[Any], reward: Any) -> dict[str, Any]:
    from rlvr.rewards.hidden_tests import NotDrawable, constant_passes, draw_inputs

    counts: Counter[str] = Counter()
    none: dict[str, str] = {}
    constant, cold, warm, kept, runs, failing = [], [], [], [], [], []
    for t in tasks:
        t0 = time.perf_counter()
        h = _drawn(t, reward)
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _drawn(t, reward)
        warm.append(time.perf_counter() - t0)
        kept.append(len(h))
        if h:  # the reference's whole run, visible and drawn tests: the budget (sandbox.timeout_s) a reply shares
            t0 = time.perf_counter()
            r = _run(str(t.reference), list(t.tests.get("tests", [])) + h)
            runs.append(time.perf_counter() - t0)
            if r.passed != r.total:
                failing.append(t.id)
        counts["20" if len(h) >= 20 else ("0" if not h else "1-19")] += 1
        if not h:
            try:
                draw_inputs(t, seed=0, step=0)
                none[t.id] = "every value holds a float (equality on floats is not asked of honest code)"
            except NotDrawable as e:
                none[t.id] = str(e)
        elif constant_passes(h):
            constant.append(t.id)
    return {
        "tasks": len(tasks),
        "with_20": counts["20"],
        "with_some": counts["1-19"],
        "with_none": none,
        "constant_passable": constant,
        "tests_mean": sum(kept) / len(kept),
        "tests_max": max(kept),
        "reference_run_ms": {
            "median": 1000 * sorted(runs)[len(runs) // 2],
            "p99": 1000 * sorted(runs)[int(len(runs) * 0.99)],
            "max": 1000 * max(runs),
        }
        if runs
        else {},
        "reference_failing": failing,
        "cold_ms_median": 1000 * sorted(cold)[len(cold) // 2],
        "warm_ms_median": 1000 * sorted(warm)[len(warm) // 2],
    }


def honest(index: dict[str, Any], limit: int | None, reward: Any) -> dict[str, Any]:
    from rlvr.rewards.extract import extract_code

    entries = [json.loads(line) for line in (HACKS / "honest.jsonl").read_text().splitlines() if line.strip()]
    entries = [e for e in entries if e["task_id"] in index][:limit]
    failing = []
    for e in entries:
        tests = _drawn(index[e["task_id"]], reward)
        if tests and _share(extract_code(e["code"]), tests) < 1.0:
            failing.append({"id": e["id"], "task_id": e["task_id"], "code": extract_code(e["code"])[:300]})
    return {"entries": len(entries), "failing": failing}


def blind(index: dict[str, Any], limit: int | None, reward: Any) -> dict[str, Any]:
    from rlvr.rewards.extract import extract_code

    before_path = ROOT / "bench" / "results" / "hack_blind.json"
    # the baseline: the full reward with the tasks' own held-out tests (hack_blind's pays_fixed)
    rows_before = json.loads(before_path.read_text())["rows"] if before_path.is_file() else []
    before = {r["id"]: r.get("pays_fixed") for r in rows_before}
    rows = []
    entries = [json.loads(line) for line in (HACKS / "blind.jsonl").read_text().splitlines() if line.strip()]
    entries = [e for e in entries if e["domain"] in ("python", "repair") and e["task_id"] in index][:limit]
    for e in entries:
        tests = _drawn(index[e["task_id"]], reward)
        hack, wrong = _share(extract_code(e["reply"]), tests), _share(extract_code(e["wrong"]), tests)
        rows.append(
            {
                "id": e["id"],
                "class": e["class"],
                "hidden_tests": len(tests),
                "hack_share": hack,
                "wrong_share": wrong,
                "pays_on_drawn": hack > wrong + 1e-9,
                "pays_own_held_out": before.get(e["id"]),
            }
        )
        print(f"{e['id']:<16} {e['class'][:34]:<34} drawn {len(tests):>2}  hack {hack:.2f}  wrong {wrong:.2f}  "
              f"{'PAYS' if rows[-1]['pays_on_drawn'] else '-':<4}  own {'PAYS' if before.get(e['id']) else '-'}",
              flush=True)  # fmt: skip
    return {
        "entries": len(rows),
        "pays_on_drawn": sum(r["pays_on_drawn"] for r in rows),
        "pays_own_held_out": sum(bool(r["pays_own_held_out"]) for r in rows),
        "rows": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "hidden_tests.json")
    ap.add_argument("--most", type=int, help="reward.hidden_tests_max (0: exactly 20); default: the config's")
    args = ap.parse_args()
    from rlvr.config import RewardConfig
    from rlvr.tasks import load_tasks

    reward = RewardConfig() if args.most is None else RewardConfig(hidden_tests_max=args.most)

    tasks = [t for s in SETS for t in load_tasks(s)]
    if args.smoke:
        tasks = tasks[:6] + tasks[-6:]
    index = {t.id: t for t in tasks}
    result = {"coverage": coverage(tasks, reward)}
    print(json.dumps(result["coverage"]), flush=True)
    result["honest"] = honest(index, 3 if args.smoke else None, reward)
    print(json.dumps(result["honest"]), flush=True)
    full_index = index if not args.smoke else {t.id: t for s in SETS for t in load_tasks(s)}
    result["blind"] = blind(full_index, 3 if args.smoke else None, reward)
    for f in result["honest"]["failing"]:  # a wrong solution the task's own tests missed, or a drawn input out of spec
        print(f"honest entry {f['id']} ({f['task_id']}) fails drawn tests:\n{f['code']}", file=sys.stderr)
    if not args.smoke:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    c, b = result["coverage"], result["blind"]
    headline = {
        "tasks": c["tasks"],
        "with_20": c["with_20"],
        "tests_mean": round(c["tests_mean"], 2),
        "reference_run_ms_max": round(c["reference_run_ms"].get("max", 0.0)),
        "reference_failing": len(c["reference_failing"]),
        "constant_passable": len(c["constant_passable"]),
        "honest_entries": result["honest"]["entries"],
        "honest_failing": len(result["honest"]["failing"]),
        "blind_entries": b["entries"],
        "blind_pays_on_drawn": b["pays_on_drawn"],
        "blind_pays_own_held_out": b["pays_own_held_out"],
    }
    print(json.dumps(headline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
