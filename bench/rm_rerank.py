"""Best-of-8 reranking by a reward model trained on a run's own groups: does it pick a
passing reply more often than chance? (issue 35's "best-of-8 reranking pass@1 by the RM
vs random vs oracle")

    1. the quickstart (rlvr train, evaluations off): its groups are the feedback
    2. rlvr feedback import --from-run: every pair of replies whose rewards differ
       (a hack-flagged reply never preferred)
    3. rlvr rm train on those pairs (the embedded model's backbone, split by task)
    4. on the quickstart's held-out tasks, 8 replies each from the embedded model
       (temperature 1, scored by the tests as a training step scores them), and the
       reply picked by: the reward model (its highest score), chance (the expected
       pass rate of one reply drawn at random), the longest reply (a length-only
       reranker), and an oracle (a task passes when any of its 8 does)

    .venv/bin/python bench/rm_rerank.py
    .venv/bin/python bench/rm_rerank.py --smoke       # tiny models, nothing recorded (the test suite)
    .venv/bin/python bench/rm_rerank.py --report bench/results/rm_rerank.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "examples/quickstart.yaml")
SAMPLES = 8
SMOKE = ["model.name_or_path=tiny-random", "generation.max_new_tokens=8", "train.steps=2", "train.prompts_per_step=2",
         "algo.group_size=2"]  # fmt: skip


def _rlvr(*args: str, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run([sys.executable, "-m", "rlvr.cli", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in ok:
        raise SystemExit(f"rlvr {args[0]}: exit {done.returncode}: {done.stderr.strip().splitlines()[-3:]}")
    return done.stdout


def reward_model(out: Path, smoke: bool) -> tuple[Path, dict, str]:
    """Steps 1-3: the run, its pairs, the reward model; (its directory, its metadata, the import line)."""
    extra = SMOKE if smoke else []
    _rlvr("train", QUICK, "--plain", f"output_dir={out}", "name=src", "eval.before_training=false",
          "eval.after_training=false", *extra)  # fmt: skip
    line = _rlvr("feedback", "import", "--from-run", str(out / "src"), "--store", str(out / "fb")).strip()
    if smoke:  # a tiny random policy's groups tie: add the docstring rule's pairs so the plumbing runs
        sys.path.insert(0, str(ROOT / "bench"))
        from docstring_feedback import bundled_python, records

        (out / "rule.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records(bundled_python()[:16])))
        _rlvr("feedback", "import", str(out / "rule.jsonl"), "--store", str(out / "fb"))
    rm_keys = ["rm.split_by=task", "rm.held_out=0.1", "rm.batch_size=8", "rm.micro_batch_size=8", "rm.lr=2e-5",
               "rm.epochs=2"]  # fmt: skip
    small = ["model.name_or_path=tiny-random", "rm.max_steps=2"] if smoke else []
    _rlvr("rm", "train", "--config", QUICK, f"output_dir={out}", "name=rm", "--quiet", f"rm.feedback=[{out / 'fb'}]",
          *rm_keys, *small)  # fmt: skip
    path = out / "rm" / "reward_model"
    meta = json.loads((path / "rlvr_reward_model.json").read_text())
    cases = "4" if smoke else "24"  # exit 1 below: a check failed, which is a finding, not an error
    audit = _rlvr(
        "rm", "check", str(path), "--tasks", "bundled:python_functions", "--cases", cases, "--json", ok=(0, 1)
    )
    meta["audit"] = json.loads(audit)
    return path, meta, line


def sample_and_pick(rm_dir: Path, smoke: bool) -> list[dict]:
    """Step 4: per held-out task, its 8 replies' verdicts and the pickers' choices."""
    from rlvr.config import load_config
    from rlvr.feedback.rm import RewardModel
    from rlvr.feedback.terms import conversation
    from rlvr.rewards.hidden_tests import for_step as drawn_for_step
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.factory import make_engine
    from rlvr.rollout.models import load_policy
    from rlvr.rollout.runner import episode_settings, run_episodes
    from rlvr.tasks import load_tasks, split_tasks
    from rlvr.trace.store import solved

    cfg = load_config(QUICK, SMOKE[:2] if smoke else [])
    _, held = split_tasks(load_tasks(cfg.tasks.source), cfg.tasks.eval_fraction)
    held = held[:3] if smoke else held
    tasks = [drawn_for_step(t, cfg.reward, seed=cfg.seed, step=0) for t in held]
    model, tok = load_policy(cfg.model.name_or_path, seed=cfg.seed)
    g = cfg.generation
    params = SamplingParams(max_new_tokens=g.max_new_tokens, temperature=1.0, top_p=1.0, stop=tuple(g.stop), seed=7)
    trajs = run_episodes(tasks, engine=make_engine(cfg, model, tok), tokenizer=tok,
                         episodes=episode_settings(cfg, group_size=SAMPLES), params=params)  # fmt: skip
    del model
    rm = RewardModel.load(rm_dir)
    convs = [conversation(t) for t in trajs]
    scores = rm.score([c[0] if c else () for c in convs], [c[1] if c else "" for c in convs])
    rows = []
    for i, task in enumerate(tasks):
        group = trajs[i * SAMPLES : (i + 1) * SAMPLES]
        s = scores[i * SAMPLES : (i + 1) * SAMPLES]
        passed = [solved(t) for t in group]
        best = max(range(SAMPLES), key=lambda k: (s[k] if s[k] is not None else float("-inf"), -k))
        chars = [len(t.completion_text) for t in group]
        longest = max(range(SAMPLES), key=lambda k: (chars[k], -k))
        shortest = min(range(SAMPLES), key=lambda k: (chars[k], k))
        rows.append({"task_id": task.id, "passed": passed, "rm_pick": best, "longest_pick": longest,
                     "shortest_pick": shortest, "chars": chars, "scores": list(s)})  # fmt: skip
    return rows


def report(rows: list[dict], meta: dict | None) -> dict:
    if not rows:
        raise SystemExit("no tasks: there is no figure")
    n = len(rows)
    figures = {
        "tasks": n,
        "random": sum(sum(r["passed"]) / len(r["passed"]) for r in rows) / n,
        "reward_model": sum(r["passed"][r["rm_pick"]] for r in rows) / n,
        "longest": sum(r["passed"][r["longest_pick"]] for r in rows) / n,
        "shortest": sum(r["passed"][r["shortest_pick"]] for r in rows) / n
        if all("shortest_pick" in r for r in rows)
        else None,
        "oracle": sum(any(r["passed"]) for r in rows) / n,
    }
    if meta:
        figures["rm_held_out_pair_accuracy"] = meta["held_out"].get("pair_accuracy")
        figures["rm_length_baseline"] = meta["length_baseline_accuracy"]
        print(f"reward model: {meta['examples']}")
        acc, length = figures["rm_held_out_pair_accuracy"], figures["rm_length_baseline"]
        print(f"  held-out pair accuracy {acc}, length-only {length}")
        if "audit" in meta:
            figures["rm_audit_passed"] = meta["audit"]["passed"]
            print(f"  rlvr rm check: {'passed' if meta['audit']['passed'] else 'FAILED'}: {_audit_line(meta['audit'])}")
    print(f"\nbest-of-{SAMPLES} on {n} held-out tasks: pass@1 of the reply picked by")
    for k in ("random", "longest", "shortest", "reward_model", "oracle"):
        if figures[k] is not None:
            print(f"  {k:<13} {figures[k]:.3f}")
    return figures


def _audit_line(audit: dict) -> str:
    worst = max(audit["probes"].items(), key=lambda kv: kv[1], default=("none", 0.0))
    agree = audit["agreement"]
    problems = f"; {'; '.join(audit['problems'])}" if audit["problems"] else ""
    return (f"worst probe {worst[0]} above the real answer in {worst[1]:.0%} of {audit['cases']} cases; "
            f"length rise {audit['length_rise_std']:.2f} std; agreement with the tests "
            f"{'n/a' if agree is None else f'{agree:.2f}'}{problems}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--report", metavar="RESULTS")
    ap.add_argument("--out", default=str(ROOT / "bench/results/rm_rerank.json"))
    ap.add_argument("--reuse", type=Path, metavar="DIR", help="the run and reward model an earlier --keep DIR left")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="keep the run, its feedback and reward model in DIR")
    a = ap.parse_args()
    if a.report:
        saved = json.loads(Path(a.report).read_text())
        print(json.dumps(report(saved["rows"], saved["reward_model"])))
        return
    t0 = time.perf_counter()
    if a.keep:
        a.keep.mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext(str(a.keep)) if a.keep else tempfile.TemporaryDirectory() as tmp:
        if a.reuse:  # steps 1-3 as an earlier --keep left them
            rm_dir = a.reuse / "rm" / "reward_model"
            meta = json.loads((rm_dir / "rlvr_reward_model.json").read_text())
            meta["audit"] = json.loads((a.reuse / "audit.json").read_text())
            line = f"reused {a.reuse}"
        else:
            rm_dir, meta, line = reward_model(Path(tmp), a.smoke)
            (Path(tmp) / "audit.json").write_text(json.dumps(meta["audit"]))
        print(line, file=sys.stderr, flush=True)
        rows = sample_and_pick(rm_dir, a.smoke)
    figures = report(rows, meta)
    if not a.smoke:
        sys.path.insert(0, str(ROOT / "bench"))
        from machine import cpu_kind, cpu_name

        machine = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
        saved = {"machine": machine, "import": line, "reward_model": meta, "rows": rows, "figures": figures,
                 "wall_s": time.perf_counter() - t0}  # fmt: skip
        Path(a.out).write_text(json.dumps(saved, indent=2))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
