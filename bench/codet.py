"""Generated tests as a verifier (issue 36, item 6): on the quickstart's held-out Python
tasks, does ranking a group's solutions by the tests the same policy wrote (CodeT's dual
agreement, rlvr.envs.codet) pick a passing solution more often than chance?

Per held-out task that has a test-writing counterpart (metadata.source_task):
    1. N solutions from the policy (the quickstart's prompt, temperature 1), each scored
       by the task's tests and drawn hidden tests as training scores it;
    2. M test replies from the same policy to the test-writing prompt of that function
       (spec and signature, no code), pooled (unreadable or flagged replies give none);
    3. the pooled tests run against every solution in the sandbox, and the pick.
Figures (best-of-N pass@1, the picked solution solved or not), against the same samples:
    random     the expected pass rate of one solution drawn at random (the baseline)
    codet      the consensus pick; where no test passed anywhere, the random expectation
    gold       the same pick with the test-writing task's gold tests in place of the
               policy's (an upper line for the verifier, not for the policy)
    oracle     a task passes when any of its N does
and how often the policy's tests said anything (some test passed somewhere).

    .venv/bin/python bench/codet.py [--model DIR] [--n 8] [--m 8]
    .venv/bin/python bench/codet.py --smoke     # tiny model, 3 tasks, nothing recorded

Results: bench/results/codet.json (the device named).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "examples/quickstart.yaml")
TW = str(ROOT / "examples/test_writing.yaml")
SMOKE = ["model.name_or_path=tiny-random", "generation.max_new_tokens=8"]


def sample(model_path: str | None, n: int, m: int, smoke: bool) -> tuple[list[dict[str, Any]], str]:
    """Per task: its solutions' verdicts and the picks (see the module docstring)."""
    from rlvr.config import load_config
    from rlvr.envs.codet import consensus_pick, pass_matrix, pooled_tests, solution_code
    from rlvr.envs.settings import env_settings
    from rlvr.rewards.hidden_tests import for_step as drawn_for_step
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.factory import make_engine
    from rlvr.rollout.models import load_policy
    from rlvr.rollout.runner import episode_settings, run_episodes
    from rlvr.tasks import load_tasks, split_tasks
    from rlvr.trace.store import solved

    over = SMOKE if smoke else []
    py, tw = load_config(QUICK, over), load_config(TW, over)
    _, held = split_tasks(load_tasks(py.tasks.source), py.tasks.eval_fraction)
    writing = {str(t.metadata.get("source_task")): t for t in load_tasks(tw.tasks.source, 1, tw.tasks.max_difficulty)}
    held = [t for t in held if t.id in writing][: 3 if smoke else None]
    name = model_path or py.model.name_or_path
    model, tok = load_policy(name, seed=py.seed)
    engine = make_engine(py, model, tok)

    def params(cfg: Any, seed: int) -> SamplingParams:
        g = cfg.generation
        return SamplingParams(max_new_tokens=g.max_new_tokens, temperature=1.0, top_p=1.0, stop=tuple(g.stop),
                              seed=seed)  # fmt: skip

    tasks = [drawn_for_step(t, py.reward, seed=py.seed, step=0) for t in held]
    sols = run_episodes(tasks, engine=engine, tokenizer=tok, episodes=episode_settings(py, group_size=n),
                        params=params(py, 7))  # fmt: skip
    tw_tasks = [writing[t.id] for t in held]
    tests = run_episodes(tw_tasks, engine=engine, tokenizer=tok, episodes=episode_settings(tw, group_size=m),
                         params=params(tw, 11))  # fmt: skip
    settings = env_settings(py)
    rows = []
    for i, task in enumerate(held):
        group = sols[i * n : (i + 1) * n]
        replies = [next((x.content for x in reversed(t.turns) if x.role == "assistant"), "") for t in group]
        programs = [solution_code(task, r) for r in replies]
        said = [next((x.content for x in reversed(t.turns) if x.role == "assistant"), "")
                for t in tests[i * m : (i + 1) * m]]  # fmt: skip
        own = pooled_tests(said, str(task.entry_point))
        gold = pooled_tests([f"```python\n{tw_tasks[i].metadata['reference_tests']}\n```"], str(task.entry_point))
        picks = {}
        for label, pool in (("codet", own), ("gold", gold)):
            picks[label] = consensus_pick(pass_matrix(task, programs, pool, settings)) if pool else None
        rows.append({"task_id": task.id, "passed": [solved(t) for t in group], "tests": len(own),
                     "codet_pick": picks["codet"], "gold_pick": picks["gold"]})  # fmt: skip
    return rows, name


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        raise SystemExit("no tasks: there is no figure")
    chance = [sum(r["passed"]) / len(r["passed"]) for r in rows]

    def picked(key: str) -> list[float]:
        return [float(r["passed"][r[key]]) if r[key] is not None else c for r, c in zip(rows, chance, strict=True)]

    spoke = [r for r in rows if r["codet_pick"] is not None]
    figures = {
        "tasks": len(rows),
        "samples": len(rows[0]["passed"]),
        "random": statistics.fmean(chance),
        "codet": statistics.fmean(picked("codet_pick")),
        "gold": statistics.fmean(picked("gold_pick")),
        "oracle": statistics.fmean(float(any(r["passed"])) for r in rows),
        "tests_said_something": len(spoke) / len(rows),
        "mean_tests_pooled": statistics.fmean(r["tests"] for r in rows),
    }
    if spoke:  # where the policy's tests spoke: the pick against chance on those tasks alone
        figures["codet_where_spoke"] = statistics.fmean(float(r["passed"][r["codet_pick"]]) for r in spoke)
        figures["random_where_spoke"] = statistics.fmean(sum(r["passed"]) / len(r["passed"]) for r in spoke)
    print(f"\nbest-of-{figures['samples']} pass@1 on {len(rows)} held-out Python tasks, the solution picked by")
    for k in ("random", "codet", "gold", "oracle"):
        print(f"  {k:<7} {figures[k]:.3f}")
    print(f"the policy's tests said something on {figures['tests_said_something']:.2f} of the tasks "
          f"({figures['mean_tests_pooled']:.1f} tests pooled a task)")  # fmt: skip
    if spoke:
        print(f"  there: codet {figures['codet_where_spoke']:.3f} against random {figures['random_where_spoke']:.3f}")
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a model directory (default: the quickstart's model)")
    ap.add_argument("--n", type=int, default=8, help="solutions a task")
    ap.add_argument("--m", type=int, default=8, help="test replies a task")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--report", metavar="RESULTS", help="print the figures of a recorded result")
    ap.add_argument("--out", default=str(ROOT / "bench/results/codet.json"))
    a = ap.parse_args()
    if a.report:
        print(json.dumps(report(json.loads(Path(a.report).read_text())["rows"])))
        return
    n, m = (2, 2) if a.smoke else (a.n, a.m)
    t0 = time.perf_counter()
    rows, name = sample(a.model, n, m, a.smoke)
    figures = report(rows)
    if not a.smoke:
        sys.path.insert(0, str(ROOT / "bench"))
        from machine import cpu_kind, cpu_name

        machine = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
        saved = {"machine": machine, "model": name, "n": n, "m": m, "rows": rows, "figures": figures,
                 "wall_s": time.perf_counter() - t0}  # fmt: skip
        Path(a.out).write_text(json.dumps(saved, indent=2))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
