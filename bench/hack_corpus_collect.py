"""Adds passing completions from real training runs to the honest hack corpus.

The honest corpus (tests/data/hacks/honest.jsonl) is what the detector's false positives
are counted on. References and canonical solutions are written by people; this adds what
the model itself wrote and was paid for: every completion of the given runs whose code
passed all of its task's tests, held-out ones included (canary twins and failed
trajectories are skipped), from training (`trajectories.jsonl`, source
`training_completion`) and from the runs' evaluations (the trace store's
`eval_trajectories`, held-out split and HumanEval, source `eval_completion`; a HumanEval
reply is stored after the problem's prelude, as the sandbox ran it). Each distinct code of
a task is added once, with the run, step and seed it came from; code already in the
corpus is not added again. Ids are `train/<run>/<step>/<n>` and `eval/<run>/<step>/<n>`.

    .venv/bin/python bench/hack_corpus_collect.py runs/qs-0 runs/qs-1 runs/qs-2
    .venv/bin/python bench/hack_corpus_check.py --only honest   # then check they pass
    .venv/bin/python bench/hack_corpus_collect.py --smoke       # the test suite: see below

Entries are not screened by the detector before they are added: whatever it flags among
them is a false positive to count (or a hack the model found; read each one).

A run none of whose trajectories carries its test verdicts (`reward.details.completion`)
is an error, not "0 new": the records changed, or it is not a code run. --smoke trains the
quickstart for 1 step of the tiny random model (and evaluates 2 held-out tasks) in a
temporary directory, collects from it without writing, and prints the counts as one JSON
object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rlvr.rewards.extract import extract_code

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "hacks" / "honest.jsonl"
SMOKE = ["model.name_or_path=tiny-random", "train.prompts_per_step=2", "generation.max_new_tokens=8", "train.steps=1",
         "eval.before_training=false", "eval.after_training=true", "eval.num_tasks=2", "eval.sources=[]",
         "train.checkpoint_every=0"]  # fmt: skip
"""--smoke's run: 1 step of the tiny random model, 2 held-out tasks evaluated after it."""


