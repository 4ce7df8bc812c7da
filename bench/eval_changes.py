"""Which held-out tasks a run won or lost between its evaluation before and after
training, read from the run's trace store: each changed task's two replies, how each
ended and its tokens, and what the guarded terms (learned, judge) paid it.

Made for the feedback demonstration (bench/feedback_demo.py --work DIR keeps the runs):
a pass@1 that falls by a task says nothing of why until the lost reply is read.

    python bench/eval_changes.py RUN [RUN ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def changes(run: Path) -> dict:
    """The run's held-out tasks that changed between 'before' and 'after' (main suite)."""
    from rlvr.trace.parquet import read_table

    store = str(run / "traces")
    steps = {e["phase"]: e["step"] for e in read_table(store, "evals").to_pylist() if not e["suite"]}
    if set(steps) != {"before", "after"}:
        raise SystemExit(f"eval_changes: {run}: needs an evaluation before and after training, has {sorted(steps)}")
    rows = read_table(store, "eval_trajectories").to_pylist()
    at = {ph: {r["task_id"]: r for r in rows if r["step"] == st} for ph, st in steps.items()}

    def solved(r: dict) -> bool:
        return dict(r.get("reward_components") or []).get("completion", 0.0) >= 1.0  # a map: (key, value) pairs

    def reply(r: dict) -> dict:
        details = json.loads(r.get("reward_details") or "{}")
        return {"completion": r["completion"], "finish_reason": r["finish_reason"], "tokens": r["completion_tokens"],
                "solved": solved(r), "guarded": details.get("guarded", {})}  # fmt: skip

    before, after = at["before"], at["after"]
    changed = [t for t in sorted(before) if t in after and solved(before[t]) != solved(after[t])]
    mean = lambda rs: sum(r["completion_tokens"] for r in rs) / max(1, len(rs))  # noqa: E731
    return {
        "run": str(run), "tasks": len(before),
        "solved_before": sum(map(solved, before.values())), "solved_after": sum(map(solved, after.values())),
        "mean_tokens_before": mean(before.values()), "mean_tokens_after": mean(after.values()),
        "length_cut_before": sum(r["finish_reason"] == "length" for r in before.values()),
        "length_cut_after": sum(r["finish_reason"] == "length" for r in after.values()),
        "lost": {t: {"before": reply(before[t]), "after": reply(after[t])} for t in changed if solved(before[t])},
        "won": {t: {"before": reply(before[t]), "after": reply(after[t])} for t in changed if solved(after[t])},
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories (with traces/)")
    ap.add_argument("--out", help="also write the result as JSON here")
    a = ap.parse_args()
    missing = [r for r in a.runs if not (Path(r) / "traces").is_dir()]
    if missing:
        print(f"eval_changes: no trace store in {', '.join(missing)}", file=sys.stderr)
        return 2
    result = [changes(Path(r)) for r in a.runs]
    for c in result:
        print(f"{c['run']}: solved {c['solved_before']} -> {c['solved_after']} of {c['tasks']}; mean tokens "
              f"{c['mean_tokens_before']:.1f} -> {c['mean_tokens_after']:.1f}; cut at the limit "
              f"{c['length_cut_before']} -> {c['length_cut_after']}")  # fmt: skip
        for kind in ("lost", "won"):
            for t, d in c[kind].items():
                reply = d["after"]["completion"].replace("\n", "\n    ")
                print(f"  {kind} {t} ({d['after']['finish_reason']}, {d['after']['tokens']} tokens; paid by the "
                      f"guarded terms: {d['after']['guarded']})\n    {reply}")  # fmt: skip
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
