"""Does a curriculum spend rollouts better than uniform sampling? (issue 14)

A training mix that wastes compute the way real data does (`--mix wasteful`, the default):
the bundled Python function tasks (difficulty 1-3: some solved every time, some never)
plus as many tasks that are hopeless for a 135M model (math_word and json_extract: it
scores 0 on them). `--mix code` is Python plus code repair, where partial credit makes
most groups informative whatever is sampled. `--mix hundred` trains
examples/hundred_domains.yaml as it stands (106 domains, its own prompts and sizes):
'scheduler' is that example's curriculum (a bandit across domains with floors and a
ceiling, learnability inside each, evidence counting informative groups, at most 2 draws
of a family in 32) and 'uniform' one pooled uniform draw over every task. Each
configuration trains the embedded model from the quickstart's settings (the hundred
mix: its example's) on the mix for the same steps and rollouts, with held-out pass@1
(the mix's eval split) evaluated every `--eval-every` steps:

  uniform:       curriculum.strategy uniform (a seeded permutation per epoch);
  learnability:  curriculum.strategy learnability with the prefilter at 0.8 and
                 prior_strength 1 (CURRICULUM);
  bandit:        that inside each domain, with curriculum.domain_mix bandit across them
                 (`--configs uniform learnability bandit`);
  scheduler:     bandit with evidence 'informative' and a family cap (SCHEDULER).

Read from each run's logs: the informative-group fraction (groups whose rewards are not
all equal), the generation seconds spent on zero-advantage groups (each step's
generation time shared among its groups by tokens generated), held-out pass@1 at each
evaluation, and the first evaluated step at which a run reaches uniform's final pass@1
(same seed); the training domains never drawn and the family diversity of the draws
(distinct families over groups, per step); per held-out task its greedy outcome at the
last evaluation, paired with uniform's over seeds and tasks in an exact sign test; pass@1
per domain at the first and last evaluation (reported, not judged one by one). Printed
per configuration as the mean over seeds; all series to the JSON. `scheduler` on the
wasteful mix is issue 37's re-measure of the earlier miss (informative evidence and the
family cap beside the bandit).

    .venv/bin/python bench/curriculum.py      # 3 seeds x 24 steps, uniform and bandit (~2 h on 2 cores)
    .venv/bin/python bench/curriculum.py --seeds 0 --steps 4 --eval-every 2   # a smoke run
    .venv/bin/python bench/curriculum.py --seeds 2 --keep     # add a seed to the runs in the JSON
    .venv/bin/python bench/curriculum.py --smoke   # 2 steps of the tiny model per config (the test suite)
    .venv/bin/python bench/curriculum.py --mix hundred --seeds 0 --steps 12 --keep   # runs of the 106-domain mix
    .venv/bin/python bench/curriculum.py --mix python --calibrate 4 --eval-every 24 --out runs/cal   # calibrated start

`--calibrate K` first runs `rlvr tasks calibrate` on the mix's training tasks (K replies
each, the quickstart's model and settings) and records its report and seconds; every
configuration then trains on that file, and only `calibrated` (learnability whose
estimates start from the records) reads them (the others: curriculum.calibration_weight=0),
so the arms differ in nothing else. `--calibrated FILE` reuses such a file.

Step figures are read through bench/figures.py (a missing metric is an error naming it).
--smoke runs the default configurations for seed 0 on the tiny random model (2 steps,
2 prompts, 8 new tokens, 4 evaluation tasks after every step), writes no JSON and prints
the results (the JSON's keys) as its last line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
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
    # the quickstart's own tasks (the calibration's comparison: learnability with and without
    # the base model's measured start)
    "python": "bundled:python_functions",
    # issue 37's mix: examples/hundred_domains.yaml as it stands (106 domains: reasoning-gym's
    # 96 usable datasets drawn at run time beside every bundled set), its own prompts and sizes
    "hundred": "",
}
BASE = {"hundred": "hundred_domains"}
"""The example config a mix trains (default: the quickstart's, with tasks.source the mix)."""
# The curricula's settings were chosen on a simulation of this mix (hopeless math, json
# with partial credit, Python tasks of every kind), not on these runs: a prefilter at 0.8
# and a prior of 1 pseudo-observation let the cells' evidence act within a few steps.
CURRICULUM = ["curriculum.strategy=learnability", "curriculum.prefilter=0.8", "curriculum.prior_strength=1.0"]
# issue 37's answers to the earlier miss: evidence that counts informative groups (not mean
# reward, so partial credit and unseen tasks do not sit at p(1-p)'s peak) and a cap of 2
# draws of a family in a pool's last 32 (examples/hundred_domains.yaml's settings)
SCHEDULER = ["curriculum.evidence=informative", "curriculum.family_cap=2", "curriculum.family_window=32"]
CONFIGS: dict[str, list[str]] = {
    "uniform": ["curriculum.strategy=uniform"],
    "learnability": CURRICULUM,
    "bandit": ["curriculum.domain_mix=bandit", *CURRICULUM],
    "scheduler": ["curriculum.domain_mix=bandit", *CURRICULUM, *SCHEDULER],
    # learnability whose estimates start from each task's calibration (`rlvr tasks calibrate`:
    # the base model's sampled replies, --calibrate K or --calibrated FILE); every other
    # configuration then trains on the same file with curriculum.calibration_weight=0
    "calibrated": [*CURRICULUM, "curriculum.calibration_weight=1.0"],
}
# on the hundred mix the example config already holds the scheduler (bandit across domains
# with floors and a ceiling, learnability inside, informative evidence, the family cap):
# 'scheduler' runs it as it stands and 'uniform' is one pooled uniform draw over every task
HUNDRED: dict[str, list[str]] = {
    "uniform": ["curriculum.strategy=uniform", "curriculum.domain_mix=pooled", "curriculum.family_cap=null",
                "curriculum.evidence=reward", "curriculum.max_domain_share=1.0"],
    "scheduler": [],
}  # fmt: skip


def train(
    config: str, seed: int, steps: int, every: int, out: Path, extra: list[str], mix: str, calibrated: str = ""
) -> tuple[Path, float]:
    overrides = [f"seed={seed}", f"train.steps={steps}", f"eval.every={every}"]
    if mix in BASE:
        return train_quickstart(f"{config}-seed{seed}", out, [*overrides, *HUNDRED[config], *extra], BASE[mix])
    overrides.insert(0, f"tasks.source={calibrated or MIXES[mix]}")
    if calibrated and config != "calibrated":  # the same tasks, their records unread
        overrides.append("curriculum.calibration_weight=0")
    return train_quickstart(f"{config}-seed{seed}", out, [*overrides, *CONFIGS[config], *extra])


def calibrate(mix: str, samples: int, out: Path, extra: list[str]) -> tuple[Path, dict[str, Any]]:
    """`rlvr tasks calibrate` of the mix's training tasks with the quickstart's model and
    settings: the file written and the command's report (its seconds included)."""
    import subprocess

    path = out / f"calibrated_{mix}.jsonl"
    cmd = [sys.executable, "-m", "rlvr.cli", "tasks", "calibrate", str(ROOT / "examples" / "quickstart.yaml"),
           f"tasks.source={MIXES[mix]}", *extra, "--samples", str(samples), "--out", str(path), "--json"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"the calibration failed (exit {done.returncode})")
    return path, json.loads(done.stdout.strip().splitlines()[-1])


def check_calibrated(path: Path, mix: str) -> str:
    """The file's sha256 (recorded with the runs), once it is known to hold the mix's
    tasks, the same ids, with a calibration on at least one."""
    import hashlib

    from rlvr.tasks import load_tasks
    from rlvr.tasks.calibration import of

    tasks = load_tasks(str(path), 1, 10**6)
    want = {t.id for t in load_tasks(MIXES[mix], 1, 10**6)}
    if {t.id for t in tasks} != want:
        raise SystemExit(f"--calibrated {path}: its task ids are not the {mix} mix's ({MIXES[mix]})")
    if not any(of(t) for t in tasks):
        raise SystemExit(f"--calibrated {path}: no task has a calibration (rlvr tasks calibrate writes them)")
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
    by_step: dict[int, list[float]] = defaultdict(list)
    for (step, _), trajs in groups.items():
        rewards = [t["reward"]["total"] for t in trajs]
        n_tok = sum(len(t["completion_ids"]) for t in trajs)
        tokens[step] += n_tok
        agree = len(set(rewards)) <= 1
        idle_tokens[step] += n_tok if agree else 0
        informative.append(0.0 if agree else 1.0)
        by_step[step].append(informative[-1])
    # the first quarter of the steps: where a start from measured difficulty can differ most
    first = sorted(by_step)[: max(1, len(by_step) // 4)]
    early = [x for step in first for x in by_step[step]]
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
        "informative_first_quarter": statistics.fmean(early) if early else 0.0,
        "zero_advantage_gen_s": idle_s,
        "gen_s": sum(gen_s.values()),
        "pass_at_1": curve,
    }


def draws(run: Path) -> dict[str, Any]:
    """What the sampler drew, read against the run's own task set (its config.yaml):
    the training domains never drawn, and family diversity (distinct families over
    groups drawn, per step, averaged over steps)."""
    from rlvr.config import load_run_config
    from rlvr.curriculum import family_of
    from rlvr.tasks import split_tasks
    from rlvr.train.preflight import run_tasks

    cfg = load_run_config(run)
    train_tasks, _ = split_tasks(run_tasks(cfg), cfg.tasks.eval_fraction)
    by_id = {t.id: t for t in train_tasks}
    per_step: dict[int, dict[str, str]] = defaultdict(dict)  # step -> group -> task id
    for t in read_jsonl(run / "trajectories.jsonl"):
        if "#canary/" not in t["task_id"]:
            per_step[t["step"]][t["group_id"]] = t["task_id"]
    unknown = sorted({tid for g in per_step.values() for tid in g.values()} - set(by_id))
    if unknown:
        raise BenchError(f"{run}: drawn tasks not in the run's training split: {', '.join(unknown[:3])}")
    drawn = Counter(by_id[tid].domain for g in per_step.values() for tid in g.values())
    diversity = [
        len({family_of(by_id[tid], cfg.curriculum.pool_by) for tid in g.values()}) / len(g) for g in per_step.values()
    ]
    domains = {t.domain for t in train_tasks}
    return {
        "domains": len(domains),
        "zero_draw_domains": sorted(domains - set(drawn)),
        "family_diversity": statistics.fmean(diversity) if diversity else 0.0,
        "draws_by_domain": dict(sorted(drawn.items())),
    }


def _solved(row: dict[str, Any]) -> bool:
    """rlvr.trace.store.solved on a trace-store row: the environment's own say, else every
    test passed, else full completion."""
    details = json.loads(row["reward_details"] or "{}")
    for d in (details.get("completion") if isinstance(details.get("completion"), dict) else {}, details):
        if isinstance(d.get("solved"), bool):
            return bool(d["solved"])
    if row["exec_total"]:
        return bool(row["exec_passed"] == row["exec_total"])
    return dict(row["reward_components"] or []).get("completion", 0.0) >= 1.0


def final_outcomes(run: Path) -> dict[str, Any]:
    """Per held-out task, solved or not at the last evaluation (greedy), and pass@1 per
    domain at the first and the last."""
    from rlvr.trace.parquet import read_table

    rows = read_table(str(run / "traces"), "eval_trajectories").to_pylist()
    steps = sorted({r["step"] for r in rows})
    if not steps:
        raise BenchError(f"{run}/traces: no evaluated trajectory")
    out: dict[str, Any] = {"solved": {}, "by_domain": {}}
    for phase, step in (("start", steps[0]), ("end", steps[-1])):
        by: dict[str, list[bool]] = defaultdict(list)
        for r in rows:
            if r["step"] == step:
                by[r["domain"]].append(_solved(r))
                if phase == "end":
                    out["solved"][r["task_id"]] = _solved(r)
        out["by_domain"][phase] = {d: sum(v) / len(v) for d, v in sorted(by.items())}
    return out


def sign_test(results: dict[str, Any], config: str, seeds: list[int], base: str = "uniform") -> dict[str, Any] | None:
    """Paired over seeds and held-out tasks (greedy outcome at the last evaluation): the
    pairs only `config` solved, only `base` solved, and the two-sided exact sign test's p."""
    wins = losses = 0
    for seed in seeds:
        a, b = results["runs"].get(f"{config}/{seed}"), results["runs"].get(f"{base}/{seed}")
        if not a or not b or "solved" not in a or "solved" not in b:
            continue
        for tid in set(a["solved"]) & set(b["solved"]):
            wins += a["solved"][tid] and not b["solved"][tid]
            losses += b["solved"][tid] and not a["solved"][tid]
    n = wins + losses
    if not n:
        return {"wins": 0, "losses": 0, "p": 1.0}
    tail = sum(math.comb(n, k) for k in range(0, min(wins, losses) + 1)) / 2**n
    return {"wins": wins, "losses": losses, "p": min(1.0, 2 * tail)}


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
        if all("informative_first_quarter" in r for r in runs):  # recorded since the calibration
            row["informative_first_quarter"] = statistics.fmean(r["informative_first_quarter"] for r in runs)
        if all("family_diversity" in r for r in runs):  # recorded since the hundred-domain mix
            row["family_diversity"] = statistics.fmean(r["family_diversity"] for r in runs)
            row["zero_draw_domains"] = statistics.fmean(len(r["zero_draw_domains"]) for r in runs)
        if config != "uniform":
            row["paired_vs_uniform"] = sign_test(results, config, done)
        summary[config] = row
        reached = "/".join("-" if x is None else str(x) for x in reach)
        print(
            f"{config:14}{len(done):>6}{row['informative']:>13.3f}{row['zero_advantage_gen_s']:>16.0f}"
            f"{row['pass_at_1_start']:>14.3f}{row['pass_at_1_final']:>8.3f}{reached:>17}"
        )
    for config, row in summary.items():
        if "informative_first_quarter" in row:
            print(
                f"{config}: informative groups in the first quarter of the steps {row['informative_first_quarter']:.3f}"
            )
        if "family_diversity" in row:
            print(f"{config}: family diversity {row['family_diversity']:.3f}, "
                  f"{row['zero_draw_domains']:.1f} domains never drawn (mean over seeds)")  # fmt: skip
        paired = row.get("paired_vs_uniform")
        if paired:
            print(f"{config} vs uniform, paired over seeds and held-out tasks: {paired['wins']} solved only by "
                  f"{config}, {paired['losses']} only by uniform, sign test p = {paired['p']:.3f}")  # fmt: skip
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mix", choices=sorted(MIXES), default="wasteful", help="the training mix (see MIXES)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--eval-every", type=int, default=4)
    ap.add_argument(
        "--configs", nargs="+", choices=sorted(CONFIGS), help="default: uniform and bandit (scheduler on --mix hundred)"
    )
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more overrides for every run (recorded)")
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
    ap.add_argument(
        "--calibrate",
        type=int,
        default=0,
        metavar="K",
        help="first calibrate the mix's training tasks with K replies each (rlvr tasks calibrate)",
    )
    ap.add_argument("--calibrated", default="", metavar="FILE", help="a calibrated task file of the mix to train on")
    ap.add_argument(
        "--reread",
        action="store_true",
        help="read the JSON's runs again from --out (figures added since they ran), train nothing",
    )
    args = ap.parse_args(argv)
    if args.configs is None:
        calibrating = args.calibrate or args.calibrated
        default = ["uniform", "scheduler" if args.mix in BASE else "bandit"]
        args.configs = ["learnability", "calibrated"] if calibrating else default
    if "calibrated" in args.configs and not (args.calibrate or args.calibrated):
        ap.error("--configs calibrated needs --calibrate K or --calibrated FILE")
    if args.keep and args.calibrate:
        ap.error("--keep with --calibrate: a new calibration is another task file; pass the kept one as --calibrated")
    if args.mix in BASE and (args.calibrate or args.calibrated):
        ap.error(f"--mix {args.mix}: calibrate a mix of task sources (its example has domain records)")
    if args.mix in BASE and set(args.configs) - set(HUNDRED):
        ap.error(f"--mix {args.mix} compares {' and '.join(HUNDRED)} (its example holds the scheduler)")
    extra = ["eval.sources=[bundled:humaneval]"] if args.humaneval else []
    extra += args.set
    if args.smoke:
        if args.keep:
            ap.error("--smoke keeps nothing: drop --keep")
        args.seeds, args.steps, args.eval_every = [0], 2, 1
        extra += [*SMOKE, "eval.num_tasks=4", "eval.max_new_tokens=8"]
    mix = MIXES[args.mix] or f"examples/{BASE[args.mix]}.yaml"
    setting = {"mix": mix, "steps": args.steps, "eval_every": args.eval_every, "humaneval": args.humaneval}
    if args.set:
        setting["set"] = args.set
    calibration: dict[str, Any] = {}
    if args.calibrated:
        setting["calibrated"] = check_calibrated(Path(args.calibrated), args.mix)
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
    if args.reread:
        if not args.out or not json_path.exists():
            ap.error("--reread needs --out (where the runs are) and the JSON they were written to")
        results = json.loads(json_path.read_text())
        for key, m in results["runs"].items():
            config, seed = key.split("/")
            run = Path(args.out) / args.mix / f"{config}-seed{seed}"
            if run.is_dir():
                m |= {**measure(run, args.eval_every), **draws(run), **final_outcomes(run)}
        results["summary"] = summarize(results, args.seeds, args.configs)
        json_path.write_text(json.dumps(results, indent=1) + "\n")
        print(f"written {json_path}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        if args.calibrate:
            out.mkdir(parents=True, exist_ok=True)
            smoke = [*SMOKE, "tasks.max_difficulty=1"]  # a smoke run measures the easiest tasks only
            cal_path, calibration = calibrate(args.mix, args.calibrate, out, smoke if args.smoke else [])
            args.calibrated = str(cal_path)
            results["calibrated"] = check_calibrated(cal_path, args.mix)
            results["calibration"] = calibration
            secs = f"{calibration['elapsed_s']:.0f} s (generation {calibration['generate_s']:.0f} s)"
            print(f"calibrated {calibration['measured']} tasks, {args.calibrate} replies each, in {secs}", flush=True)
        for seed in args.seeds:
            for config in args.configs:
                if f"{config}/{seed}" in results["runs"]:
                    continue
                run, wall = train(
                    config, seed, args.steps, args.eval_every, out / args.mix, extra, args.mix, args.calibrated
                )
                m = {"wall_s": round(wall, 1), **measure(run, args.eval_every), **draws(run), **final_outcomes(run)}
                if args.humaneval:
                    summary = json.loads((run / "summary.json").read_text())
                    m["humaneval"] = {k: (v or {}).get("pass_at_1") for k, v in summary["suites"]["humaneval"].items()}
                results["runs"][f"{config}/{seed}"] = m
                if not args.smoke:  # a smoke run is a check, not a figure: nothing is recorded
                    json_path.write_text(json.dumps(results, indent=1) + "\n")  # each run kept as it ends
                print(
                    f"{config} seed {seed}: {wall / 60:.1f} min, informative {m['informative']:.3f}, "
                    f"zero-advantage generation {m['zero_advantage_gen_s']:.0f} of {m['gen_s']:.0f} s, "
                    f"pass@1 {m['pass_at_1'][0][1]:.3f} -> {m['pass_at_1'][-1][1]:.3f}, "
                    f"{len(m['zero_draw_domains'])} of {m['domains']} domains never drawn, "
                    f"family diversity {m['family_diversity']:.3f}",
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
