"""Does a warm start help where the policy starts at 0? Per domain and seed, four arms as
a user runs them, side by side: RL alone (rlvr train), SFT alone (rlvr sft on the tasks'
references), RFT (rlvr rft), and SFT then RL (rlvr train with stages: [sft, rl]).

Every arm starts from the embedded SmolLM2-135M-Instruct, reads its domain's example
config (prompt, generation, reward) and is measured on the same held-out tasks (the split
is by task id): held-out pass@1 (greedy) before and after, the arm's CPU seconds
(user + system of its process tree) and wall seconds. The step counts are chosen so the
arms cost about the same; the CPU each one actually took is printed beside its result,
so a warm start's cost is in the table, not assumed.

    .venv/bin/python bench/warm_start.py [--domains json trading] [--seeds 0 1 2]
    .venv/bin/python bench/warm_start.py --smoke          # tiny model, one step each (the test suite)
    .venv/bin/python bench/warm_start.py --report bench/results/warm_start.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOMAINS = {
    "json": "examples/json_output.yaml",
    "trading": "examples/trading.yaml",
    "python": "examples/quickstart.yaml",  # the quickstart's domain: does RFT match GRPO? (--domains python)
}
ARMS = ("rl", "sft", "rft", "sft_rl")
# the budget of each arm (about equal CPU on the quickstart's machine; the table reports what each used)
SIZES = {
    "rl": ["train.steps=16"],
    "sft": ["sft.data=[tasks]", "sft.epochs=2", "sft.batch_size=8", "sft.micro_batch_size=8", "sft.lr=2e-5",
            "sft.warmup_steps=2", "sft.schedule=cosine"],
    "rft": ["rft.rounds=2", "rft.samples=4", "rft.tasks_per_round=24", "sft.epochs=2", "sft.batch_size=8",
            "sft.lr=2e-5"],
    "sft_rl": ["stages=[sft,rl]", "sft.data=[tasks]", "sft.epochs=2", "sft.batch_size=8", "sft.micro_batch_size=8",
               "sft.lr=2e-5", "sft.warmup_steps=2", "sft.schedule=cosine", "train.steps=8"],
}  # fmt: skip
SMOKE = ["model.name_or_path=tiny-random", "generation.max_new_tokens=8", "eval.num_tasks=2", "train.steps=1",
         "train.prompts_per_step=2", "algo.group_size=2", "sft.max_steps=1", "rft.rounds=1", "rft.samples=2",
         "rft.tasks_per_round=2"]  # fmt: skip
COMMAND = {"rl": "train", "sft": "sft", "rft": "rft", "sft_rl": "train"}


def _arm_overrides(arm: str, smoke: bool) -> list[str]:
    sizes = SIZES[arm]
    if smoke:  # the smallest run of each arm: the SMOKE keys it reads
        keep = {"rl": ("model", "generation", "eval", "train", "algo"), "sft": ("model", "generation", "eval", "sft"),
                "rft": ("model", "generation", "eval", "rft", "sft"),
                "sft_rl": ("model", "generation", "eval", "train", "algo", "sft")}[arm]  # fmt: skip
        sizes = [s for s in sizes if not s.startswith(("train.steps", "sft.epochs", "rft.rounds"))]
        sizes += [s for s in SMOKE if s.split(".", 1)[0] in keep]
    return sizes


def run_arm(domain: str, arm: str, seed: int, out_dir: Path, smoke: bool) -> dict:
    """One arm as a user runs it; its pass@1 from the run's summary, its CPU and wall."""
    name = f"{domain}-{arm}-{seed}"
    args = [sys.executable, "-m", "rlvr.cli", COMMAND[arm], DOMAINS[domain], "--plain", f"output_dir={out_dir}",
            f"name={name}", f"seed={seed}", "eval.num_tasks=24", *_arm_overrides(arm, smoke)]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    run = out_dir / name
    if arm == "sft_rl":  # at the start (the sft stage's before) and after the rl stage
        first, last = (json.loads((run / s / "summary.json").read_text()) for s in ("sft", "rl"))
        start, end, mid = first["eval_before"], last["eval_after"], first["eval_after"]["pass_at_1"]
    else:
        s = json.loads((run / "summary.json").read_text())
        start, end, mid = s["eval_before"], s["eval_after"], None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"domain": domain, "arm": arm, "seed": seed, "pass_before": start["pass_at_1"],
            "pass_after": end["pass_at_1"], "pass_after_sft": mid, "reward_before": start["mean_reward"],
            "reward_after": end["mean_reward"], "cpu_s": cpu, "wall_s": wall}  # fmt: skip


def report(rows: list[dict]) -> dict:
    """The table, and the figures it quotes: mean pass@1 after and CPU per domain and arm."""
    for r in rows:
        missing = [k for k in ("domain", "arm", "seed", "pass_before", "pass_after", "cpu_s") if k not in r]
        if missing:
            raise SystemExit(f"a row lacks {', '.join(missing)}: {r}")
    head = f"{'before':>7} {'after':>7} {'reward':>15} {'CPU s':>7} {'wall s':>7}"
    print(f"\n{'domain':<8} {'arm':<7} {'seed':>4} {head}")
    for r in rows:
        reward = f"{r['reward_before']:+.3f} -> {r['reward_after']:+.3f}" if "reward_after" in r else "-"
        print(f"{r['domain']:<8} {r['arm']:<7} {r['seed']:>4} {r['pass_before']:7.3f} {r['pass_after']:7.3f} "
              f"{reward:>15} {r['cpu_s']:7.0f} {r['wall_s']:7.0f}")  # fmt: skip
    figures: dict = {}
    for domain in sorted({r["domain"] for r in rows}):
        for arm in ARMS:
            sel = [r for r in rows if r["domain"] == domain and r["arm"] == arm]
            if sel:
                figures[f"{domain}/{arm}/pass_after"] = sum(r["pass_after"] for r in sel) / len(sel)
                figures[f"{domain}/{arm}/cpu_s"] = sum(r["cpu_s"] for r in sel) / len(sel)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domains", nargs="+", default=["json", "trading"], choices=list(DOMAINS))
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--smoke", action="store_true", help="tiny model, one step of each arm, nothing recorded")
    ap.add_argument("--report", metavar="RESULTS")
    ap.add_argument("--out", default=str(ROOT / "bench/results/warm_start.json"))
    a = ap.parse_args()
    if a.report:
        print(json.dumps(report(json.loads(Path(a.report).read_text())["rows"])))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for domain in a.domains:
            for seed in a.seeds:
                for arm in a.arms:
                    rows.append(run_arm(domain, arm, seed, Path(tmp), a.smoke))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    figures = report(rows)
    if not a.smoke:
        sys.path.insert(0, str(ROOT / "bench"))
        from machine import cpu_kind, cpu_name

        machine = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
        Path(a.out).write_text(json.dumps({"machine": machine, "sizes": SIZES, "rows": rows, "figures": figures},
                                          indent=2))  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
