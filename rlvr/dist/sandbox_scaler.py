"""The elastic sandbox pool's arithmetic: the fleet's load from two snapshots of every
server's `/health` load (rlvr.sandbox.service.Load), and when to add or remove a server.

Kept free of Ray and HTTP so that it is tested on hand-worked numbers; the Ray runner's
driver polls the servers, applies `ScalePolicy.decide` and logs `FleetLoad`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FleetLoad:
    workers: int
    capacity: int  # runs at once, all servers together
    active: int  # submissions in the servers (running or waiting for a slot)
    pending: int  # of those, waiting for a slot
    utilisation: float  # busy slot-seconds over available slot-seconds, over the interval
    executions_per_s: float

    def as_metrics(self) -> dict[str, float]:
        return {
            "sandbox/workers": float(self.workers),
            "sandbox/capacity": float(self.capacity),
            "sandbox/active": float(self.active),
            "sandbox/pending": float(self.pending),
            "sandbox/utilisation": self.utilisation,
            "sandbox/executions_per_s": self.executions_per_s,
        }


def fleet_load(before: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]]) -> FleetLoad:
    """The fleet between two polls; each maps a server's address to its load snapshot.
    Rates count only servers seen in both (a new or restarted one starts its own
    counters); a server whose counters went back (restarted) is left out of the rates."""
    busy = slots = done = 0.0
    span = 0.0
    for url, b in before.items():
        n = now.get(url)
        if n is None or n["done"] < b["done"] or n["busy_s"] < b["busy_s"]:
            continue
        dt = n["at_s"] - b["at_s"]
        if dt <= 0:
            continue
        busy += n["busy_s"] - b["busy_s"]
        slots += n["capacity"] * dt
        done += n["done"] - b["done"]
        span = max(span, dt)
    return FleetLoad(
        workers=len(now),
        capacity=int(sum(n["capacity"] for n in now.values())),
        active=int(sum(n["active"] for n in now.values())),
        pending=int(sum(n["pending"] for n in now.values())),
        utilisation=min(busy / slots, 1.0) if slots else 0.0,
        executions_per_s=done / span if span else 0.0,
    )


class ScalePolicy:
    """Add a server after `up_after` polls in a row with submissions waiting for a slot
    or utilisation at `up_at` or more; remove one after `down_after` polls in a row with
    nothing waiting and utilisation at `down_at` or less (longer: a training loop leaves
    the sandbox idle between batches); after any change, wait `cooldown` polls (a new
    server needs time to start and to be found by the workers); always between `low`
    and `high`."""

    def __init__(
        self,
        low: int,
        high: int,
        up_at: float = 0.85,
        down_at: float = 0.3,
        up_after: int = 2,
        down_after: int = 12,
        cooldown: int = 6,
    ) -> None:
        if not 0 < low <= high:
            raise ValueError(f"sandbox workers: need 0 < min <= max, got {low} and {high}")
        if not 0 <= down_at < up_at <= 1:
            raise ValueError(f"need 0 <= down_at < up_at <= 1, got {down_at} and {up_at}")
        self.low, self.high, self.up_at, self.down_at = low, high, up_at, down_at
        self.up_after, self.down_after, self.cooldown = up_after, down_after, cooldown
        self.hot = self.cold = 0
        self.quiet = cooldown  # polls since the last change

    def decide(self, load: FleetLoad) -> int:
        """+1 (add a server), -1 (remove one) or 0."""
        n = load.workers
        self.quiet += 1
        if n < self.low:
            return self._changed(+1)
        if n > self.high:
            return self._changed(-1)
        hot = load.pending > 0 or load.utilisation >= self.up_at
        cold = load.pending == 0 and load.utilisation <= self.down_at
        self.hot = self.hot + 1 if hot else 0
        self.cold = self.cold + 1 if cold else 0
        if self.quiet <= self.cooldown:
            return 0
        if self.hot >= self.up_after and n < self.high:
            return self._changed(+1)
        if self.cold >= self.down_after and n > self.low:
            return self._changed(-1)
        return 0

    def _changed(self, step: int) -> int:
        self.hot = self.cold = self.quiet = 0
        return step
