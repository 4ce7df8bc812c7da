"""Which tasks to sample next (the `curriculum` section of the run config).

`Curriculum` composes two choices: how draws are shared among domains
(`domain_mix`: pooled, fixed, bandit; rlvr.curriculum.mix) and which tasks a domain's
pool gives (`strategy`: uniform, learnability, ladder; rlvr.curriculum.pools). Every
group the run generates is reported back (`observe`): it updates the per-task success
estimates (rlvr.curriculum.estimates; by default a reply's success is its reward clipped
to 0..1; `evidence: informative` estimates instead whether a group teaches), the
ladder's window (replies that solved the task) and the bandit's scores.

With `prefilter` set, a drawn task whose estimate says its whole group will agree (all
solved or all failed) with at least that probability is skipped before any generation
(every fourth such draw is generated anyway, so the estimate can change) and another is
drawn; DAPO's refill still applies after generation.

Deterministic: each `sample` call draws from a generator seeded by the run seed and the
call's number, and the whole state (estimates, pools, scores, counters) is part of
checkpoints, so a resumed run samples exactly what the uninterrupted one would. With the
defaults (pooled, uniform, no prefilter) it samples what rlvr's sampler always did.

`metrics()` gives the step's figures, logged under `curriculum/`: the domain and
difficulty shares of the draws, the bandit's or fixed weights, the share of informative
groups (rewards not all equal), the draws' family diversity (distinct families per
draw), retired and starving tasks (not drawn in the last three
epochs' worth of draws), tasks skipped by the prefilter, and calibration (the success
rate the estimates predicted for this step's groups beside the one observed, both in
the estimates' units: mean clipped reward, the share solved, or the share of groups
informative).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from rlvr.config.curriculum import CurriculumConfig
from rlvr.curriculum.estimates import TaskEstimates
from rlvr.curriculum.mix import POOLED, DomainMix
from rlvr.curriculum.pools import POOLS, family_of
from rlvr.tasks import calibration
from rlvr.types import Task

STRATEGIES = tuple(POOLS)
DOMAIN_MIXES = ("pooled", "fixed", "bandit")
REVISIT_EVERY = 4  # a prefiltered task is generated on every fourth draw


@dataclass(frozen=True)
class Outcome:
    """One generated group of a task: each reply's reward and whether it solved the task."""

    task_id: str
    rewards: list[float]
    solved: list[bool]


def evidence_of(rewards: list[float]) -> float:
    """A group's successes when partial credit counts: the sum of its rewards, each
    clipped to 0..1 (a penalty counts as 0, a bonus above 1 as 1)."""
    return sum(min(1.0, max(0.0, r)) for r in rewards)


def start_evidence(tasks: list[Task], cfg: CurriculumConfig, group_size: int) -> dict[str, tuple[float, float]]:
    """Each calibrated task's evidence before the run, in the estimates' units (none with
    calibration_weight 0)."""
    if not cfg.calibration_weight:
        return {}
    out = {}
    for t in tasks:
        cal = calibration.of(t)
        if cal is not None:
            out[t.id] = calibration.evidence(cal, cfg.evidence, group_size, cfg.calibration_weight)
    return out


