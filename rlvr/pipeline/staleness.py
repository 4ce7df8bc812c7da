"""The rules every driver shares, written once: when a step's batch may be generated
(the staleness gate), when a batch is too old to train on (the stale drop), and what the
curriculum learns from a batch (`observe`).

Staleness is counted in learner steps for the gate and in policy versions for the drop:
a step the learner skips (nothing usable in its batch) publishes the same version again,
and the generator must still go on, so the gate counts finished steps; a batch is stale
when the learner's version has moved more than `max_staleness` past the version that
generated it. With max_staleness 0 every batch is generated from the current policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from rlvr.curriculum import Outcome
from rlvr.trace.store import solved
from rlvr.types import Group, RolloutBatch


@dataclass
class StalenessGate:
    """Step s may be generated once the learner has finished step s - max_staleness."""

    max_staleness: int
    steps_done: int  # learner steps finished (absolute: a resumed run starts at its checkpoint)

    def may_start(self, step: int) -> bool:
        return step - self.max_staleness <= self.steps_done

    def step_finished(self) -> None:
        """Called once per training step, whether the learner updated or skipped it."""
        self.steps_done += 1


def drop_stale(batch: RolloutBatch, version: int, max_staleness: int) -> RolloutBatch:
    """Move every group of `batch` to its dropped list when it was generated more than
    `max_staleness` versions before `version` (a backlog batch from before a restart, or
    a driver that let one through), counted as rollout/stale_dropped."""
    if version - batch.version > max_staleness:
        batch.stats["stale_dropped"] = float(len(batch.groups))
        batch.dropped += batch.groups
        batch.groups = []
    return batch


class Observer(Protocol):
    def observe(self, outcomes: list[Outcome]) -> None: ...


def outcome(g: Group) -> Outcome:
    """What the curriculum learns from one group: its rewards and which samples solved it."""
    return Outcome(
        g.trajs[0].task_id, [t.reward.total if t.reward else 0.0 for t in g.trajs], [solved(t) for t in g.trajs]
    )


def observe(sampler: Observer, groups: Iterable[Group]) -> None:
    """Tell the sampler how the groups went; a group with a failed episode says nothing."""
    sampler.observe([outcome(g) for g in groups if all(t.status == "ok" for t in g.trajs)])
