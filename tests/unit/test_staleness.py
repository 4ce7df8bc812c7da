"""The staleness rules every driver shares (rlvr.pipeline.staleness), by hand."""

from __future__ import annotations

from rlvr.pipeline.staleness import StalenessGate, drop_stale, observe, outcome
from rlvr.types import Group, RewardBreakdown, RolloutBatch, Trajectory


def group(gid: str, rewards: list[float], status: str = "ok") -> Group:
    trajs = []
    for r in rewards:
        t = Trajectory(task_id=gid, domain="python", group_id=gid, status=status)
        t.reward = RewardBreakdown(r)
        trajs.append(t)
    return Group(gid, "python", 0, trajs)


def test_the_gate_counts_finished_steps() -> None:
    # staleness 1, resumed at step 4: steps 4 and 5 may start; 6 once step 4 is finished
    gate = StalenessGate(max_staleness=1, steps_done=4)
    assert [gate.may_start(s) for s in (4, 5, 6)] == [True, True, False]
    gate.step_finished()  # a skipped step counts too: the version need not move
    assert gate.may_start(6) and not gate.may_start(7)
    # staleness 0: only the step the learner is on
    zero = StalenessGate(0, 2)
    assert zero.may_start(2) and not zero.may_start(3)


def test_a_batch_more_than_max_staleness_versions_old_is_dropped_whole() -> None:
    def batch() -> RolloutBatch:
        return RolloutBatch(step=7, version=3, groups=[group("a", [1.0, 0.0]), group("b", [0.5, 0.5])])

    kept = drop_stale(batch(), version=4, max_staleness=1)  # 4 - 3 = 1: within the bound
    assert len(kept.groups) == 2 and "stale_dropped" not in kept.stats
    gone = drop_stale(batch(), version=5, max_staleness=1)  # 5 - 3 = 2 > 1
    assert gone.groups == [] and len(gone.dropped) == 2 and gone.stats["stale_dropped"] == 2.0


def test_observe_skips_groups_with_a_failed_episode() -> None:
    seen = []

    class Sampler:
        def observe(self, outcomes: list) -> None:  # type: ignore[type-arg]
            seen.extend(outcomes)

    observe(Sampler(), [group("a", [1.0, 0.0]), group("b", [0.0, 0.0], status="error")])
    assert [o.task_id for o in seen] == ["a"]
    assert seen[0] == outcome(group("a", [1.0, 0.0]))
