"""What scheduling a hundred domains costs per step (issue 37: at most 1% of a step).

Builds the curriculum of `examples/hundred_domains.yaml` over its tasks (reasoning-gym's
96 usable datasets drawn at run time plus the bundled sets: 107 domains), then times
what the run does with it each step: `sample` the step's prompts, `observe` their groups
(rewards drawn from a seeded per-task success rate, so estimates and the bandit move),
and `metrics`. The baseline beside it is the default curriculum (pooled, uniform) over
the same tasks. Printed in milliseconds per step (median over the steps, after 5
warm-up steps), with the share of a training step that is: by default the quickstart's
(rollout 71 s + learner 78 s over 24 steps of 4 prompts x 4 replies on two cores, the
README's seed 0: 6.2 s), a conservative yardstick, as the hundred-domain config's own
steps are four times the prompts (--step-s to give another).

    .venv/bin/python bench/scheduler_cost.py                # 200 steps of 16 prompts
    .venv/bin/python bench/scheduler_cost.py --steps 50 --out bench/results/scheduler_cost.json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from pathlib import Path

from rlvr.config import load_config
from rlvr.config.curriculum import CurriculumConfig
from rlvr.curriculum import Curriculum, Outcome
from rlvr.tasks import load_tasks
from rlvr.types import Task

ROOT = Path(__file__).resolve().parents[1]


def per_step_ms(tasks: list[Task], cfg: CurriculumConfig, steps: int, prompts: int, group: int) -> list[float]:
    cur = Curriculum(tasks, seed=0, cfg=cfg, group_size=group)
    rate = {t.id: random.Random(t.id).choice([0.0, 0.0, 0.2, 0.5, 0.8, 1.0]) for t in tasks}
    rng = random.Random(1)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        drawn = cur.sample(prompts)
        outcomes = []
        for t in drawn:
            solved = [rng.random() < rate[t.id] for _ in range(group)]
            outcomes.append(Outcome(t.id, [float(s) for s in solved], solved))
        cur.observe(outcomes)
        cur.metrics()
        times.append((time.perf_counter() - start) * 1000)
    return times[5:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--step-s", type=float, default=6.2, help="a training step's seconds to compare with")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cfg = load_config(ROOT / "examples" / "hundred_domains.yaml")
    tasks = load_tasks(cfg.tasks.source)
    domains = len({t.domain for t in tasks})
    prompts, group = cfg.train.prompts_per_step, cfg.algo.group_size
    rows = {}
    for name, c in (("uniform, pooled (default)", CurriculumConfig()), ("hundred_domains.yaml", cfg.curriculum)):
        ms = per_step_ms(tasks, c, args.steps, prompts, group)
        rows[name] = {"median_ms": statistics.median(ms), "p95_ms": sorted(ms)[int(0.95 * (len(ms) - 1))]}
    print(f"{len(tasks)} tasks, {domains} domains, {prompts} prompts x {group} replies a step, {args.steps} steps")
    print(f"{'curriculum':<28}{'median ms/step':>16}{'p95 ms':>10}{'share of a ' + str(args.step_s) + ' s step':>24}")
    for name, r in rows.items():
        share = r["median_ms"] / 1000 / args.step_s
        print(f"{name:<28}{r['median_ms']:>16.2f}{r['p95_ms']:>10.2f}{share:>23.3%}")
    if args.out:
        out = {
            "machine": platform.processor() or platform.machine(),
            "tasks": len(tasks),
            "domains": domains,
            "prompts": prompts,
            "group": group,
            "steps": args.steps,
            "step_s": args.step_s,
            "rows": rows,
        }
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
