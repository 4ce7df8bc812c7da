"""Issue 36's measurements of the test-writing domain, as a user runs them.

    cost    the reward's price per reply, on the held-out tasks' gold tests: wall time (p50,
            p95) and the sandbox's CPU, rlvr's one sandbox run per reply (each (program,
            test) in its own fork of it) beside one sandbox run per program (the plain
            way: the same tests, a run started per program), with the rewards of both
            checked equal
    corpus  labelled replies on the held-out tasks, each scored as training scores it:
            the gold tests, one good assert, `assert True`, a call with no assert, a
            test failing on the function, a redefinition of it, and one reply per guard
            (introspection, unseeded random, a clock): mean reward and the flags raised
    train   `rlvr train examples/test_writing.yaml` per seed (the embedded model): on the
            held-out tasks, before and after, the mutation score on each family (the mean
            kill share of the replies whose tests pass on the function, 0 for the others)
            and the reference-pass rate (replies with tests, none failing on the function)

    .venv/bin/python bench/test_writing.py [--parts cost corpus train] [--seeds 0 1 2] [--steps 40]
    .venv/bin/python bench/test_writing.py --smoke    # a few tasks, a tiny model, nothing recorded

Results: bench/results/test_writing.json (the device named).
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
    """The reward's cost per reply, one sandbox run beside one run per program."""
    from rlvr.config import load_config
    from rlvr.envs.settings import env_settings
    from rlvr.envs.test_writing import REFERENCE_RUNS, TEST_LIMIT_S, TestWritingEnv
    from rlvr.rewards.mutation_score import Outcome, score
    from rlvr.rewards.test_guards import read_tests

    settings = env_settings(load_config())
    env = TestWritingEnv(settings)
    forked = TestWritingEnv(settings, isolation="process")
    one: list[float] = []
    process: list[float] = []
    per_program: list[float] = []
    cpu_one = cpu_many = 0.0
    forks = 0
    same = True
    for task in tasks:
        asyncio.run(env.reset(task))
        reply = task.metadata["reference_tests"]
        t0 = time.perf_counter()
        step = asyncio.run(env.step(reply))
        one.append(time.perf_counter() - t0)
        assert step.execution is not None and step.reward is not None
        cpu_one += step.execution.cpu_time_s
        asyncio.run(forked.reset(task))
        t0 = time.perf_counter()
        other = asyncio.run(forked.step(reply))
        process.append(time.perf_counter() - t0)
        same = same and other.reward is not None and abs(other.reward.total - step.reward.total) < 1e-9
        read = read_tests(reply, str(task.entry_point))
        programs = env.programs(task)
        forks += len(programs) * len(read.tests)
        # the plain way: a sandbox run per program, its tests in the task's usual shared mode
        t0 = time.perf_counter()
        rows = []
        for _, source in programs:
            r = settings.execute(
                source, {"format": "script", "tests": [f"{read.setup}\n{t.source}" for t in read.tests]}
            )
            cpu_many += r.cpu_time_s
            rows.append([Outcome({"PASSED": "pass", "TIMEOUT": "timeout"}.get(x.status.value, "fail"), x.duration_s)
                         for x in r.tests])  # fmt: skip
        per_program.append(time.perf_counter() - t0)
        mutants = {m["id"]: row for m, row in zip(task.tests["mutants"], rows[REFERENCE_RUNS:], strict=True)
                   if m.get("family", "train") == "train"}  # fmt: skip
        plain = score(rows[:REFERENCE_RUNS], mutants, TEST_LIMIT_S)
        same = same and abs(plain.reward - step.reward.total) < 1e-9
    n = len(tasks)
    return {
        "tasks": n,
        "forks_per_reply": forks / n,
        "rlvr_p50_s": statistics.median(one),
        "rlvr_p95_s": _pct(one, 0.95),
        "rlvr_cpu_s_per_reply": cpu_one / n,
        "rlvr_fork_per_test_p50_s": statistics.median(process),
        "rlvr_fork_per_test_p95_s": _pct(process, 0.95),
        "per_program_p50_s": statistics.median(per_program),
        "per_program_p95_s": _pct(per_program, 0.95),
        "per_program_cpu_s_per_reply": cpu_many / n,
        "speedup_p50": statistics.median(per_program) / statistics.median(one),
        "same_rewards": same,
    }


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


def train(seeds: list[int], steps: int, smoke: bool) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            name = f"tw-{seed}"
            args = [sys.executable, "-m", "rlvr.cli", "train", str(ROOT / "examples/test_writing.yaml"), "--plain",
                    f"output_dir={tmp}", f"name={name}", f"seed={seed}", f"train.steps={steps}"]  # fmt: skip
            if smoke:
                args += ["model.name_or_path=tiny-random", "generation.max_new_tokens=16", "eval.num_tasks=3",
                         "train.prompts_per_step=2", "algo.group_size=2"]  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"rlvr train (seed {seed}): exit {done.returncode}: {done.stderr.strip()[-400:]}")
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            figures = _eval_figures(str(Path(tmp) / name / "traces"))
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            rows.append({"seed": seed, "steps": steps, "wall_s": time.perf_counter() - t0, "cpu_s": cpu, **figures})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", nargs="+", default=["cost", "corpus", "train"], choices=["cost", "corpus", "train"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--tasks", type=int, help="held-out tasks for cost and corpus (default: all)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default="bench/results/test_writing.json")
    a = ap.parse_args()
    tasks = held_out(3 if a.smoke else a.tasks)
    result: dict[str, Any] = {}
    if "cost" in a.parts:
        result["cost"] = cost(tasks)
        print(json.dumps({"cost": result["cost"]}), file=sys.stderr, flush=True)
    if "corpus" in a.parts:
        result["corpus"] = corpus(tasks)
        print(json.dumps({"corpus": result["corpus"]}), file=sys.stderr, flush=True)
    if "train" in a.parts:
        result["train"] = train(a.seeds, 1 if a.smoke else a.steps, a.smoke)
    if not a.smoke:
        from machine import cpu_kind, cpu_name

        result["machine"] = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
        Path(a.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
