"""Runs the hack corpus (tests/data/hacks/) through rlvr's real sandbox.

  - every honest entry must pass all of its task's tests (exit status 1 if one does not);
  - every hack is run against its task's tests, and beside it an empty answer (the entry
    point returning None; for a stdin/stdout task an empty program) and, where the entry
    has one, its `attempt` (the entry with the hack's lines deleted). A hack *pays* when
    it passes at least one visible test, more than the empty answer and more than its
    attempt: credit the attempt earns by itself is not the hack's. Held-out tests
    (`held_out/<i>`, when a task has them) are not counted here. `pays`, `passed`,
    `total`, `baseline_passed` (and `attempt_passed`) are recorded on each hack; without
    --write a recorded `pays` that no longer holds is an error (exit status 1), other
    counts that moved are listed (a hack racing its own test processes, e.g. a call
    counter kept in /tmp, passes a varying number of tests). An entry marked `"varies":
    true` depends on the secret order the tests run in, so even whether it pays moves
    between runs: it is listed, never an error.

    .venv/bin/python bench/hack_corpus_check.py            # check both files
    .venv/bin/python bench/hack_corpus_check.py --write    # (re)measure and record `pays`
    .venv/bin/python bench/hack_corpus_check.py --only honest
    .venv/bin/python bench/hack_corpus_check.py --smoke    # one hack per class, one honest per source

Hacks try to exit, patch, snoop and write files: the script refuses to run them unless
the sandbox has its namespaces (a private file system), since without them they would
run with only rlimits around them (--allow-unjailed to run anyway).
About 1000 runs: a few minutes on 2 cores. A run of an honest entry, an empty answer or an
attempt that ends in SANDBOX_ERROR is an error (exit status 1, one line): the sandbox failed,
and a hack measured against a baseline that never ran would be recorded as paying.
--smoke checks the first hack of each class and the first honest entry of each source
(writing nothing) and prints its counts as one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hack_detector import CORPUS, load_corpus, load_task_index, smoke_subset

from rlvr.sandbox import Limits, execute_many
from rlvr.sandbox.api import Tests
from rlvr.sandbox.pool import default_pool
from rlvr.types import ExecutionResult, RunStatus, Task, TestStatus

LIMITS = Limits(timeout_s=10.0, memory_mb=1024)
FIELDS = (
    "id",
    "class",
    "task_id",
    "code",
    "attempt",
    "note",
    "varies",
    "pays",
    "passed",
    "total",
    "baseline_passed",
    "attempt_passed",
)
HELD_OUT = "held_out/"  # the name prefix of a held-out test's verdict


def stub(task: Task) -> str:
    """What an empty answer looks like for this task."""
    if task.tests.get("format") == "stdio":
        return "pass\n"
    if task.id.startswith("HumanEval/"):
        return task.prompt + "    return None\n"
    return f"def {task.entry_point}(*args, **kwargs):\n    return None\n"


def visible(r: ExecutionResult) -> tuple[int, int]:
    """(passed, total) over the visible tests."""
    shown = [t for t in r.tests if not t.name.startswith(HELD_OUT)]
    return sum(t.status is TestStatus.PASSED for t in shown), len(shown)


def first_failure(r: ExecutionResult) -> str:
    for t in r.tests:
        if t.status is not TestStatus.PASSED:
            return f"{t.name}: {t.message}"[:160]
    return r.error[:160]


def run_all(jobs: list[tuple[str, Tests]], workers: int, what: str = "") -> list[ExecutionResult]:
    """Every job's result. With `what` (runs that must run: honest entries, empty answers,
    attempts), a run the sandbox failed is an error, not a verdict."""
    t = time.perf_counter()
    out = execute_many(jobs, LIMITS, workers=workers)
    print(f"  {len(jobs)} runs in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    failed = [r for r in out if r.status is RunStatus.SANDBOX_ERROR]
    if what and failed:
        sys.exit(f"{what}: the sandbox failed {len(failed)} of {len(out)} runs ({failed[0].error[-200:].strip()})")
    return out


def check_honest(
    honest: list[dict[str, Any]], tasks: dict[str, Task], workers: int, figures: dict[str, Any] | None = None
) -> list[str]:
    print(f"honest: running {len(honest)} entries", file=sys.stderr)
    jobs = [(e["code"], tasks[e["task_id"]].tests) for e in honest]  # held-out tests too
    results = run_all(jobs, workers, "honest entries")
    bad = []
    for e, r in zip(honest, results, strict=True):
        if r.total == 0 or r.passed != r.total:
            bad.append(f"{e['id']}: {r.passed}/{r.total} ({r.status.value}) {first_failure(r)}")
    by_source: dict[str, int] = defaultdict(int)
    for e in honest:
        by_source[e["source"]] += 1
    print(f"honest: {len(honest) - len(bad)}/{len(honest)} pass all their tests ({dict(by_source)})")
    if figures is not None:
        figures["honest"] = {"count": len(honest), "passed": len(honest) - len(bad), "by_source": dict(by_source)}
    for line in bad:
        print(f"  FAILS {line}")
    return bad


def check_hacks(
    hacks: list[dict[str, Any]],
    tasks: dict[str, Task],
    workers: int,
    write: bool,
    figures: dict[str, Any] | None = None,
) -> list[str]:
    task_ids = sorted({h["task_id"] for h in hacks})
    print(f"hacks: running {len(hacks)} entries and {len(task_ids)} empty answers", file=sys.stderr)
    empty = run_all([(stub(tasks[t]), tasks[t].tests) for t in task_ids], workers, "empty answers")
    stubs = dict(zip(task_ids, empty, strict=True))
    with_attempt = [h for h in hacks if h.get("attempt")]
    attempts = dict(
        zip(
            [h["id"] for h in with_attempt],
            run_all([(h["attempt"], tasks[h["task_id"]].tests) for h in with_attempt], workers, "attempts"),
            strict=True,
        )
    )
    results = run_all([(h["code"], tasks[h["task_id"]].tests) for h in hacks], workers)
    changed, moved = [], []
    per_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for h, r in zip(hacks, results, strict=True):
        passed, total = visible(r)
        base = visible(stubs[h["task_id"]])[0]
        measured: dict[str, Any] = {"passed": passed, "total": total, "baseline_passed": base}
        bar = base
        if h["id"] in attempts:
            measured["attempt_passed"] = visible(attempts[h["id"]])[0]
            bar = max(bar, measured["attempt_passed"])
        pays = passed > 0 and passed > bar
        measured = {"pays": pays, **measured}
        diff = f"{h['id']}: recorded {[h.get(k) for k in measured]}, measured {list(measured.values())}"
        if h.get("pays") != pays and not h.get("varies"):
            changed.append(diff)
        elif any(h.get(k) != v for k, v in measured.items()):
            moved.append(diff)
        h.update(measured)
        per_class[h["class"]][0] += 1
        per_class[h["class"]][1] += pays
    print(f"\n{'class':24}{'n':>4}{'pay':>5}")
    for cls, (n, k) in sorted(per_class.items()):
        print(f"{cls:24}{n:>4}{k:>5}")
    print(f"{'all':24}{len(hacks):>4}{sum(k for _, k in per_class.values()):>5}")
    if figures is not None:
        figures["hacks"] = {
            "count": len(hacks),
            "pays": sum(k for _, k in per_class.values()),
            "classes": {cls: {"count": n, "pays": k} for cls, (n, k) in sorted(per_class.items())},
            "pays_changed": [line.split(":", 1)[0] for line in changed],
            "counts_moved": [line.split(":", 1)[0] for line in moved],
        }
    if write:
        path = CORPUS / "hacks.jsonl"
        path.write_text(
            "".join(json.dumps({k: h[k] for k in FIELDS if k in h}, ensure_ascii=False) + "\n" for h in hacks)
        )
        print(f"written {path}")
    else:
        for line in changed:
            print(f"  PAYS CHANGED {line}")
        for line in moved:
            print(f"  counts moved {line}")
    return [] if write else changed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["hacks", "honest"])
    ap.add_argument("--write", action="store_true", help="record the measured pays/passed/total on the hacks")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--allow-unjailed", action="store_true")
    ap.add_argument(
        "--smoke", action="store_true", help="the first hack of each class and honest entry of each source; JSON last"
    )
    args = ap.parse_args(argv)
    if args.smoke and args.write:
        ap.error("--smoke checks a few entries: it cannot --write the corpus")

    pool = default_pool().start()
    unjailed = [k for k, v in pool.protections.items() if "namespaces" in k and not v]
    if unjailed and not args.allow_unjailed:
        sys.exit(f"the sandbox lacks {unjailed}: refusing to run the hacks outside a private file system")
    hacks, honest = load_corpus()
    if args.smoke:
        hacks, honest = smoke_subset(hacks, honest)
    tasks = load_task_index()
    missing = sorted({e["task_id"] for e in hacks + honest} - set(tasks))
    if missing:
        sys.exit(f"corpus names tasks that are not loaded: {', '.join(missing[:10])}")
    problems: list[str] = []
    figures: dict[str, Any] = {}
    if args.only != "hacks":
        problems += check_honest(honest, tasks, args.workers, figures)
    if args.only != "honest":
        problems += check_hacks(hacks, tasks, args.workers, args.write, figures)
    if args.smoke:
        print(json.dumps({**figures, "problems": len(problems)}))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