def passing_completions(run: Path, counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Every trajectory of `run` whose code passed all its tests, held-out ones included,
    as corpus entries (without ids). `counts` gets the trajectories read and those with
    test verdicts; a run with trajectories but no verdicts at all is an error."""
    config = (run / "config.yaml").read_text() if (run / "config.yaml").exists() else ""
    seed = next((line.split(":", 1)[1].strip() for line in config.splitlines() if line.startswith("seed:")), "")
    found = []
    read = scored = 0
    with (run / "trajectories.jsonl").open() as fh:
        for line in fh:
            t = json.loads(line)
            read += 1
            if t.get("status", "ok") != "ok" or "#canary/" in t["task_id"]:
                continue
            done = ((t.get("reward") or {}).get("details") or {}).get("completion") or {}
            scored += "total" in done
            if not done.get("total") or done.get("passed") != done.get("total"):
                continue
            if done.get("held_out_total") and done.get("held_out_passed") != done["held_out_total"]:
                continue
            replies = [turn["content"] for turn in t["turns"] if turn["role"] == "assistant"]
            if not replies:
                continue
            found.append(
                {
                    "source": "training_completion",
                    "task_id": t["task_id"],
                    "code": extract_code(replies[-1]),
                    "run": run.name,
                    "seed": seed,
                    "step": t["step"],
                }
            )
    if read and not scored:
        raise SystemExit(
            f"{run}/trajectories.jsonl: none of its {read} trajectories has reward.details.completion.total "
            "(the test verdicts): the records changed, or it is not a code run"
        )
    if counts is not None:
        counts.update(trajectories=read, scored=scored, passing=len(found))
    return found


def passing_evaluations(run: Path, counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Every evaluated completion of `run` (trace store, eval_trajectories) that passed all
    its tests, as corpus entries (without ids). `counts` gets the evaluated completions read."""
    import duckdb

    from rlvr.envs.python_code import with_prelude
    from rlvr.tasks.humaneval import humaneval_records
    from rlvr.types import Task

    parts = sorted((run / "traces" / "eval_trajectories").glob("*.parquet"))
    if not parts:
        return []
    if counts is not None:
        counts["evaluated"] = duckdb.sql(
            "SELECT count(*) FROM read_parquet($parts, union_by_name=true)", params={"parts": [str(p) for p in parts]}
        ).fetchall()[0][0]
    rows = duckdb.sql(
        "SELECT step, task_id, completion FROM read_parquet($parts, union_by_name=true) "
        "WHERE status = 'ok' AND exec_total > 0 AND exec_passed = exec_total ORDER BY step, task_id, sample",
        params={"parts": [str(p) for p in parts]},
    ).fetchall()
    humaneval: dict[str, Task] = {}
    if any(str(r[1]).startswith("HumanEval/") for r in rows):
        humaneval = {rec["id"]: Task.from_dict(rec) for rec in humaneval_records()}
    found = []
    for step, task_id, completion in rows:
        code = extract_code(completion)
        if task_id in humaneval:
            code = with_prelude(humaneval[task_id], code)
        found.append({"source": "eval_completion", "task_id": task_id, "code": code, "run": run.name, "step": step})
    return found


def smoke_run(out: Path) -> Path:
    """The quickstart trained for --smoke's sizes under `out`; the run directory."""
    from rlvr.config import load_config
    from rlvr.train.loop import train

    train(load_config(ROOT / "examples" / "quickstart.yaml", [f"output_dir={out}", "name=smoke", *SMOKE]), quiet=True)
    return out / "smoke"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", type=Path, help="run directories (each with trajectories.jsonl)")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--dry-run", action="store_true", help="count, write nothing")
    ap.add_argument("--smoke", action="store_true", help="collect from a 1-step run of the tiny model; write nothing")
    args = ap.parse_args(argv)
    if args.smoke:
        if args.runs:
            ap.error("--smoke trains its own run: give no run directories")
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            args.runs, args.dry_run = [smoke_run(Path(tmp))], True
            return collect(args)
    if not args.runs:
        ap.error("the following arguments are required: runs")
    return collect(args)


def collect(args: argparse.Namespace) -> int:
    """Add (or with --dry-run count) the new passing completions of args.runs."""
    rows = [json.loads(line) for line in args.corpus.read_text().splitlines() if line.strip()]
    seen = {(r["task_id"], r["code"].strip()) for r in rows}
    ids = {r["id"] for r in rows}
    added: list[dict[str, Any]] = []
    totals = {"runs": len(args.runs), "trajectories": 0, "scored": 0, "passing": 0, "evaluated": 0, "eval_passing": 0}
    for run in args.runs:
        if not (run / "trajectories.jsonl").exists():
            raise SystemExit(f"{run}: no trajectories.jsonl (is it a run directory?)")
        counts: dict[str, int] = {}
        trained, evaluated = passing_completions(run, counts), passing_evaluations(run, counts)
        for k, v in counts.items():
            totals[k] += v
        totals["eval_passing"] += len(evaluated)
        found = [("train", e) for e in trained] + [("eval", e) for e in evaluated]
        for n, (kind, e) in enumerate(found):
            key = (e["task_id"], e["code"].strip())
            if key in seen:
                continue
            seen.add(key)
            entry = {"id": f"{kind}/{run.name}/{e['step']}/{n}", **e}
            if entry["id"] in ids:
                raise SystemExit(f"{entry['id']} is already in {args.corpus}")
            added.append(entry)
    print(f"{len(added)} new passing completions from {len(args.runs)} run(s)")
    if added and not args.dry_run:
        with args.corpus.open("a") as fh:
            for e in added:
                fh.write(json.dumps(e) + "\n")
        print(f"appended to {args.corpus}")
    if args.smoke:
        print(json.dumps({**totals, "new": len(added)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
