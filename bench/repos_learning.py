"""Does the embedded model learn to repair real repositories? The honest learning figure
of the repository agent (issue 32): solve rate on tier-0 tasks of the held-out projects
(inflection and xmltodict: never trained on) before and after a short run.

Arms, each evaluated greedily on the same held-out tasks in the same invocation:
- `base`: the embedded model as shipped (the baseline);
- `sft`: `rlvr sft` on the reference episodes of training tasks (rlvr.repos.reference:
  read each changed region, edit it back, run the tests, submit; the environment's turns
  are context, never trained), so the policy has seen the tool format and a repair;
- `sft+rl`: `rlvr train examples/repos.yaml` for a few steps from the `sft` model, the
  repository's own suite as the reward;
- `rl` (with --rl-alone): the same RL steps from the base model, no warm start.

Besides the solve rate (the whole suite passes: pass@1) and the mean reward (the
FAIL_TO_PASS share, 0 when a passing test breaks), each evaluation's episodes are read
from the run's trace store: the share of replies that were a valid tool call, and the
share of episodes that applied an edit, ran the tests and submitted. A 135M model is
expected to solve few or none: the figure says how far the tools are used, not only
whether a bug was fixed.

    python bench/repos_learning.py                          # needs: rlvr repos add --bundled
    python bench/repos_learning.py --train-tasks 96 --eval-tasks 16 --rl-steps 8
    python bench/repos_learning.py --report bench/results/repos_learning.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from machine import cpu_kind, cpu_name

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "repos.yaml"
SFT_KEYS = ["sft.data=[tasks]", "sft.batch_size=8", "sft.micro_batch_size=1", "sft.lr=5e-5", "sft.warmup_steps=2",
            "sft.schedule=cosine", "sft.held_out=0.05", "sft.max_length=8192"]  # fmt: skip
SMOKE = ["model.name_or_path=tiny-random", "generation.max_new_tokens=8"]
SMOKE_RL = ["train.prompts_per_step=1", "algo.group_size=2"]
BAD_CALL = ("No tool call found", "Unknown tool")


def _digest(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def pick_tasks(rows: list[dict], train: int, held_out: int, tier: int) -> list[dict]:
    """`train` training tasks (both tiers, spread over the training projects in turn) and
    `held_out` tasks of the evaluation projects at `tier` (spread over them likewise);
    within a project the order is a hash of the task id, so a larger pick keeps a smaller
    one's tasks."""

    def spread(sel: list[dict], n: int) -> list[dict]:
        by_repo: dict[str, list[dict]] = {}
        for r in sorted(sel, key=lambda r: _digest(r["id"])):
            by_repo.setdefault(r["tests"]["repo"], []).append(r)
        queues = [by_repo[k] for k in sorted(by_repo)]
        out: list[dict] = []
        while len(out) < n and any(queues):
            for q in queues:
                if q and len(out) < n:
                    out.append(q.pop(0))
        return out

    trains = [r for r in rows if r["metadata"].get("split") != "eval"]
    evals = [r for r in rows if r["metadata"].get("split") == "eval" and r["tests"].get("tier") == tier]
    if len(evals) < held_out:
        raise SystemExit(f"only {len(evals)} held-out tasks at tier {tier}; --eval-tasks {held_out} asks for more")
    return spread(trains, train) + spread(evals, held_out)


