"""Choosing tasks inside one pool (all tasks, or one domain's): the `curriculum.strategy`.

- `uniform`: a seeded permutation per epoch, every task once per epoch (the sampler rlvr
  always had; with one pool it samples exactly what it did).
- `learnability`: draws without replacement in proportion to p(1-p) + floor, p the
  task's success estimate (rlvr.curriculum.estimates; with `evidence: informative`, in
  proportion to the estimated chance that its group is informative); a retired task (solved or failed
  by its last groups every time) weighs `retired_weight`, so it is revisited rarely.
- `ladder`: difficulty bands, easiest first; draws come from the current band, and a
  `ladder_review` share from the bands below it. The band moves up when the rolling
  pass rate of its last `ladder_window` replies reaches `ladder_up`, down when it falls
  to `ladder_down`; the window starts afresh after a move.
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Protocol

from rlvr.config.curriculum import CurriculumConfig
from rlvr.curriculum.estimates import TaskEstimates, family_key
from rlvr.types import Task


class UniformPool:
    def __init__(self, tasks: list[Task], key: str, cfg: CurriculumConfig, est: TaskEstimates) -> None:
        self.tasks, self.key = tasks, key
        self.epoch, self.pos = 0, 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> list[int]:
        order = list(range(len(self.tasks)))
        random.Random(f"{self.key}:{epoch}").shuffle(order)
        return order

    def draw(self, k: int, rng: random.Random) -> list[Task]:
        out: list[Task] = []
        while len(out) < k:
            if self.pos >= len(self._order):
                self.epoch, self.pos = self.epoch + 1, 0
                self._order = self._permutation(self.epoch)
            out.append(self.tasks[self._order[self.pos]])
            self.pos += 1
        return out

    def observe(self, task: Task, successes: int, n: int) -> None:
        pass

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.pos = int(state["epoch"]), int(state["pos"])
        self._order = self._permutation(self.epoch)


def weighted_without_replacement(items: list[Task], weights: list[float], k: int, rng: random.Random) -> list[Task]:
    """k items drawn in proportion to their weights, none twice while others remain
    (Efraimidis-Spirakis keys u^(1/w)); weight 0 only once every positive one is used.
    More than len(items) draws start another round."""
    return [items[i] for i in _weighted_indices(weights, k, rng)]


def _weighted_indices(weights: list[float], k: int, rng: random.Random) -> list[int]:
    out: list[int] = []
    while len(out) < k:
        keyed = []
        for i, w in enumerate(weights):
            u = rng.random() or 1e-300
            keyed.append((math.log(u) / w if w > 0 else -math.inf, -i))  # ties: the earlier item
        keyed.sort(reverse=True)
        out += [-j for _, j in keyed[: k - len(out)]]
    return out


def family_of(task: Task, pool_by: str) -> str:
    """The family a task is drawn as (the family cap, draw diversity): its domain and
    `metadata[pool_by]`, or its own id when it has none."""
    return family_key(task, pool_by) or f"{task.domain}\x00{task.id}"


class LearnabilityPool:
    def __init__(self, tasks: list[Task], key: str, cfg: CurriculumConfig, est: TaskEstimates) -> None:
        self.tasks, self.cfg, self.est = tasks, cfg, est
        self.families = [family_of(t, cfg.pool_by) for t in tasks]
        self.recent: deque[str] = deque(maxlen=cfg.family_window)  # the families of the latest draws

    def weight(self, task: Task) -> float:
        if self.est.retired(task.id):
            return self.cfg.retired_weight
        return self.est.teaching(task.id) + self.cfg.floor

    def draw(self, k: int, rng: random.Random) -> list[Task]:
        weights = [self.weight(t) for t in self.tasks]
        if not any(w > 0 for w in weights):
            weights = [1.0] * len(weights)
        if self.cfg.family_cap is None:
            return weighted_without_replacement(self.tasks, weights, k, rng)
        return self._capped_draw(weights, k, rng)

    def _capped_draw(self, weights: list[float], k: int, rng: random.Random) -> list[Task]:
        """One draw at a time, in proportion to the weights, among the tasks not drawn yet
        in this call whose family has fewer than `family_cap` draws in the window; when no
        such task is left, among those not drawn yet; then among all."""
        cap, out, taken = self.cfg.family_cap, [], set()
        for _ in range(k):
            seen = Counter(self.recent)
            fresh = [i for i in range(len(self.tasks)) if i not in taken]
            allowed = [i for i in fresh if seen[self.families[i]] < (cap or 0)]
            pick_from = allowed or fresh or list(range(len(self.tasks)))
            w = [weights[i] for i in pick_from]
            if not any(x > 0 for x in w):
                w = [1.0] * len(w)
            (i,) = [pick_from[j] for j in _weighted_indices(w, 1, rng)]
            taken.add(i)
            self.recent.append(self.families[i])
            out.append(self.tasks[i])
        return out

    def observe(self, task: Task, successes: int, n: int) -> None:
        pass  # the shared estimates already hold it

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {"recent": list(self.recent)} if self.cfg.family_cap is not None else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.recent.clear()
        self.recent.extend(str(f) for f in state.get("recent", []))


class LadderPool:
    def __init__(self, tasks: list[Task], key: str, cfg: CurriculumConfig, est: TaskEstimates) -> None:
        self.cfg = cfg
        self.levels = sorted({t.difficulty for t in tasks})
        self.bands = {lv: [t for t in tasks if t.difficulty == lv] for lv in self.levels}
        self.band = 0  # index into levels
        self.window: list[int] = []  # 1 per solved reply, 0 per failed, current band only
        self.moves = 0

    def draw(self, k: int, rng: random.Random) -> list[Task]:
        below = [t for lv in self.levels[: self.band] for t in self.bands[lv]]
        review = sum(1 for _ in range(k) if below and rng.random() < self.cfg.ladder_review)
        current = self.bands[self.levels[self.band]]
        return _spread(current, k - review, rng) + _spread(below, review, rng)

    def observe(self, task: Task, successes: int, n: int) -> None:
        if task.difficulty != self.levels[self.band]:
            return  # review draws do not move the ladder
        self.window = (self.window + [1] * successes + [0] * (n - successes))[-self.cfg.ladder_window :]
        if len(self.window) < self.cfg.ladder_window:
            return
        rate = sum(self.window) / len(self.window)
        if rate >= self.cfg.ladder_up and self.band + 1 < len(self.levels):
            self.band, self.window, self.moves = self.band + 1, [], self.moves + 1
        elif rate <= self.cfg.ladder_down and self.band > 0:
            self.band, self.window, self.moves = self.band - 1, [], self.moves + 1

    def metrics(self) -> dict[str, float]:
        rate = sum(self.window) / len(self.window) if self.window else math.nan
        return {"band": float(self.levels[self.band]), "band_pass_rate": rate}

    def state_dict(self) -> dict[str, Any]:
        return {"band": self.band, "window": list(self.window), "moves": self.moves}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.band = min(int(state["band"]), len(self.levels) - 1)
        self.window, self.moves = [int(x) for x in state["window"]], int(state.get("moves", 0))


def _spread(tasks: list[Task], k: int, rng: random.Random) -> list[Task]:
    """k of `tasks` at random, none twice while others remain."""
    out: list[Task] = []
    while len(out) < k and tasks:
        out += rng.sample(tasks, min(k - len(out), len(tasks)))
    return out


class Pool(Protocol):
    def draw(self, k: int, rng: random.Random) -> list[Task]: ...
    def observe(self, task: Task, successes: int, n: int) -> None: ...
    def metrics(self) -> dict[str, float]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


POOLS: dict[str, Callable[[list[Task], str, CurriculumConfig, TaskEstimates], Pool]] = {
    "uniform": UniformPool,
    "learnability": LearnabilityPool,
    "ladder": LadderPool,
}
