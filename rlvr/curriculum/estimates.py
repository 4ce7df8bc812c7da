"""What the run has learnt about each task: a success estimate, streaks, retirement.

Each task's chance that one reply solves it is a Beta posterior over faded evidence:
`s` successes and `f` failures, each group observed fading the task's older evidence by
`memory` (the model changes, so old outcomes count less) and adding its own:

    s <- memory * s + successes,   f <- memory * f + failures.

The prior behind it has `prior_strength` (k) pseudo-observations, and its mean comes
from what was seen of similar tasks, in up to three nested levels, each shrunk towards
the one above with the same k:

1. the task's difficulty (`PRIOR_MEAN`): m_difficulty;
2. its cell, the tasks of its domain at its difficulty (with `pool_cells`): their summed
   evidence C_s, C_f without the task's family's (or, without a family, its own),
   m_cell = (k * m_difficulty + C_s - X_s) / (k + C_s + C_f - X_s - X_f);
3. its family, the instances of one generator (the same `metadata[pool_by]` in the same
   domain, e.g. `add_{k}`): their summed evidence S, F without the task's own,
   m = (k * m_cell + S - s) / (k + S + F - s - f);

and then a = k * m + s, b = k * (1 - m) + f. A level a task does not share with any
other task is skipped. A short run visits few tasks twice, but its cells and families
many times, so pooling is what lets the estimate be informed early: a domain the model
cannot solve at all is known as such after a few groups, not after every task of it.

A calibrated task (`metadata.calibration`, rlvr.tasks.calibration) starts with the
evidence of its calibration's samples as s and f (and in its family's and cell's sums),
faded like any other: what the starting model earned on it, before the run's first group.

A task whose last `retire_after` groups were all solved, or all failed, is retired (its
groups teach nothing); one mixed group brings it back. `p_all_equal(task, g)` is the
posterior probability that a group of g replies agrees (all solved or all failed), in
closed form: E[p^g] + E[(1-p)^g] = prod (a+i)/(a+b+i) + prod (b+i)/(a+b+i), i < g.

With `group_events` g > 0 the estimate is of another event: that a group of g replies to
the task is *informative* (its rewards not all equal), one observation per group. Under
partial credit the chance of success says little about that (every reply passing 3 of 4
tests is a group with mean reward 0.75 that teaches nothing), so this counts it directly.
The difficulty prior m becomes 1 - m^g - (1-m)^g, `teaching` is p itself, a task is
retired after `retire_after` uninformative groups in a row, and p_all_equal is 1 - p.
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
    family: str | None  # the family's pooling key, None when the task shares it with no other
    cell: str | None  # its domain and difficulty's, None when unpooled or alone in the cell
    s: float = 0.0  # faded successes
    f: float = 0.0  # faded failures
    solved_streak: int = 0  # groups in a row all solved
    failed_streak: int = 0  # groups in a row all failed
    groups: int = 0


class TaskEstimates:
    def __init__(
        self,
        tasks: list[Task],
        prior_strength: float,
        memory: float,
        retire_after: int,
        pool_by: str = "",
        pool_cells: bool = False,
        group_events: int = 0,
        start: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.k, self.memory, self.retire_after = prior_strength, memory, retire_after
        self.group_events = group_events
        # with cells, a family is split by difficulty so that each part nests in one cell
        families = {t.id: family_key(t, pool_by, t.difficulty if pool_cells else None) for t in tasks}
        cells = {t.id: cell_key(t) if pool_cells else None for t in tasks}
        shared_families, shared_cells = _shared(families.values()), _shared(cells.values())
        self.by_id: dict[str, Estimate] = {
            t.id: Estimate(
                _prior(t.difficulty, group_events),
                families[t.id] if families[t.id] in shared_families else None,
                cells[t.id] if cells[t.id] in shared_cells else None,
            )
            for t in tasks
        }
        self.families: dict[str, list[float]] = {}  # key -> [S, F]
        self.cells: dict[str, list[float]] = {}  # key -> [C_s, C_f]
        for tid, (s0, f0) in sorted((start or {}).items()):  # evidence held before the run (a calibration)
            if tid in self.by_id and s0 + f0 > 0:
                e = self.by_id[tid]
                e.s, e.f = s0, f0
                self._add(e, s0, f0)

    def _beta(self, task_id: str) -> tuple[float, float]:
        e, k = self.by_id[task_id], self.k
        m = e.m0
        fam = self.families.get(e.family, [0.0, 0.0]) if e.family is not None else [e.s, e.f]
        if e.cell is not None and e.cell in self.cells:
            cs, cf = self.cells[e.cell]
            others_s, others_f = max(cs - fam[0], 0.0), max(cf - fam[1], 0.0)
            m = (k * m + others_s) / (k + others_s + others_f)
        if e.family is not None and e.family in self.families:
            others_s, others_f = max(fam[0] - e.s, 0.0), max(fam[1] - e.f, 0.0)
            m = (k * m + others_s) / (k + others_s + others_f)
        return k * m + e.s, k * (1 - m) + e.f

    def p(self, task_id: str) -> float:
        a, b = self._beta(task_id)
        return a / (a + b)

    def teaching(self, task_id: str) -> float:
        """How likely the task's next group is to teach: p(1-p), the variance of one
        reply's outcome, or (group_events) p, the chance the group is informative."""
        p = self.p(task_id)
        return p if self.group_events else p * (1 - p)

    def retired(self, task_id: str) -> bool:
        e = self.by_id[task_id]
        if self.group_events:  # a streak of informative groups is no reason to stop
            return e.failed_streak >= self.retire_after
        return max(e.solved_streak, e.failed_streak) >= self.retire_after

    def p_all_equal(self, task_id: str, group_size: int) -> float:
        if self.group_events:
            return 1.0 - self.p(task_id)
        a, b = self._beta(task_id)
        all_solved = all_failed = 1.0
        for i in range(group_size):
            all_solved *= (a + i) / (a + b + i)
            all_failed *= (b + i) / (a + b + i)
        return all_solved + all_failed

    def observe(self, task_id: str, successes: float, n: int) -> None:
        """One group of `n` replies to the task, `successes` of which solved it (or, with
        partial credit as evidence, the sum of their rewards in [0, 1])."""
        if n <= 0:
            return
        e = self.by_id[task_id]
        old = (e.s, e.f)
        e.s = self.memory * e.s + successes
        e.f = self.memory * e.f + (n - successes)
        self._add(e, e.s - old[0], e.f - old[1])
        e.groups += 1
        e.solved_streak = e.solved_streak + 1 if successes == n else 0
        e.failed_streak = e.failed_streak + 1 if successes == 0 else 0

    def _add(self, e: Estimate, ds: float, df: float) -> None:
        """Add a change of a task's evidence to its family's and cell's sums."""
        for table, key in ((self.families, e.family), (self.cells, e.cell)):
            if key is not None:
                sums = table.setdefault(key, [0.0, 0.0])
                sums[0] += ds
                sums[1] += df

    def state_dict(self) -> dict[str, Any]:
        return {
            "tasks": {
                tid: [e.s, e.f, e.solved_streak, e.failed_streak, e.groups]
                for tid, e in self.by_id.items()
                if e.groups or e.s or e.f  # observed, or holding a calibration's evidence
            },
            "families": {key: list(v) for key, v in self.families.items()},
            "cells": {key: list(v) for key, v in self.cells.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # The checkpoint alone decides each task's evidence: a task it does not hold had none
        # when it was saved (a calibration since added, or its weight changed, is not mixed
        # in, so the family and cell sums below still add up to their tasks' evidence).
        for e in self.by_id.values():
            e.s = e.f = 0.0
            e.solved_streak = e.failed_streak = e.groups = 0
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
        # The family and cell sums are kept as saved (not re-added from the tasks) so that a
        # resumed run computes bit for bit what the uninterrupted one did; a key whose tasks
        # all left the set is dropped. A key pooled now but not saved (a checkpoint from
        # before cells, or from other settings) is rebuilt from its tasks' evidence.
        self.families = self._restored(state.get("families", {}), "family")
        self.cells = self._restored(state.get("cells", {}), "cell")

    def _restored(self, saved: dict[str, Any], level: str) -> dict[str, list[float]]:
        rebuilt: dict[str, list[float]] = {}
        for e in self.by_id.values():
            key = getattr(e, level)
            if key is not None and (e.groups or e.s or e.f):  # observed, or calibrated before the run
                sums = rebuilt.setdefault(key, [0.0, 0.0])
                sums[0] += e.s
                sums[1] += e.f
        pooled = {getattr(e, level) for e in self.by_id.values()} - {None}
        kept = {key: [float(v[0]), float(v[1])] for key, v in saved.items() if key in pooled}
        return {**{k: v for k, v in rebuilt.items() if k not in kept}, **kept}


def family_key(task: Task, pool_by: str, difficulty: int | None = None) -> str | None:
    """The key a task pools its evidence under: domain and `metadata[pool_by]` (and the
    difficulty, when given), or None."""
    if not pool_by:
        return None
    value = task.metadata.get(pool_by)
    if value is None:
        return None
    return f"{task.domain}\x00{value}" + ("" if difficulty is None else f"\x00{difficulty}")


def _prior(difficulty: int | None, group_events: int) -> float:
    """The difficulty prior's mean; with group_events g, the chance that g replies, each
    succeeding with that probability, do not all agree."""
    m = prior_mean(difficulty)
    return 1.0 - m**group_events - (1.0 - m) ** group_events if group_events else m


def cell_key(task: Task) -> str:
    """The key of a task's cell: its domain and difficulty."""
    return f"{task.domain}\x00{task.difficulty}"


def _shared(keys: Any) -> set[str]:
    """The keys held by more than one task."""
    seen: dict[str, int] = {}
    for key in keys:
        if key is not None:
            seen[key] = seen.get(key, 0) + 1
    return {key for key, n in seen.items() if n > 1}
