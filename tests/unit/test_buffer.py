"""The experience buffer: FIFO, prioritised, replay ratio, capacity, staleness, state."""

import json

import pytest

from rlvr.pipeline.buffer import ExperienceBuffer, make_groups
from rlvr.types import Group, RewardBreakdown, Trajectory


def group(gid: str, rewards: list[float], version: int = 0, domain: str = "python") -> Group:
    trajs = [
        Trajectory(task_id=gid, domain=domain, group_id=gid, policy_version=version, reward=RewardBreakdown(r))
        for r in rewards
    ]
    return make_groups(trajs)[0]


def test_fifo_on_policy_takes_each_group_once_in_order() -> None:
    b = ExperienceBuffer()
    b.add([group("a", [0, 1]), group("b", [1, 1]), group("c", [0, 0])])
    assert [g.group_id for g in b.sample(2, version=0)] == ["a", "b"]
    assert [g.group_id for g in b.sample(2, version=0)] == ["c"]
    assert b.sample(2, version=0) == [] and b.counters["sampled"] == 3


def test_replay_ratio_keeps_groups_for_r_uses() -> None:
    b = ExperienceBuffer(replay_ratio=2)
    b.add([group("a", [0, 1])])
    assert [g.group_id for g in b.sample(1, 0)] == ["a"]
    assert [g.group_id for g in b.sample(1, 0)] == ["a"]
    assert b.sample(1, 0) == []


def test_capacity_and_staleness_evict_and_count() -> None:
    b = ExperienceBuffer(capacity=2, max_age=1)
    b.add([group("old", [0, 1], version=0), group("mid", [0, 1], version=2), group("new", [0, 1], version=3)])
    assert b.counters["evicted_capacity"] == 1 and [g.group_id for g in b.groups] == ["mid", "new"]
    assert [g.group_id for g in b.sample(5, version=4)] == ["new"]  # mid is 2 versions old
    assert b.counters["evicted_stale"] == 1


def test_prioritized_prefers_groups_that_disagree() -> None:
    picks = {"flat": 0, "split": 0}
    for seed in range(200):
        b = ExperienceBuffer(sampling="prioritized", seed=seed)
        b.add([group("flat", [1, 1]), group("split", [0, 1])])
        picks[b.sample(1, 0)[0].group_id] += 1
    # priorities 0.01 vs 1.01: 'split' should win ~99% of draws
    assert picks["split"] >= 190


def test_state_round_trips_through_json() -> None:
    b = ExperienceBuffer(sampling="prioritized", seed=3, replay_ratio=2)
    b.add([group("a", [0, 1], domain="math"), group("b", [1, 0])])
    b.sample(1, 0)
    state = json.loads(json.dumps(b.state_dict()))
    c = ExperienceBuffer(sampling="prioritized", seed=99, replay_ratio=2)
    c.load_state_dict(state)
    assert [(g.group_id, g.uses, g.domain) for g in c.groups] == [(g.group_id, g.uses, g.domain) for g in b.groups]
    assert [g.group_id for g in c.sample(2, 0)] == [g.group_id for g in b.sample(2, 0)]  # same RNG state
    assert c.domain_counts() == b.domain_counts()


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="fifo"):
        ExperienceBuffer(sampling="lifo")
    with pytest.raises(ValueError, match="replay_ratio"):
        ExperienceBuffer(replay_ratio=0)
