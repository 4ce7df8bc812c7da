"""Which tasks to sample next.

`TaskSampler` walks a seeded permutation of the training tasks and reshuffles at every
epoch, so each task is seen once per epoch; its position is part of checkpoints so that a
resumed run samples exactly what the uninterrupted run would have.
"""

from __future__ import annotations

import random
from typing import Any

from rlvr.types import Task


class TaskSampler:
    def __init__(self, tasks: list[Task], seed: int) -> None:
        if not tasks:
            raise ValueError("TaskSampler needs at least one task")
        self.tasks = tasks
        self.seed = seed
        self.epoch = 0
        self.pos = 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> list[int]:
        order = list(range(len(self.tasks)))
        random.Random(f"{self.seed}:{epoch}").shuffle(order)
        return order

    def sample(self, n: int) -> list[Task]:
        out: list[Task] = []
        while len(out) < n:
            if self.pos >= len(self._order):
                self.epoch += 1
                self.pos = 0
                self._order = self._permutation(self.epoch)
            out.append(self.tasks[self._order[self.pos]])
            self.pos += 1
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.pos = int(state["epoch"]), int(state["pos"])
        self._order = self._permutation(self.epoch)
