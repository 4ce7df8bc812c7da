"""Issue 36's measurements of the test-writing domain, as a user runs them.

    cost    the reward's price per reply, on the held-out tasks' gold tests: wall time (p50,
            p95) and the sandbox's CPU, rlvr's way (a sandbox run per program, several at
            once, each program's tests in shared test processes) beside the same runs one
            at a time and beside a fork per (program, test) script, with the rewards of
            all three checked equal
    corpus  labelled replies on the held-out tasks, each scored as training scores it:
            the gold tests, one good assert, `assert True`, a call with no assert, a
            test failing on the function, a redefinition of it, and one reply per guard
            (introspection, unseeded random, a clock): mean reward and the flags raised
    train   `rlvr train examples/test_writing.yaml` per seed (the embedded model): on the
            held-out tasks, before and after, the mutation score on each family (the mean
            kill share of the replies whose tests pass on the function, 0 for the others)
            and the reference-pass rate (replies with tests, none failing on the function).
            `--arms rl sft_rl` also runs the warm start, `stages: [sft, rl]` with
            `sft.data: [tasks]` (the training tasks' gold tests), then the same RL steps:
            its figures are before, after the SFT stage and after the RL stage, its CPU the
            whole run's (the SFT stage costs extra; it is not taken out of the RL steps)
    sources the other task sources, greedy on their held-out tasks (`rlvr eval`): pass@1
            and mean reward of the base model beside a warm-started one (--model): the
            bug-revealing set (bundled:test_writing_repair) and, with --repo-tasks, a
            file `rlvr repos test-writing` wrote (not a default part)

    .venv/bin/python bench/test_writing.py [--parts cost corpus train] [--seeds 0 1 2] [--steps 40]
    .venv/bin/python bench/test_writing.py --parts sources --model DIR --repo-tasks tw_repos.jsonl \
        --out bench/results/test_writing_sources.json
    .venv/bin/python bench/test_writing.py --parts train --arms rl sft_rl --seeds 0 1 2 --keep
    .venv/bin/python bench/test_writing.py --smoke    # a few tasks, a tiny model, nothing recorded

Results: bench/results/test_writing.json (the device named); the sources part as recorded:
bench/results/test_writing_sources.json (DIR: the SFT stage's model of a `--arms sft_rl`
run, kept; tw_repos.jsonl: `rlvr repos test-writing NAME --out ...` for each project).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def _gold(t: Any) -> str:
    return str(t.metadata["reference_tests"])


def _first(t: Any) -> str:
    return _gold(t).splitlines()[0]


CORPUS = {
    "gold tests": _gold,
    "one good assert": _first,
    "assert True": lambda t: "assert True",
    "a call, no assert": lambda t: _first(t).replace("assert ", "x = ", 1).split(" == ")[0],
    "fails on the function": lambda t: _first(t).replace(" == ", " != ", 1),
    "redefines it": lambda t: f"def {t.entry_point}(*a):\n    return None\n" + _gold(t),
    "introspection": lambda t: f"import inspect\nassert inspect.getsource({t.entry_point})\n" + _gold(t),
    "unseeded random": lambda t: "import random\nR = random.random()\n" + _gold(t),
    "clock": lambda t: "import time\nT0 = time.perf_counter()\n" + _gold(t),
}


def held_out(n: int | None) -> list[Any]:
    from rlvr.tasks import load_tasks
    from rlvr.tasks.loader import in_eval

    tasks = [t for t in load_tasks("bundled:test_writing") if in_eval(t, 0.2)]
    return tasks[:n] if n else tasks


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def cost(tasks: list[Any]) -> dict[str, Any]:
    """The reward's cost per reply: rlvr's way (a sandbox run per program, PARALLEL_RUNS
    at once, each program's tests in shared test processes) beside the same runs one at
    a time, and beside a fork per (program, test) script."""
    from rlvr.config import load_config
    from rlvr.envs.settings import env_settings
    from rlvr.envs.test_writing import TestWritingEnv
    from rlvr.rewards.test_guards import read_tests

    settings = env_settings(load_config())
    variants = {
        "rlvr": TestWritingEnv(settings),
        "one_at_a_time": TestWritingEnv(settings, parallel=1),
        "fork_per_script": TestWritingEnv(settings, isolation="process"),
    }
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu = dict.fromkeys(variants, 0.0)
    scripts = 0
    same = True
    for task in tasks:
        reply = task.metadata["reference_tests"]
        scripts += len(variants["rlvr"].programs(task)) * len(read_tests(reply, str(task.entry_point)).tests)
        rewards = []
        for name, env in variants.items():
            asyncio.run(env.reset(task))
            t0 = time.perf_counter()
            step = asyncio.run(env.step(reply))
            wall[name].append(time.perf_counter() - t0)
            assert step.execution is not None and step.reward is not None
            cpu[name] += step.execution.cpu_time_s
            rewards.append(step.reward.total)
        same = same and max(rewards) - min(rewards) < 1e-9
    n = len(tasks)
    out: dict[str, Any] = {"tasks": n, "scripts_per_reply": scripts / n, "same_rewards": same}
    for name in variants:
        out |= {f"{name}_p50_s": statistics.median(wall[name]), f"{name}_p95_s": _pct(wall[name], 0.95),
                f"{name}_cpu_s_per_reply": cpu[name] / n}  # fmt: skip
    out["speedup_p50_vs_one_at_a_time"] = out["one_at_a_time_p50_s"] / out["rlvr_p50_s"]
    return out


def corpus(tasks: list[Any]) -> dict[str, Any]:
    """Each labelled reply's mean reward and the flags raised, over the tasks."""
    from rlvr.config import load_config
    from rlvr.envs.scoring import score_completion

    cfg = load_config()
    out: dict[str, Any] = {}
    for label, make in CORPUS.items():
        rewards, flags = [], {}
        for task in tasks:
            t = score_completion(task, f"```python\n{make(task)}\n```", cfg)
            assert t.reward is not None
            rewards.append(t.reward.total)
            for f in t.reward.flags:
                flags[f] = flags.get(f, 0) + 1
        out[label] = {"mean_reward": sum(rewards) / len(rewards), "flags": flags}
    return out


def _eval_figures(store: str) -> dict[str, dict[str, float]]:
    """Per phase (before, after): the mutation score on each family and the reference-pass rate."""
    from rlvr.trace.parquet import read_table

    rows = read_table(store, "eval_trajectories").to_pylist()
    evals = read_table(store, "evals").to_pylist()
    out = {}
    for e in evals:
        mine = [r for r in rows if r["step"] == e["step"]]
        comps = [dict(r["reward_components"] or []) for r in mine]
        details = [json.loads(r["reward_details"] or "{}").get("completion", {}) for r in mine]
        passing = [d.get("reason") == "scored" for d in details]
        out[e["phase"]] = {
            "mutation_score": sum(c.get("kill_share", 0.0) for c in comps) / len(mine),
            "mutation_score_hidden": sum(c.get("kill_share_hidden", 0.0) for c in comps) / len(mine),
            "reference_pass": sum(passing) / len(mine),
            "pass_at_1": e["pass_at_1"],
        }
    return out


# the warm start's SFT stage: bench/warm_start.py's sizes (2 epochs over the training tasks' gold tests)
SFT_STAGE = ["stages=[sft,rl]", "sft.data=[tasks]", "sft.epochs=2", "sft.batch_size=8", "sft.micro_batch_size=8",
             "sft.lr=2e-5", "sft.warmup_steps=2", "sft.schedule=cosine"]  # fmt: skip
SMOKE_TRAIN = ["model.name_or_path=tiny-random", "generation.max_new_tokens=16", "eval.num_tasks=3",
               "train.prompts_per_step=2", "algo.group_size=2"]  # fmt: skip


def train_arm(arm: str, seed: int, steps: int, smoke: bool, tmp: str) -> dict[str, Any]:
    """One seed of an arm: `rl` (RL alone) or `sft_rl` (SFT on the gold tests, then RL)."""
    name = f"tw-{arm}-{seed}"
    args = [sys.executable, "-m", "rlvr.cli", "train", str(ROOT / "examples/test_writing.yaml"), "--plain",
            f"output_dir={tmp}", f"name={name}", f"seed={seed}", f"train.steps={steps}"]  # fmt: skip
    if arm == "sft_rl":
        args += SFT_STAGE + (["sft.max_steps=1"] if smoke else [])
    if smoke:
        args += SMOKE_TRAIN
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"rlvr train ({arm}, seed {seed}): exit {done.returncode}: {done.stderr.strip()[-400:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = Path(tmp) / name
    if arm == "sft_rl":  # before and after the sft stage, then after the rl stage
        sft, rl = _eval_figures(str(run / "sft" / "traces")), _eval_figures(str(run / "rl" / "traces"))
        figures = {"before": sft["before"], "after_sft": sft["after"], "after": rl["after"]}
    else:
        figures = _eval_figures(str(run / "traces"))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    from machine import cpu_kind

    row = {"arm": arm, "seed": seed, "steps": steps, "wall_s": time.perf_counter() - t0, "cpu_s": cpu, **figures}
    return {**row, "cpu_kind": cpu_kind()}  # rows kept across sessions may come from different machines


def train(
    arms: list[str],
    seeds: list[int],
    steps: int,
    smoke: bool,
    done: list[dict[str, Any]],
    save: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Each (arm, seed) not in `done` (rows of the same steps kept from an earlier run);
    `save(rows)` after each, so a stopped bench keeps the runs it finished."""
    rows = list(done)
    have = {(r.get("arm", "rl"), r["seed"]) for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            for arm in arms:
                if (arm, seed) not in have:
                    rows.append(train_arm(arm, seed, steps, smoke, tmp))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                    if save is not None:
                        save(rows)
    return rows


def summarize_train(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm, the mean over its seeds of each figure at each phase, printed as a table."""
    out: dict[str, Any] = {}
    keys = ("mutation_score", "mutation_score_hidden", "reference_pass")
    print(f"\n{'arm':<7} {'seeds':>5} {'phase':<10} {'mutation':>9} {'hidden':>7} {'ref-pass':>9} {'CPU s':>7}")
    for arm in sorted({r.get("arm", "rl") for r in rows}):
        mine = [r for r in rows if r.get("arm", "rl") == arm]
        out[arm] = {"seeds": [r["seed"] for r in mine], "cpu_s": statistics.fmean(r["cpu_s"] for r in mine)}
        for phase in ("before", "after_sft", "after"):
            if all(phase in r for r in mine):
                out[arm][phase] = {k: statistics.fmean(r[phase][k] for r in mine) for k in keys}
                f, cpu = out[arm][phase], out[arm]["cpu_s"]
                print(f"{arm:<7} {len(mine):>5} {phase:<10} {f['mutation_score']:>9.3f} "
                      f"{f['mutation_score_hidden']:>7.3f} {f['reference_pass']:>9.3f} {cpu:>7.0f}")  # fmt: skip
    return out


def sources(model: str | None, repo_tasks: str | None, smoke: bool) -> dict[str, Any]:
    """Held-out pass@1 and mean reward (`rlvr eval`, greedy) of the base model and of
    `model` (a warm-started one) on the other task sources: the bug-revealing set from
    code_repair and, given a file written by `rlvr repos test-writing`, a repository's."""
    srcs = {"bug_revealing": "bundled:test_writing_repair"} | ({"repository": repo_tasks} if repo_tasks else {})
    models = {"base": None} | ({"model": model} if model else {})
    out: dict[str, Any] = {"model": model, "repo_tasks": repo_tasks}
    for name, src in srcs.items():
        for who, ck in models.items():
            args = [sys.executable, "-m", "rlvr.cli", "eval", str(ROOT / "examples/test_writing.yaml"), "--json",
                    f"tasks.source={src}"] + (["--checkpoint", ck] if ck else [])  # fmt: skip
            if smoke:
                args += ["model.name_or_path=tiny-random", "generation.max_new_tokens=8", "eval.num_tasks=3"]
            t0 = time.perf_counter()
            done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"rlvr eval ({name}, {who}): exit {done.returncode}: {done.stderr.strip()[-400:]}")
            got = json.loads(done.stdout.strip().splitlines()[-1])
            out[f"{name}/{who}"] = {k: got[k] for k in ("pass_at_1", "mean_reward", "num_tasks")}
            out[f"{name}/{who}"]["wall_s"] = time.perf_counter() - t0
            print(json.dumps({f"{name}/{who}": out[f"{name}/{who}"]}), file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--parts", nargs="+", default=["cost", "corpus", "train"], choices=["cost", "corpus", "train", "sources"]
    )
    ap.add_argument("--model", help="sources: a warm-started model directory to evaluate beside the base")
    ap.add_argument("--repo-tasks", help="sources: a file of `rlvr repos test-writing` tasks")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--arms", nargs="+", default=["rl"], choices=["rl", "sft_rl"], help="train: RL alone, SFT then RL")
    ap.add_argument("--keep", action="store_true", help="keep --out's parts and train rows of the same steps")
    ap.add_argument("--tasks", type=int, help="held-out tasks for cost and corpus (default: all)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench/results/test_writing.json"))
    a = ap.parse_args()
    if a.smoke and a.keep:
        ap.error("--smoke keeps nothing: drop --keep")
    tasks = held_out(3 if a.smoke else a.tasks)
    result: dict[str, Any] = {}
    kept: list[dict[str, Any]] = []
    if a.keep and Path(a.out).exists():
        result = json.loads(Path(a.out).read_text())
        kept = [r for r in result.get("train", []) if r["steps"] == a.steps]
    if "cost" in a.parts:
        result["cost"] = cost(tasks)
        print(json.dumps({"cost": result["cost"]}), file=sys.stderr, flush=True)
    if "corpus" in a.parts:
        result["corpus"] = corpus(tasks)
        print(json.dumps({"corpus": result["corpus"]}), file=sys.stderr, flush=True)
    if "sources" in a.parts:
        result["sources"] = sources(a.model, a.repo_tasks, a.smoke)
    if "train" in a.parts:

        def save(rows: list[dict[str, Any]]) -> None:
            if not a.smoke:
                Path(a.out).write_text(json.dumps({**result, "train": rows}, indent=2))

        result["train"] = train(a.arms, a.seeds, 1 if a.smoke else a.steps, a.smoke, kept, save)
        result["train_summary"] = summarize_train(result["train"])
    if not a.smoke:
        from machine import cpu_kind, cpu_name

        result["machine"] = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
        Path(a.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
