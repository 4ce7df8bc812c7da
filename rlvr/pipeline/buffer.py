"""The experience buffer: scored groups waiting to be trained on.

A *group* is the G trajectories of one prompt (same `group_id`), tagged with its domain
and the policy version that generated it. The loop adds each step's groups and the
learner draws its batch from here:

- `sampling="fifo"`: oldest first; `"prioritized"`: drawn without replacement with
  probability proportional to the group's priority (the spread of its rewards plus a
  small floor: groups that disagree carry the most signal), by a seeded generator;
- `replay_ratio` r: a group may be trained on r times before it leaves (1 = on-policy:
  each group exactly once, the plain loop's behaviour);
- `capacity`: the most groups held; adding beyond it evicts the oldest (counted);
- `max_age`: groups generated more than this many policy versions ago are evicted
  before sampling (counted) — the staleness bound applied to replay.

`state_dict()` holds every stored trajectory, so a checkpoint carries the buffer and a
resumed run trains on exactly the groups the interrupted one would have.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rlvr.types import Group, Trajectory


def make_groups(trajs: list[Trajectory]) -> list[Group]:
    """Trajectories → groups by group_id, in first-seen order."""
    by_id: dict[str, list[Trajectory]] = {}
    for t in trajs:
        by_id.setdefault(t.group_id, []).append(t)
    return [Group(gid, ts[0].domain, min(t.policy_version for t in ts), ts) for gid, ts in by_id.items()]


@dataclass
class ExperienceBuffer:
    capacity: int = 256
    sampling: str = "fifo"
    replay_ratio: int = 1
    max_age: int | None = None
    seed: int = 0
    groups: list[Group] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.sampling not in ("fifo", "prioritized"):
            raise ValueError(f"sampling must be 'fifo' or 'prioritized', got '{self.sampling}'")
        if self.capacity < 1 or self.replay_ratio < 1:
            raise ValueError("capacity and replay_ratio must be >= 1")
        self._rng = random.Random(self.seed)

    def __len__(self) -> int:
        return len(self.groups)

    def add(self, groups: list[Group]) -> None:
        self.groups.extend(groups)
        self.counters["added"] += len(groups)
        while len(self.groups) > self.capacity:
            self.groups.pop(0)
            self.counters["evicted_capacity"] += 1

    def sample(self, n: int, version: int) -> list[Group]:
        """Up to n groups for the learner at policy `version` (fewer if fewer are held)."""
        if self.max_age is not None:
            keep = [g for g in self.groups if version - g.version <= self.max_age]
            self.counters["evicted_stale"] += len(self.groups) - len(keep)
            self.groups = keep
        if self.sampling == "fifo":
            chosen = self.groups[:n]
        else:
            pool, chosen = list(self.groups), []
            while pool and len(chosen) < n:
                weights = [g.priority for g in pool]
                i = self._rng.choices(range(len(pool)), weights=weights)[0]
                chosen.append(pool.pop(i))
        for g in chosen:
            g.uses += 1
        spent = {id(g) for g in chosen if g.uses >= self.replay_ratio}
        self.groups = [g for g in self.groups if id(g) not in spent]
        self.counters["sampled"] += len(chosen)
        return chosen

    def domain_counts(self) -> dict[str, int]:
        return dict(Counter(g.domain for g in self.groups))

    def state_dict(self) -> dict[str, Any]:
        return {
            "groups": [g.to_dict() for g in self.groups],
            "counters": dict(self.counters),
            "rng": self._rng.getstate(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.groups = [Group.from_dict(g) for g in state["groups"]]
        self.counters = Counter(state["counters"])
        rng = state["rng"]
        self._rng.setstate((rng[0], tuple(rng[1]), rng[2]))
