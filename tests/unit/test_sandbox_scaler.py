"""The elastic sandbox pool's load arithmetic and scaling decisions, on hand-worked numbers."""

import pytest

from rlvr.dist.sandbox_scaler import FleetLoad, ScalePolicy, fleet_load


def _snap(capacity: int, active: int, done: int, busy_s: float, at_s: float) -> dict:
    return {
        "capacity": capacity,
        "active": active,
        "pending": max(active - capacity, 0),
        "done": done,
        "busy_s": busy_s,
        "at_s": at_s,
    }


def test_fleet_load_over_an_interval() -> None:
    # server a: 4 slots, busy 6 of 4*2 = 8 slot-seconds, 10 runs done in 2 s;
    # server b: 2 slots, busy 4 of 2*2 = 4 slot-seconds, 6 runs done, 3 active (1 waiting)
    before = {"a": _snap(4, 0, 100, 50.0, 10.0), "b": _snap(2, 0, 40, 20.0, 10.0)}
    now = {"a": _snap(4, 2, 110, 56.0, 12.0), "b": _snap(2, 3, 46, 24.0, 12.0)}
    load = fleet_load(before, now)
    assert load == FleetLoad(workers=2, capacity=6, active=5, pending=1, utilisation=10 / 12, executions_per_s=8.0)
    assert load.as_metrics()["sandbox/utilisation"] == pytest.approx(0.8333, abs=1e-4)


def test_new_and_restarted_servers_count_in_size_but_not_in_rates() -> None:
    before = {"a": _snap(4, 0, 100, 50.0, 10.0), "b": _snap(4, 0, 80, 30.0, 10.0)}
    # b restarted (its counters went back), c is new: only a's interval makes the rates
    now = {"a": _snap(4, 1, 104, 52.0, 12.0), "b": _snap(4, 0, 1, 0.5, 12.0), "c": _snap(4, 0, 0, 0.0, 12.0)}
    load = fleet_load(before, now)
    assert (load.workers, load.capacity) == (3, 12)
    assert load.utilisation == pytest.approx(2 / 8) and load.executions_per_s == pytest.approx(2.0)
    assert fleet_load({}, now).utilisation == 0.0  # a first poll: no interval yet


def _load(workers: int, utilisation: float, pending: int = 0) -> FleetLoad:
    return FleetLoad(workers, workers * 4, 0, pending, utilisation, 0.0)


def test_scale_up_on_waiting_or_busy_after_patience_and_never_past_max() -> None:
    p = ScalePolicy(1, 3, up_at=0.85, down_at=0.3, up_after=2, down_after=3, cooldown=2)
    assert p.decide(_load(1, 0.5, pending=2)) == 0  # one hot poll is not enough
    assert p.decide(_load(1, 0.5, pending=2)) == +1
    assert [p.decide(_load(2, 1.0, pending=5)) for _ in range(2)] == [0, 0]  # cooling down after the change
    assert p.decide(_load(2, 1.0, pending=5)) == +1  # still hot once the cooldown is over
    assert [p.decide(_load(3, 1.0, pending=9)) for _ in range(6)] == [0] * 6  # at max


def test_a_short_lull_does_not_remove_a_server() -> None:
    p = ScalePolicy(1, 4, up_after=2, down_after=3, cooldown=2)
    p.decide(_load(2, 0.9))
    assert p.decide(_load(2, 0.9)) == +1
    # between two batches the sandbox idles for two polls: not long enough
    assert [p.decide(_load(3, x)) for x in (0.1, 0.0, 0.95, 0.1, 0.1)] == [0, 0, 0, 0, 0]
    assert p.decide(_load(3, 0.1)) == -1  # three idle polls in a row, after the cooldown


def test_scale_down_when_idle_and_never_below_min() -> None:
    p = ScalePolicy(2, 4, up_after=2, down_after=2, cooldown=0)
    assert p.decide(_load(4, 0.1)) == 0
    assert p.decide(_load(4, 0.1)) == -1
    assert p.decide(_load(3, 0.2)) == 0
    assert p.decide(_load(3, 0.2, pending=1)) == 0  # something waits: not idle
    assert p.decide(_load(3, 0.0)) == 0
    assert p.decide(_load(3, 0.0)) == -1
    assert p.decide(_load(2, 0.0)) == 0 and p.decide(_load(2, 0.0)) == 0  # at min
    assert p.decide(_load(1, 0.0)) == +1  # below min (a server died): back up at once


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min <= max"):
        ScalePolicy(3, 2)
    with pytest.raises(ValueError, match="down_at < up_at"):
        ScalePolicy(1, 2, up_at=0.3, down_at=0.5)
