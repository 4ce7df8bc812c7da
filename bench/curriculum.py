"""Does a curriculum spend rollouts better than uniform sampling? (issue 14)

A training mix that wastes compute the way real data does (`--mix wasteful`, the default):
the bundled Python function tasks (difficulty 1-3: some solved every time, some never)
plus as many tasks that are hopeless for a 135M model (math_word and json_extract: it
scores 0 on them). `--mix code` is Python plus code repair, where partial credit makes
most groups informative whatever is sampled. Each configuration trains the embedded model
from the quickstart's settings on the mix for the same steps and rollouts, with held-out
pass@1 (the mix's eval split) evaluated every `--eval-every` steps:

  uniform:       curriculum.strategy uniform (a seeded permutation per epoch);
  learnability:  curriculum.strategy learnability with the prefilter at 0.8 and
                 prior_strength 1 (CURRICULUM);
  bandit:        that inside each domain, with curriculum.domain_mix bandit across them
                 (`--configs uniform learnability bandit`).

Read from each run's logs: the informative-group fraction (groups whose rewards are not
all equal), the generation seconds spent on zero-advantage groups (each step's
generation time shared among its groups by tokens generated), held-out pass@1 at each
evaluation, and the first evaluated step at which a run reaches uniform's final pass@1
(same seed). Printed per configuration as the mean over seeds; all series to the JSON.

    .venv/bin/python bench/curriculum.py      # 3 seeds x 24 steps, uniform and bandit (~2 h on 2 cores)
    .venv/bin/python bench/curriculum.py --seeds 0 --steps 4 --eval-every 2   # a smoke run
    .venv/bin/python bench/curriculum.py --seeds 2 --keep     # add a seed to the runs in the JSON
    .venv/bin/python bench/curriculum.py --smoke   # 2 steps of the tiny model per config (the test suite)

Step figures are read through bench/figures.py (a missing metric is an error naming it).
--smoke runs the default configurations for seed 0 on the tiny random model (2 steps,
2 prompts, 8 new tokens, 4 evaluation tasks after every step), writes no JSON and prints
the results (the JSON's keys) as its last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from figures import (  # noqa: E402
    BenchError,
    step_metric,
    step_rows,
)
from train_runs import SMOKE, train_quickstart  # noqa: E402

MIXES = {
    # the mix: the bundled Python tasks plus as many hopeless ones. Every bundled
    # non-code domain is hopeless for the 135M model (greedy pass@1 0 and mean reward 0 on
    # the held-out tasks of json_extract, math_word, reasoning_gym, trading and itops at
    # difficulty 1, and math_word, data_analysis at 3: probed with rlvr eval, 2026-12-01);
    # math_word (180) + json_extract (120) match python_functions' 308 in number. The
    # trivially solved share is the Python tasks the model always solves (about a fifth of
    # the Python groups under uniform sampling): no bundled domain is trivial for it.
    "wasteful": "bundled:python_functions+bundled:math_word+bundled:json_extract",
    # code only: partial credit makes most groups informative already (uniform 0.73)
    "code": "bundled:python_functions+bundled:code_repair",
}
# The curricula's settings were chosen on a simulation of this mix (hopeless math, json
# with partial credit, Python tasks of every kind), not on these runs: a prefilter at 0.8
# and a prior of 1 pseudo-observation let the cells' evidence act within a few steps.
CURRICULUM = ["curriculum.strategy=learnability", "curriculum.prefilter=0.8", "curriculum.prior_strength=1.0"]
CONFIGS: dict[str, list[str]] = {
    "uniform": ["curriculum.strategy=uniform"],
    "learnability": CURRICULUM,
    "bandit": ["curriculum.domain_mix=bandit", *CURRICULUM],
}


def train(config: str, seed: int, steps: int, every: int, out: Path, extra: list[str], mix: str) -> tuple[Path, float]:
    overrides = [f"tasks.source={mix}", f"seed={seed}", f"train.steps={steps}", f"eval.every={every}"]
    return train_quickstart(f"{config}-seed{seed}", out, [*overrides, *CONFIGS[config], *extra])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


TRAJECTORY_KEYS = ("step", "task_id", "group_id", "status", "reward", "completion_ids")
"""What measure() reads of each trajectories.jsonl row (rlvr.types.Trajectory.to_dict)."""


def measure(run: Path, every: int = 0) -> dict[str, Any]:
    steps = step_rows(run)
    gen_s = dict(zip([r["step"] for r in steps], step_metric(steps, "rollout/generate_s", run), strict=True))
    rows = read_jsonl(run / "metrics.jsonl")
    groups: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for t in read_jsonl(run / "trajectories.jsonl"):
        missing = [k for k in TRAJECTORY_KEYS if k not in t]
        if missing:
            raise BenchError(f"{run}/trajectories.jsonl: a row lacks {', '.join(missing)}")
        if "#canary/" in t["task_id"] or t["status"] != "ok":
            continue
        if not isinstance(t["reward"], dict) or "total" not in t["reward"]:
            raise BenchError(f"{run}/trajectories.jsonl: {t['task_id']} (step {t['step']}) has no reward total")
        groups[(t["step"], t["group_id"])].append(t)
    if not groups:
        raise BenchError(f"{run}/trajectories.jsonl: no trajectory that is not a canary or an error")
    informative, tokens, idle_tokens = [], defaultdict(int), defaultdict(int)
    for (step, _), trajs in groups.items():
        rewards = [t["reward"]["total"] for t in trajs]
        n_tok = sum(len(t["completion_ids"]) for t in trajs)
        tokens[step] += n_tok
        agree = len(set(rewards)) <= 1
        idle_tokens[step] += n_tok if agree else 0
        informative.append(0.0 if agree else 1.0)
    idle_s = sum(gen_s.get(s, 0.0) * idle_tokens[s] / tokens[s] for s in tokens if tokens[s])
    # the bundled eval split before training, then each periodic evaluation (the last step's
    # is the "after" one); eval rows of other suites (HumanEval) carry a "suite" key
    before = [(0, r["pass_at_1"]) for r in rows if r["event"] == "eval" and r["when"] == "before" and "suite" not in r]
    periodic = [(r["step"], r["eval/pass_at_1"]) for r in rows if r["event"] == "step" and "eval/pass_at_1" in r]
    if not before:
        raise BenchError(f"{run}/metrics.jsonl: no 'eval' row with when 'before' and 'pass_at_1' (the start of pass@1)")
    if every and len(steps) >= every and not periodic:
        raise BenchError(f"{run}/metrics.jsonl: eval.every={every} but no step row has 'eval/pass_at_1'")
    curve = sorted(dict([*before, *periodic]).items())
    return {
        "informative": statistics.fmean(informative) if informative else 0.0,
        "zero_advantage_gen_s": idle_s,
        "gen_s": sum(gen_s.values()),
        "pass_at_1": curve,
    }


def first_reaching(curve: list[tuple[int, float]], target: float) -> int | None:
    return next((s for s, p in curve if s > 0 and p >= target - 1e-9), None)


def summarize(results: dict[str, Any], seeds: list[int], configs: list[str]) -> dict[str, Any]:
    """Mean over the seeds each configuration has run for, printed as a table."""
    print(f"\nmix {results['mix']}; {results['steps']} steps; mean over the seeds run of {seeds}")
    print(f"{'config':14}{'seeds':>6}{'informative':>13}{'zero-adv gen s':>16}", end="")
    print(f"{'pass@1 start':>14}{'final':>8}{'reaches uniform':>17}")
    summary: dict[str, Any] = {}
    for config in configs:
        done = [s for s in seeds if f"{config}/{s}" in results["runs"]]
        if not done:
            continue
        runs = [results["runs"][f"{config}/{s}"] for s in done]
        reach = []
        for s, r in zip(done, runs, strict=True):
            target = results["runs"].get(f"uniform/{s}", r)["pass_at_1"][-1][1]
            reach.append(first_reaching(r["pass_at_1"], target))
        row = {
            "seeds": done,
            "informative": statistics.fmean(r["informative"] for r in runs),
            "zero_advantage_gen_s": statistics.fmean(r["zero_advantage_gen_s"] for r in runs),
            "gen_s": statistics.fmean(r["gen_s"] for r in runs),
            "pass_at_1_start": statistics.fmean(r["pass_at_1"][0][1] for r in runs),
            "pass_at_1_final": statistics.fmean(r["pass_at_1"][-1][1] for r in runs),
            "step_reaching_uniform_final": reach,
        }
        summary[config] = row
        reached = "/".join("-" if x is None else str(x) for x in reach)
        print(
            f"{config:14}{len(done):>6}{row['informative']:>13.3f}{row['zero_advantage_gen_s']:>16.0f}"
            f"{row['pass_at_1_start']:>14.3f}{row['pass_at_1_final']:>8.3f}{reached:>17}"
        )
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mix", choices=sorted(MIXES), default="wasteful", help="the training mix (see MIXES)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--eval-every", type=int, default=4)
    ap.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=["uniform", "bandit"])
    ap.add_argument("--humaneval", action="store_true", help="also evaluate HumanEval before and after")
    ap.add_argument("--out", default="", help="where the runs go (default: a temporary directory)")
    ap.add_argument(
        "--json", default="", help="default: bench/results/curriculum.json (curriculum_<mix>.json for others)"
    )
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep the runs already in --json (same mix, steps and evaluation) and run only the missing ones",
    )
    ap.add_argument("--smoke", action="store_true", help="seed 0, 2 steps of the tiny model a config, no JSON written")
    args = ap.parse_args(argv)
    extra = ["eval.sources=[bundled:humaneval]"] if args.humaneval else []
    if args.smoke:
        if args.keep:
            ap.error("--smoke keeps nothing: drop --keep")
        args.seeds, args.steps, args.eval_every = [0], 2, 1
        extra += [*SMOKE, "eval.num_tasks=4", "eval.max_new_tokens=8"]
    mix = MIXES[args.mix]
    setting = {"mix": mix, "steps": args.steps, "eval_every": args.eval_every, "humaneval": args.humaneval}
    results: dict[str, Any] = {**setting, "runs": {}}
    json_path = Path(
        args.json or ROOT / "bench" / "results" / f"curriculum{'' if args.mix == 'wasteful' else '_' + args.mix}.json"
    )
    if args.keep and json_path.exists():
        old = json.loads(json_path.read_text())
        if all(old.get(k) == v for k, v in setting.items()):
            results["runs"] = old.get("runs", {})
            if "superseded" in old:  # runs of an earlier definition, kept for the record
                results["superseded"] = old["superseded"]
        else:
            raise SystemExit(f"{json_path} holds another setting than {setting}: drop --keep or --json elsewhere")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        for seed in args.seeds:
            for config in args.configs:
                if f"{config}/{seed}" in results["runs"]:
                    continue
                run, wall = train(config, seed, args.steps, args.eval_every, out / args.mix, extra, mix)
                m = {"wall_s": round(wall, 1), **measure(run, args.eval_every)}
                if args.humaneval:
                    summary = json.loads((run / "summary.json").read_text())
                    m["humaneval"] = {k: (v or {}).get("pass_at_1") for k, v in summary["suites"]["humaneval"].items()}
                results["runs"][f"{config}/{seed}"] = m
                if not args.smoke:  # a smoke run is a check, not a figure: nothing is recorded
                    json_path.write_text(json.dumps(results, indent=1) + "\n")  # each run kept as it ends
                print(
                    f"{config} seed {seed}: {wall / 60:.1f} min, informative {m['informative']:.3f}, "
                    f"zero-advantage generation {m['zero_advantage_gen_s']:.0f} of {m['gen_s']:.0f} s, "
                    f"pass@1 {m['pass_at_1'][0][1]:.3f} -> {m['pass_at_1'][-1][1]:.3f}",
                    flush=True,
                )

    results["summary"] = summarize(results, args.seeds, args.configs)
    if args.smoke:
        print(json.dumps(results))
        return
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {json_path}")


if __name__ == "__main__":
    sys.exit(main())