class Curriculum:
    def __init__(self, tasks: list[Task], seed: int, cfg: CurriculumConfig | None = None, group_size: int = 1) -> None:
        if not tasks:
            raise ValueError("the curriculum needs at least one task")
        self.cfg = cfg = cfg or CurriculumConfig()
        self.tasks, self.seed, self.group_size = tasks, seed, group_size
        self.by_id = {t.id: t for t in tasks}
        self.est = TaskEstimates(
            tasks,
            cfg.prior_strength,
            cfg.memory,
            cfg.retire_after,
            cfg.pool_by,
            pool_cells=cfg.pool_cells,
            group_events=group_size if cfg.evidence == "informative" else 0,
            start=start_evidence(tasks, cfg, group_size),
        )
        self.mix = DomainMix(sorted({t.domain for t in tasks}), cfg)
        pool = POOLS[cfg.strategy]
        if cfg.domain_mix == "pooled":
            self.pools = {POOLED: pool(tasks, str(seed), cfg, self.est)}
        else:
            self.pools = {
                d: pool([t for t in tasks if t.domain == d], f"{seed}:{d}", cfg, self.est) for d in self.mix.domains
            }
        self.calls = 0  # sample() calls
        self.drawn = 0  # tasks drawn
        self.last_drawn: dict[str, int] = {}  # task id -> `drawn` when it was last drawn
        self.skips: Counter[str] = Counter()  # prefilter: times each task was found predictable
        self.step: defaultdict[str, float] = defaultdict(float)
        self.step_draws: list[Task] = []

    def _pool_of(self, task: Task) -> str:
        return POOLED if self.cfg.domain_mix == "pooled" else task.domain

    def _draw(self, n: int, rng: random.Random) -> list[Task]:
        if self.cfg.domain_mix == "pooled":
            return self.pools[POOLED].draw(n, rng)
        counts = Counter(self.mix.allocate(n, rng))
        return [t for d in sorted(counts) for t in self.pools[d].draw(counts[d], rng)]

    def _predictable(self, task: Task) -> bool:
        """Prefilter: the group would agree with high confidence, and this is not a revisit."""
        if self.cfg.prefilter is None or self.est.p_all_equal(task.id, self.group_size) < self.cfg.prefilter:
            return False
        self.skips[task.id] += 1
        return self.skips[task.id] % REVISIT_EVERY != 0

    def sample(self, n: int) -> list[Task]:
        rng = random.Random(f"{self.seed}:curriculum:{self.calls}")
        self.calls += 1
        out: list[Task] = []
        for _ in range(4 if self.cfg.prefilter is not None else 1):
            for t in self._draw(n - len(out), rng):
                if self._predictable(t):
                    self.step["prefiltered"] += 1
                else:
                    out.append(t)
            if len(out) >= n:
                break
        if len(out) < n:  # everything left is predictable: generate it anyway
            out += self._draw(n - len(out), rng)
        for t in out:
            self.drawn += 1
            self.last_drawn[t.id] = self.drawn
        self.step_draws += out
        return out

    def observe(self, outcomes: list[Outcome]) -> None:
        for o in outcomes:
            task = self.by_id.get(o.task_id)
            if task is None or not o.solved:
                continue  # a canary twin or a task from elsewhere: not the curriculum's
            n, k = len(o.solved), sum(o.solved)
            informative = max(o.rewards) - min(o.rewards) > 1e-9  # as the learner's group filter counts it
            if self.cfg.evidence == "informative":  # one event per group: did it teach?
                x, events = float(informative), 1
            else:
                x, events = (k if self.cfg.evidence == "solved" else evidence_of(o.rewards)), n
            predicted = self.est.p(task.id)
            self.est.observe(task.id, x, events)
            self.pools[self._pool_of(task)].observe(task, k, n)
            self.mix.observe(task.domain, o.rewards)
            self.step["groups"] += 1
            self.step["informative"] += informative
            self.step["predicted"] += predicted
            self.step["observed"] += x / events
            self.step["abs_error"] += abs(predicted - x / events)

    def metrics(self) -> dict[str, float]:
        """This step's figures (since the last call), then a fresh count."""
        s, draws = self.step, self.step_draws
        out: dict[str, float] = {
            "retired": float(sum(self.est.retired(t.id) for t in self.tasks)),
            "starving": float(self._starving()),
            "prefiltered": float(s["prefiltered"]),
        }
        if s["groups"]:
            g = s["groups"]
            out |= {
                "informative": s["informative"] / g,
                "predicted_pass": s["predicted"] / g,
                "observed_pass": s["observed"] / g,
                "calibration_error": s["abs_error"] / g,
            }
        for domain, n in Counter(t.domain for t in draws).items():
            out[f"domain_share/{domain}"] = n / len(draws)
        if draws:  # how diverse the draws were: distinct families (pool_by) per draw
            out["family_diversity"] = len({family_of(t, self.cfg.pool_by) for t in draws}) / len(draws)
        for level, count in Counter(t.difficulty for t in draws).items():
            out[f"difficulty_share/{level}"] = count / len(draws)
        if self.cfg.domain_mix != "pooled":
            out |= {f"domain_weight/{d}": w for d, w in self.mix.shares().items()}
        for name, pool in self.pools.items():
            for key, value in pool.metrics().items():
                if not math.isnan(value):
                    out[key if name == POOLED else f"{key}/{name}"] = value
        self.step, self.step_draws = defaultdict(float), []
        return out

    def _starving(self) -> int:
        """Tasks not drawn in the last three epochs' worth of draws (3 x the task count)."""
        horizon = 3 * len(self.tasks)
        if self.drawn < horizon:
            return 0
        return sum(1 for t in self.tasks if self.drawn - self.last_drawn.get(t.id, 0) >= horizon)

    def state_dict(self) -> dict[str, Any]:
        return {
            "curriculum": 1,
            "calls": self.calls,
            "drawn": self.drawn,
            "last_drawn": dict(self.last_drawn),
            "skips": dict(self.skips),
            "evidence": self.cfg.evidence,  # the estimates' units
            "estimates": self.est.state_dict(),
            "mix": self.mix.state_dict(),
            "pools": {name: pool.state_dict() for name, pool in self.pools.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "curriculum" not in state:  # a checkpoint from before the curriculum: the uniform sampler's position
            if not (self.cfg.domain_mix == "pooled" and self.cfg.strategy == "uniform"):
                raise ValueError(
                    "this checkpoint holds the uniform sampler's position only: resume it with "
                    "curriculum.strategy uniform and curriculum.domain_mix pooled"
                )
            self.pools[POOLED].load_state_dict(state)
            return
        self.calls, self.drawn = int(state["calls"]), int(state["drawn"])
        self.last_drawn = {k: int(v) for k, v in state["last_drawn"].items()}
        self.skips = Counter({k: int(v) for k, v in state["skips"].items()})
        saved = state.get("evidence", "solved")  # before the setting existed: solved replies
        if saved == self.cfg.evidence:
            self.est.load_state_dict(state["estimates"])
        elif "evidence" in state:
            raise ValueError(
                f"this checkpoint's curriculum estimates count evidence {saved!r}, not {self.cfg.evidence!r}: "
                f"resume with curriculum.evidence={saved} (the estimates are in different units)"
            )
        # else: a checkpoint from before `evidence`, resumed with other units: the
        # estimates start afresh, the rest of the state (draws, pools, bandit) is kept
        self.mix.load_state_dict(state["mix"])
        for name, pool_state in state["pools"].items():
            if name in self.pools:
                self.pools[name].load_state_dict(pool_state)
