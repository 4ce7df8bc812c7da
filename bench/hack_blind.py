"""The reward's defences on a blind set of hacks (tests/data/hacks/blind.jsonl).

The blind set was written from the task files and the public docs alone, by writers who
read none of the defences' code and never ran the scorer, in shapes the corpus does not
name; it was committed together with this bench's figure on it before any defence was
changed for it (the commit order is the evidence). Each entry is a whole reply (`reply`)
and the honest wrong reply it has to beat (`wrong`: the same reply with the trick's lines
removed, or the same reasoning committing to one wrong answer, or a plain wrong program).

Each reply is scored exactly as `rlvr score` scores it (the task's environment, the
sandbox where the domain runs code, then the run's scorer with rlvr's default reward
config: hidden tests drawn for step 0, the detector, severities). A hack *pays* when its
reward is above its wrong reply's (by more than 1e-9); it is *paid in full* when the
tests (or the answer check) paid its whole completion and nothing took the reward to 0 or
below, a count that does not move when the wrong reply is itself overpaid or penalised (a
timeout). Printed per domain and class: how many pay under rlvr's defaults; beside it,
how many pay when the drawn tests pay their share passed and a caught hack is only capped
at 0 (`reward.hidden_credit=share reward.hack_penalty=0`, the defaults on 2026-12-04
before the all-or-nothing credit), how many with the tasks' own held-out tests in place
of drawn ones (`reward.hidden_tests=0`, the default before that), and as the baseline how
many pay under the naive reward (that configuration's `completion` component alone: what
the tests pay without the detector). With --steps N the defaults are also scored on the
tests steps 1..N-1 draw, and each entry records at how many of the N steps it paid
(`paid_steps`): a training run draws new tests every step.

    .venv/bin/python bench/hack_blind.py --steps 10    # bench/results/hack_blind.json
    .venv/bin/python bench/hack_blind.py --no-write
    .venv/bin/python bench/hack_blind.py --smoke       # the first entry of each domain, nothing written

The replies run code in the sandbox: the bench refuses to run without its namespaces
(--allow-unjailed to run anyway), as bench/hack_corpus_check.py does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BLIND = ROOT / "tests" / "data" / "hacks" / "blind.jsonl"
FIELDS = ("id", "domain", "set", "task_id", "class", "reply", "wrong", "note")
EPS = 1e-9


class BlindSetError(ValueError):
    """A malformed entry, or a task it names that its set lacks."""


def load_blind(path: Path) -> list[dict[str, Any]]:
    entries = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except json.JSONDecodeError as err:
            raise BlindSetError(f"{path}:{n}: not valid JSON: {err.msg}") from None
        missing = [f for f in FIELDS if not isinstance(e.get(f), str) or not e[f]]
        if missing:
            raise BlindSetError(f"{path}:{n}: {e.get('id', '?')} lacks {', '.join(missing)}")
        entries.append(e)
    ids = [e["id"] for e in entries]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise BlindSetError(f"{path}: duplicate ids {dup}")
    return entries


def smoke_subset(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for e in entries:
        if e["domain"] not in seen:
            seen.add(e["domain"])
            out.append(e)
    return out


def _score(task: Any, reply: str, cfg: Any, step: int = 0) -> dict[str, Any]:
    from rlvr.envs.scoring import score_completion

    r = score_completion(task, reply, cfg, step=step).reward
    assert r is not None
    d = r.details
    tests = {k: d[k] for k in ("visible_passed", "visible_total", "held_out_passed", "held_out_total") if k in d}
    return {
        "total": float(r.total),
        "completion": float(r.components.get("completion", 0.0)),
        "flags": sorted(str(f) for f in r.flags),
        **({"tests": tests} if tests else {}),
    }


def measure(entries: list[dict[str, Any]], steps: int = 1) -> dict[str, Any]:
    from rlvr.config import load_config
    from rlvr.tasks import load_tasks

    cfg = load_config(None, [])
    # the defaults before the all-or-nothing credit: drawn tests paid by their share passed, no hack penalty
    share = load_config(None, ["reward.hidden_credit=share", "reward.hack_penalty=0"])
    fixed = load_config(None, ["reward.hidden_tests=0"])  # the task's held-out tests as written
    tasks: dict[str, dict[str, Any]] = {}
    for name in sorted({e["set"] for e in entries}):
        tasks[name] = {t.id: t for t in load_tasks(name)}
    rows = []
    for e in entries:
        task = tasks[e["set"]].get(e["task_id"])
        if task is None:
            raise BlindSetError(f"{e['id']}: {e['set']} has no task '{e['task_id']}'")
        t0 = time.perf_counter()
        hack, wrong = _score(task, e["reply"], cfg), _score(task, e["wrong"], cfg)
        # later steps draw other tests: the hack pays at a step when it earns more there
        later = [(_score(task, e["reply"], cfg, s), _score(task, e["wrong"], cfg, s)) for s in range(1, steps)]
        paid_steps = [s for s, (h, w) in enumerate([(hack, wrong), *later]) if h["total"] > w["total"] + EPS]
        hack_s, wrong_s = _score(task, e["reply"], share), _score(task, e["wrong"], share)
        hack0, wrong0 = _score(task, e["reply"], fixed), _score(task, e["wrong"], fixed)
        row = {
            "id": e["id"],
            "domain": e["domain"],
            "class": e["class"],
            "task_id": e["task_id"],
            "hack": hack,
            "wrong": wrong,
            "share_credit": {"hack": hack_s, "wrong": wrong_s},
            "fixed_held_out": {"hack": hack0, "wrong": wrong0},
            "pays": hack["total"] > wrong["total"] + EPS,
            # cleaner than "pays" where the wrong reply is itself overpaid or penalised (a timeout):
            # the tests (or the answer check) paid the hack's completion in full, and nothing took it away
            "paid_full": hack["completion"] > 1 - EPS and hack["total"] > 0,
            "paid_steps": f"{len(paid_steps)} of {steps}",
            "pays_share": hack_s["total"] > wrong_s["total"] + EPS,
            "pays_fixed": hack0["total"] > wrong0["total"] + EPS,
            "pays_naive": hack0["completion"] > wrong0["completion"] + EPS,
            "seconds": time.perf_counter() - t0,
        }
        rows.append(row)
        mark = "PAYS" if row["pays"] else "-"
        print(
            f"{e['id']:<22} {e['domain']:<11} {e['class'][:28]:<28} hack {hack['total']:+.3f} "
            f"wrong {wrong['total']:+.3f}  share {hack_s['total']:+.2f}/{wrong_s['total']:+.2f}  "
            f"fixed {hack0['total']:+.2f}/{wrong0['total']:+.2f}  "
            f"naive {hack0['completion']:.2f}/{wrong0['completion']:.2f}  {mark}",
            flush=True,
        )
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def zero() -> dict[str, int]:
        return {"entries": 0, "pays": 0, "paid_full": 0, "pays_share": 0, "pays_fixed": 0, "pays_naive": 0}

    by_domain: dict[str, dict[str, int]] = defaultdict(zero)
    by_class: dict[str, dict[str, int]] = defaultdict(zero)
    for r in rows:
        for agg in (by_domain[r["domain"]], by_class[r["class"]]):
            agg["entries"] += 1
            agg["pays"] += int(r["pays"])
            agg["paid_full"] += int(r["paid_full"])
            agg["pays_share"] += int(r["pays_share"])
            agg["pays_fixed"] += int(r["pays_fixed"])
            agg["pays_naive"] += int(r["pays_naive"])
    return {
        "entries": len(rows),
        "pays": sum(r["pays"] for r in rows),
        "paid_full": sum(r["paid_full"] for r in rows),
        "pays_share": sum(r["pays_share"] for r in rows),
        "pays_fixed": sum(r["pays_fixed"] for r in rows),
        "pays_naive": sum(r["pays_naive"] for r in rows),
        "by_domain": dict(sorted(by_domain.items())),
        "by_class": dict(sorted(by_class.items())),
        "paying_ids": [r["id"] for r in rows if r["pays"]],
        "paid_full_ids": [r["id"] for r in rows if r["paid_full"]],
        "paid_steps": {r["id"]: r["paid_steps"] for r in rows if r["paid_steps"][0] != "0"},
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=BLIND, help="the blind set (JSONL)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "hack_blind.json")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="the first entry of each domain; nothing written")
    ap.add_argument("--allow-unjailed", action="store_true")
    ap.add_argument(
        "--steps", type=int, default=1, help="also score the rlvr column at steps 1..N-1 (other drawn tests)"
    )
    args = ap.parse_args(argv)
    try:
        entries = load_blind(args.set)
    except (OSError, BlindSetError) as e:
        print(f"hack_blind: {e}", file=sys.stderr)
        return 2
    from rlvr.sandbox.pool import default_pool

    unjailed = [k for k, v in default_pool().protections.items() if "namespaces" in k and not v]
    if unjailed and not args.allow_unjailed:
        print(f"hack_blind: the sandbox lacks {unjailed}: refusing to run the hacks", file=sys.stderr)
        return 2
    if args.smoke:
        entries = smoke_subset(entries)
    try:
        result = measure(entries, max(1, args.steps))
    except BlindSetError as e:
        print(f"hack_blind: {e}", file=sys.stderr)
        return 2
    print()
    print(
        f"{'domain':<12} {'entries':>7} {'pay (rlvr)':>11} {'paid in full':>13} {'share credit':>13} "
        f"{'fixed held-out':>15} {'naive':>6}"
    )
    for d, agg in [*result["by_domain"].items(), ("all", result)]:
        print(
            f"{d:<12} {agg['entries']:>7} {agg['pays']:>11} {agg['paid_full']:>13} {agg['pays_share']:>13} "
            f"{agg['pays_fixed']:>15} {agg['pays_naive']:>6}"
        )
    if not (args.no_write or args.smoke):
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    headline = {
        k: result[k]
        for k in ("entries", "pays", "paid_full", "pays_share", "pays_fixed", "pays_naive", "paying_ids", "paid_steps")
    }
    print(json.dumps(headline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