def _rlvr(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "rlvr.cli", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SystemExit(f"rlvr {args[0]}: exit {done.returncode}: {tail}")
    return done


class EpisodeUse(TypedDict):
    replies: int
    valid: int
    tools: list[str]
    errors: dict[str, int]
    submitted: bool
    path_calls: int
    unseen: int


def episode_use(turns: list[dict], finish_reason: str | None) -> EpisodeUse:
    """One episode's tool use from its turns: replies; how many were a valid tool call, by
    the environment's own reading (a first call naming one of its tools: the same test
    for a last reply the episode's end left unanswered); the tools that ran without an
    error (an `Error:` answer, e.g. a file that does not exist, is a valid call that did
    nothing) and the errors by tool; whether it submitted (a budget cut ends it without);
    its read and edit calls, and how many of them named a path no earlier message had
    shown (rlvr.repos.reference.unseen_paths, the environment's own reading: a guess)."""
    from rlvr.algos.filtering import BUDGET_CUTS
    from rlvr.repos.agent import TOOL_NAMES, tool_calls
    from rlvr.repos.reference import unseen_paths

    replies = valid = path_calls = 0
    ran: list[str] = []
    errors: dict[str, int] = {}
    first = ""
    for i, t in enumerate(turns):
        if t["role"] != "assistant":
            continue
        replies += 1
        calls, _ = tool_calls(t["content"] or "")
        first = str(calls[0].get("tool")) if calls else ""
        if first not in TOOL_NAMES:
            continue
        valid += 1
        path_calls += first in ("read", "edit")
        after = (turns[i + 1]["content"] or "") if i + 1 < len(turns) else None
        if after is None or first == "submit":
            continue
        if _errored(after):
            errors[first] = errors.get(first, 0) + 1
        else:
            ran.append(first)
    submitted = first == "submit" and finish_reason not in BUDGET_CUTS
    unseen = len(unseen_paths([{"role": t["role"], "content": t["content"] or ""} for t in turns]))
    return {"replies": replies, "valid": valid, "tools": ran, "errors": errors, "submitted": submitted,
            "path_calls": path_calls, "unseen": unseen}  # fmt: skip


def _errored(observation: str) -> bool:
    """The tool's answer (after its `[name]` line and any note that only the first of
    several calls ran) is an error: `Error: ...` (rlvr.repos.agent)."""
    body = observation.split("\n")[1:]
    if body and body[0].startswith("[one tool call a reply"):
        body = body[1:]
    return bool(body) and body[0].startswith("Error:")


def tool_use(store: Path, phase: str) -> dict[str, Any]:
    """How the evaluation's episodes used the tools (`phase`: before or after)."""
    from rlvr.trace.parquet import read_table

    evals = [e for e in read_table(str(store), "evals").to_pylist() if not e["suite"] and e["phase"] == phase]
    if not evals:
        return {}
    step = evals[-1]["step"]
    rows = [r for r in read_table(str(store), "eval_trajectories").to_pylist() if r["step"] == step]
    used = [episode_use(r["turns"] or [], r["finish_reason"]) for r in rows]
    n, replies = max(1, len(used)), sum(u["replies"] for u in used)
    share = lambda f: sum(bool(f(u)) for u in used) / n  # noqa: E731
    errors: dict[str, int] = {}
    for u in used:
        for k, v in u["errors"].items():
            errors[k] = errors.get(k, 0) + v
    return {"episodes": len(used), "replies": replies,
            "valid_call_share": sum(u["valid"] for u in used) / max(1, replies),
            "read_share": share(lambda u: "read" in u["tools"]),
            "edited_share": share(lambda u: "edit" in u["tools"]),
            "tested_share": share(lambda u: "run_tests" in u["tools"]),
            "submitted_share": share(lambda u: u["submitted"]), "tool_errors": errors,
            "path_calls": sum(u["path_calls"] for u in used),
            "unseen_paths": sum(u["unseen"] for u in used)}  # fmt: skip


def _figures(ev: dict | None, use: dict) -> dict:
    ev = ev or {}
    return {"pass_at_1": ev.get("pass_at_1"), "mean_reward": ev.get("mean_reward"), "tasks": ev.get("num_tasks"), **use}


def run(args: argparse.Namespace) -> dict:
    out = Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in Path(args.source).read_text().splitlines() if line.strip()]
    picked = pick_tasks(rows, args.train_tasks, args.eval_tasks, args.tier)
    tasks = out / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in picked))
    common = [f"output_dir={out}", f"tasks.source={tasks}", f"eval.num_tasks={args.eval_tasks}",
              f"seed={args.seed}", *(SMOKE if args.smoke else [])]  # fmt: skip
    result: dict = {"cpu": cpu_name(), "cpu_kind": cpu_kind(), "train_tasks": args.train_tasks,
                    "eval_tasks": args.eval_tasks, "tier": args.tier, "sft_epochs": args.sft_epochs,
                    "rl_steps": args.rl_steps, "seed": args.seed, "arms": {}}  # fmt: skip
    usage = lambda: resource.getrusage(resource.RUSAGE_CHILDREN)  # noqa: E731

    t0, u0 = time.perf_counter(), usage()
    sft_args = [*SFT_KEYS, f"sft.epochs={args.sft_epochs}", "eval.before_training=true", "eval.after_training=true"]
    _rlvr("sft", str(CONFIG), "--plain", "name=sft", *common, *sft_args, *(["sft.max_steps=1"] if args.smoke else []))
    s = json.loads((out / "sft" / "summary.json").read_text())
    store = out / "sft" / "traces"
    result["sft"] = {"examples": s["examples"], "held_out": s["held_out"], "steps": s["steps"],
                     "left_out": s["left_out"], "loss_before": s["loss_before"], "loss_after": s["loss_after"],
                     "wall_s": time.perf_counter() - t0, "cpu_s": _cpu(u0, usage())}  # fmt: skip
    result["arms"]["base"] = _figures(s["eval_before"], tool_use(store, "before"))
    result["arms"]["sft"] = _figures(s["eval_after"], tool_use(store, "after"))
    print(_line("base", result["arms"]["base"]), flush=True)
    print(_line("sft", result["arms"]["sft"]), flush=True)

    starts = [("sft+rl", s["model_dir"])] + ([("rl", None)] if args.rl_alone else [])
    for arm, start in starts:
        t0, u0 = time.perf_counter(), usage()
        name = arm.replace("+", "_")
        # from the SFT model, evaluated again before RL: the same weights reloaded from disk
        # (the `sft (reloaded)` row), so a difference from the `sft` row is the evaluation's own
        reloaded = bool(start)
        _rlvr("train", str(CONFIG), "--plain", f"name={name}", *common, f"train.steps={args.rl_steps}",
              f"eval.before_training={str(reloaded).lower()}", "eval.after_training=true",
              *([f"model.name_or_path={start}"] if start else []), *(SMOKE_RL if args.smoke else []))  # fmt: skip
        t = json.loads((out / name / "summary.json").read_text())
        if reloaded:
            result["arms"]["sft (reloaded)"] = _figures(t["eval_before"], tool_use(out / name / "traces", "before"))
            print(_line("sft (reloaded)", result["arms"]["sft (reloaded)"]), flush=True)
        result["arms"][arm] = {**_figures(t["eval_after"], tool_use(out / name / "traces", "after")),
                               "wall_s": time.perf_counter() - t0, "cpu_s": _cpu(u0, usage()),
                               "steps": rl_steps(out / name)}  # fmt: skip
        print(_line(arm, result["arms"][arm]), flush=True)
    return result


