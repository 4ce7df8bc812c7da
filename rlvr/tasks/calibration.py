"""A task's difficulty as measured: what a model's sampled replies to it earned.

`rlvr tasks calibrate` samples K replies to each training task from a model (the one a
run starts from, by default), scores them as a training step would, and records them in
the task's `metadata.calibration`:

    {"model": "smollm2-135m-instruct", "samples": 4, "rewards": [1.0, 0.0, 1.0, 1.0],
     "solved": [true, false, true, true]}

The record is plain data, read here by pure functions: the curriculum starts a
calibrated task's estimate from this evidence rather than from its difficulty level's
prior alone (`evidence`), and the command can rewrite the difficulty level from it
(`level_for`), so that a task set's levels say how hard its tasks are for the model
that trains on them. For the test-writing domain the clipped reward is the share of
mutants the replies' tests kill (and the tenth for useful tests): the base model's kill
share, as that domain's difficulty asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rlvr.types import Task

KEY = "calibration"
EVIDENCE = ("reward", "solved", "informative")

LEVEL_MEANS = {1: 0.7, 2: 0.4, 3: 0.15, 4: 0.0}
"""The share of credit each calibrated level stands for (1-3 as the curriculum's prior
by difficulty; 4: nothing earned)."""


class CalibrationError(ValueError):
    """A task's `metadata.calibration` is not a record this module can read."""


@dataclass(frozen=True)
class Calibration:
    model: str
    rewards: tuple[float, ...]
    solved: tuple[bool, ...]

    @property
    def samples(self) -> int:
        return len(self.rewards)

    @property
    def credit(self) -> float:
        """Mean reward clipped to 0..1 (a penalty counts as 0), as the curriculum's
        default evidence counts a reply."""
        return sum(clip(r) for r in self.rewards) / len(self.rewards)

    @property
    def solved_share(self) -> float:
        return sum(self.solved) / len(self.solved)

    def to_dict(self) -> dict[str, Any]:
        rewards, solved = list(self.rewards), list(self.solved)
        return {"model": self.model, "samples": self.samples, "rewards": rewards, "solved": solved}


def clip(r: float) -> float:
    return min(max(r, 0.0), 1.0)


def of(task: Task) -> Calibration | None:
    """The task's calibration record, None when it has none; CalibrationError naming the
    task and the field when the record is malformed."""
    raw = task.metadata.get(KEY)
    if raw is None:
        return None
    where = f"task {task.id}: metadata.{KEY}"
    if not isinstance(raw, dict):
        raise CalibrationError(f"{where} must be an object, got {type(raw).__name__}")
    rewards, solved = raw.get("rewards"), raw.get("solved")
    if not isinstance(rewards, list) or not rewards:
        raise CalibrationError(f"{where}.rewards must be a non-empty list of numbers")
    if any(isinstance(r, bool) or not isinstance(r, int | float) or not math.isfinite(r) for r in rewards):
        raise CalibrationError(f"{where}.rewards must hold finite numbers only")
    if not isinstance(solved, list) or len(solved) != len(rewards) or not all(isinstance(s, bool) for s in solved):
        raise CalibrationError(f"{where}.solved must be a list of true/false, one per reward ({len(rewards)})")
    return Calibration(str(raw.get("model", "")), tuple(float(r) for r in rewards), tuple(solved))


def p_informative(rewards: tuple[float, ...], group_size: int) -> float:
    """The chance that a group of `group_size` replies drawn from these samples (without
    replacement) is informative, its rewards not all equal: 1 - sum over each distinct
    value v of C(n_v, g) / C(K, g). An unbiased estimate of the model's chance when
    group_size <= K; a larger group is estimated as a group of K, which understates its
    chance (any disagreement among the K gives 1, none 0): calibrate with K >= the run's
    group size."""
    k = len(rewards)
    g = min(max(group_size, 1), k)
    return 1.0 - sum(math.comb(n, g) for n in tie_counts(rewards)) / math.comb(k, g)


def tie_counts(rewards: tuple[float, ...]) -> list[int]:
    """How many rewards each run of equal values holds, equal as the curriculum counts a
    group uninformative (no gap above 1e-9 between neighbours in sorted order)."""
    counts: list[int] = []
    prev: float | None = None
    for r in sorted(rewards):
        if prev is None or r - prev > 1e-9:
            counts.append(0)
        counts[-1] += 1
        prev = r
    return counts


def evidence(cal: Calibration, mode: str, group_size: int, weight: float = 1.0) -> tuple[float, float]:
    """(successes, failures) the calibration counts as in the curriculum's units: replies
    solved (`solved`), clipped reward (`reward`), or groups that teach (`informative`:
    K / group_size groups' worth, each informative with the estimated chance). `weight`
    scales both (0 ignores the calibration)."""
    if mode not in EVIDENCE:
        raise ValueError(f"evidence must be one of {EVIDENCE}, got {mode!r}")
    if mode == "informative":
        groups = cal.samples / max(group_size, 1)
        q = p_informative(cal.rewards, group_size)
        return weight * q * groups, weight * (1 - q) * groups
    s = cal.credit * cal.samples if mode == "reward" else float(sum(cal.solved))
    return weight * s, weight * (cal.samples - s)


def level_for(credit: float) -> int:
    """The level whose share of credit (LEVEL_MEANS) is nearest `credit`; ties go to the
    easier level."""
    return min(LEVEL_MEANS, key=lambda lv: (abs(LEVEL_MEANS[lv] - credit), lv))


def calibrated(task: Task, cal: Calibration, *, set_level: bool = False) -> Task:
    """A copy of the task carrying the record (and, with set_level, its level from the
    measured credit)."""
    meta = {**task.metadata, KEY: cal.to_dict()}
    level = level_for(cal.credit) if set_level else task.difficulty
    return Task(task.id, task.domain, task.prompt, task.tests, task.entry_point, level, task.reference, meta)
