"""What the run has learnt about each task: a success estimate, streaks, retirement.

Each task's chance that one reply solves it is a Beta posterior. Its prior mean comes
from the task's difficulty (`PRIOR_MEAN`), with `prior_strength` pseudo-observations.
Each group observed fades the old evidence by `memory` (the model changes, so old
outcomes count less) and adds its successes and failures:

    a <- a0 + memory * (a - a0) + successes,   b <- b0 + memory * (b - b0) + failures.

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
    a: float
    b: float
    a0: float
    b0: float
    solved_streak: int = 0  # groups in a row all solved
    failed_streak: int = 0  # groups in a row all failed
    groups: int = 0

    @property
    def p(self) -> float:
        return self.a / (self.a + self.b)


class TaskEstimates:
    def __init__(self, tasks: list[Task], prior_strength: float, memory: float, retire_after: int) -> None:
        self.memory, self.retire_after = memory, retire_after
        self.by_id: dict[str, Estimate] = {}
        for t in tasks:
            m = prior_mean(t.difficulty)
            a0, b0 = m * prior_strength, (1 - m) * prior_strength
            self.by_id[t.id] = Estimate(a0, b0, a0, b0)

    def p(self, task_id: str) -> float:
        return self.by_id[task_id].p

    def retired(self, task_id: str) -> bool:
        e = self.by_id[task_id]
        return max(e.solved_streak, e.failed_streak) >= self.retire_after

    def p_all_equal(self, task_id: str, group_size: int) -> float:
        e = self.by_id[task_id]
        all_solved = all_failed = 1.0
        for i in range(group_size):
            all_solved *= (e.a + i) / (e.a + e.b + i)
            all_failed *= (e.b + i) / (e.a + e.b + i)
        return all_solved + all_failed

    def observe(self, task_id: str, successes: int, n: int) -> None:
        """One group of `n` replies to the task, `successes` of which solved it."""
        if n <= 0:
            return
        e = self.by_id[task_id]
        m = self.memory
        e.a = e.a0 + m * (e.a - e.a0) + successes
        e.b = e.b0 + m * (e.b - e.b0) + (n - successes)
        e.groups += 1
        e.solved_streak = e.solved_streak + 1 if successes == n else 0
        e.failed_streak = e.failed_streak + 1 if successes == 0 else 0

    def state_dict(self) -> dict[str, Any]:
        return {
            tid: [e.a, e.b, e.solved_streak, e.failed_streak, e.groups] for tid, e in self.by_id.items() if e.groups
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for tid, (a, b, solved, failed, groups) in state.items():
            if tid in self.by_id:  # a task no longer in the set: its evidence goes
                e = self.by_id[tid]
                e.a, e.b, e.solved_streak, e.failed_streak, e.groups = (
                    float(a),
                    float(b),
                    int(solved),
                    int(failed),
                    int(groups),
                )
