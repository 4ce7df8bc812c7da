"""What the run has learnt about each task: a success estimate, streaks, retirement.

Each task's chance that one reply solves it is a Beta posterior over faded evidence:
`s` successes and `f` failures, each group observed fading the task's older evidence by
`memory` (the model changes, so old outcomes count less) and adding its own:

    s <- memory * s + successes,   f <- memory * f + failures.

The prior behind it has `prior_strength` (k) pseudo-observations. Its mean starts from
the task's difficulty (`PRIOR_MEAN`); tasks that are instances of one family (the same
`metadata[pool_by]` in the same domain, e.g. `add_{k}`) share what was seen of the
others: the prior mean of a task is its family's success rate without its own evidence,
shrunk towards the difficulty prior with the same k,

    m = (k * m_difficulty + S - s) / (k + S + F - s - f),   a = k * m + s,   b = k * (1 - m) + f,

with S, F the family's summed evidence. A task without a family (or alone in it) keeps
the difficulty prior. A short run visits few tasks twice, but many families more than
once, so pooling is what lets the estimate be informed early.

A task whose last `retire_after` groups were all solved, or all failed, is retired (its
groups teach nothing); one mixed group brings it back. `p_all_equal(task, g)` is the
posterior probability that a group of g replies agrees (all solved or all failed), in
closed form: E[p^g] + E[(1-p)^g] = prod (a+i)/(a+b+i) + prod (b+i)/(a+b+i), i < g.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlvr.types import Task

PRIOR_MEAN = {1: 0.7, 2: 0.4, 3: 0.15}
"""Prior success chance by difficulty; a level above 3 gets 0.1, an unknown one 0.5."""


def prior_mean(difficulty: int | None) -> float:
    if difficulty is None:
        return 0.5
    return PRIOR_MEAN.get(difficulty, 0.1 if difficulty > 3 else 0.5)


@dataclass
class Estimate:
    m0: float  # the difficulty prior's mean
    family: str | None  # the pooling key, None when the task shares with no other
    s: float = 0.0  # faded successes
    f: float = 0.0  # faded failures
    solved_streak: int = 0  # groups in a row all solved
    failed_streak: int = 0  # groups in a row all failed
    groups: int = 0


class TaskEstimates:
    def __init__(
        self, tasks: list[Task], prior_strength: float, memory: float, retire_after: int, pool_by: str = ""
    ) -> None:
        self.k, self.memory, self.retire_after = prior_strength, memory, retire_after
        keys = {t.id: family_key(t, pool_by) for t in tasks}
        sizes: dict[str, int] = {}
        for key in keys.values():
            if key is not None:
                sizes[key] = sizes.get(key, 0) + 1
        self.by_id: dict[str, Estimate] = {
            t.id: Estimate(prior_mean(t.difficulty), keys[t.id] if sizes.get(keys[t.id] or "", 0) > 1 else None)
            for t in tasks
        }
        self.families: dict[str, list[float]] = {}  # key -> [S, F]

    def _beta(self, task_id: str) -> tuple[float, float]:
        e, k = self.by_id[task_id], self.k
        m = e.m0
        if e.family is not None and e.family in self.families:
            fs, ff = self.families[e.family]
            others_s, others_f = max(fs - e.s, 0.0), max(ff - e.f, 0.0)
            m = (k * e.m0 + others_s) / (k + others_s + others_f)
        return k * m + e.s, k * (1 - m) + e.f

    def p(self, task_id: str) -> float:
        a, b = self._beta(task_id)
        return a / (a + b)

    def retired(self, task_id: str) -> bool:
        e = self.by_id[task_id]
        return max(e.solved_streak, e.failed_streak) >= self.retire_after

    def p_all_equal(self, task_id: str, group_size: int) -> float:
        a, b = self._beta(task_id)
        all_solved = all_failed = 1.0
        for i in range(group_size):
            all_solved *= (a + i) / (a + b + i)
            all_failed *= (b + i) / (a + b + i)
        return all_solved + all_failed

    def observe(self, task_id: str, successes: int, n: int) -> None:
        """One group of `n` replies to the task, `successes` of which solved it."""
        if n <= 0:
            return
        e = self.by_id[task_id]
        old = (e.s, e.f)
        e.s = self.memory * e.s + successes
        e.f = self.memory * e.f + (n - successes)
        if e.family is not None:
            fam = self.families.setdefault(e.family, [0.0, 0.0])
            fam[0] += e.s - old[0]
            fam[1] += e.f - old[1]
        e.groups += 1
        e.solved_streak = e.solved_streak + 1 if successes == n else 0
        e.failed_streak = e.failed_streak + 1 if successes == 0 else 0

    def state_dict(self) -> dict[str, Any]:
        return {
            "tasks": {
                tid: [e.s, e.f, e.solved_streak, e.failed_streak, e.groups] for tid, e in self.by_id.items() if e.groups
            },
            "families": {key: list(v) for key, v in self.families.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for tid, (s, f, solved, failed, groups) in state["tasks"].items():
            if tid in self.by_id:  # a task no longer in the set: its evidence goes
                e = self.by_id[tid]
                e.s, e.f, e.solved_streak, e.failed_streak, e.groups = (
                    float(s),
                    float(f),
                    int(solved),
                    int(failed),
                    int(groups),
                )
        # The family sums are kept as saved (not re-added from the tasks) so that a resumed
        # run computes bit for bit what the uninterrupted one did; a family whose tasks all
        # left the set is dropped, one no longer pooled is ignored.
        pooled = {e.family for e in self.by_id.values() if e.family is not None}
        self.families = {key: [float(v[0]), float(v[1])] for key, v in state["families"].items() if key in pooled}


def family_key(task: Task, pool_by: str) -> str | None:
    """The key a task pools its evidence under: domain and `metadata[pool_by]`, or None."""
    if not pool_by:
        return None
    value = task.metadata.get(pool_by)
    return None if value is None else f"{task.domain}\x00{value}"