def rl_steps(run: Path) -> list[dict]:
    """Each RL step's mean reward, gradient norm, budget-cut share and weights fingerprint
    (metrics.jsonl): whether the policy had anything to learn from, and whether it moved."""
    keys = ("reward/mean", "train/grad_norm", "rollout/budget_cut_frac", "weights_fingerprint")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [{"step": r["step"], **{k: r.get(k) for k in keys}} for r in rows if r.get("event") == "step"]


def _cpu(a: resource.struct_rusage, b: resource.struct_rusage) -> float:
    return (b.ru_utime - a.ru_utime) + (b.ru_stime - a.ru_stime)


def _line(arm: str, f: dict) -> str:
    num = lambda k: f"{f[k]:.3f}" if isinstance(f.get(k), (int, float)) else "-"  # noqa: E731
    return (f"{arm:<14} solved {num('pass_at_1'):>6}  reward {num('mean_reward'):>6}  valid calls "
            f"{num('valid_call_share'):>6}  read {num('read_share'):>6}  edited {num('edited_share'):>6}  "
            f"tested {num('tested_share'):>6}  submitted {num('submitted_share'):>6}  "
            f"reads+edits of unseen paths {f.get('unseen_paths', '-')}/{f.get('path_calls', '-')}")  # fmt: skip


def report(result: dict) -> None:
    s = result.get("sft", {})
    print(f"{result['eval_tasks']} tier-{result['tier']} tasks of the held-out projects; {result['train_tasks']} "
          f"training tasks' reference episodes ({s.get('examples')} trained on, {s.get('held_out')} held out, "
          f"{s.get('steps')} SFT steps, held-out loss {s.get('loss_before', 0):.4f} -> {s.get('loss_after', 0):.4f}); "
          f"{result['rl_steps']} RL steps; {result.get('cpu')}")  # fmt: skip
    for arm, f in result["arms"].items():
        print(_line(arm, f))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-tasks", type=int, default=96, help="training tasks whose reference episodes SFT uses")
    ap.add_argument("--eval-tasks", type=int, default=16, help="held-out tasks evaluated (default 16)")
    ap.add_argument("--tier", type=int, default=0, choices=(0, 1), help="the held-out tasks' prompt tier")
    ap.add_argument("--sft-epochs", type=int, default=2)
    ap.add_argument("--rl-steps", type=int, default=8)
    ap.add_argument("--rl-alone", action="store_true", help="also RL from the base model (no warm start)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--source",
        default=str(ROOT / "rlvr/tasks/data/repos.jsonl"),
        help="the tasks file to pick from (default: bundled:repos; metadata.split eval marks held-out)",
    )
    ap.add_argument("--smoke", action="store_true", help="tiny model, one step each, nothing recorded")
    ap.add_argument("--work", default="runs/bench_repos_learning", help="where the runs go")
    ap.add_argument("--out", default=str(ROOT / "bench/results/repos_learning.json"))
    ap.add_argument("--report", metavar="RESULTS", help="print a results file and stop")
    a = ap.parse_args()
    if a.report:
        report(json.loads(Path(a.report).read_text()))
        return
    if Path(a.work).exists() and any(Path(a.work).iterdir()):
        raise SystemExit(f"--work {a.work}: not empty (the runs there would mix with these)")
    result = run(a)
    if not a.smoke:
        Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {a.out}")
    report(result)
    print(json.dumps({arm: {k: f.get(k) for k in ("pass_at_1", "mean_reward", "valid_call_share", "episodes")}
                      for arm, f in result["arms"].items()}))  # fmt: skip


if __name__ == "__main__":
    main()
