"""A task's calibration record (rlvr.tasks.calibration) and how the curriculum starts from it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rlvr.config.curriculum import CurriculumConfig
from rlvr.curriculum import Curriculum, Outcome
from rlvr.curriculum.estimates import TaskEstimates
from rlvr.tasks import TaskLoadError, load_tasks
from rlvr.tasks.calibration import (
    Calibration,
    CalibrationError,
    calibrated,
    evidence,
    level_for,
    of,
    p_informative,
    tie_counts,
)
from rlvr.types import Task


def task(tid: str, cal: dict | None = None, family: str | None = None, difficulty: int = 1) -> Task:  # type: ignore[type-arg]
    meta: dict = {} if cal is None else {"calibration": cal}  # type: ignore[type-arg]
    if family:
        meta["family"] = family
    return Task(tid, "python", "p", {"format": "assert", "tests": ["assert f() == 1"]}, "f", difficulty, None, meta)


def record(rewards: list[float], solved: list[bool] | None = None) -> dict:  # type: ignore[type-arg]
    return {"model": "m", "samples": len(rewards), "rewards": rewards, "solved": solved or [r >= 1 for r in rewards]}


def test_credit_and_solved_share_by_hand() -> None:
    c = of(task("a", record([1.0, -0.5, 0.25, 1.2], [True, False, False, True])))
    assert c is not None
    assert c.samples == 4
    assert c.credit == pytest.approx((1.0 + 0.0 + 0.25 + 1.0) / 4)  # a penalty counts 0, a bonus at most 1
    assert c.solved_share == 0.5
    assert of(task("b")) is None


@pytest.mark.parametrize(
    ("rewards", "g", "expected"),
    [
        ([1.0, 1.0, 0.0, 0.0], 2, 1 - (1 + 1) / 6),  # C(2,2) + C(2,2) of C(4,2) pairs agree
        ([1.0, 1.0, 0.0, 0.0], 4, 1.0),  # the only group of 4 holds both values
        ([1.0, 1.0, 1.0, 0.0], 2, 1 - 3 / 6),
        ([0.5, 0.5, 0.5, 0.5], 2, 0.0),
        ([0.0, 0.25, 0.5, 1.0], 3, 1.0),
        ([1.0, 0.0], 4, 1.0),  # a group larger than the samples counts as one of 2
    ],
)
def test_p_informative_counts_the_groups_that_disagree(rewards: list[float], g: int, expected: float) -> None:
    assert p_informative(tuple(rewards), g) == pytest.approx(expected)


def test_ties_are_the_curriculums_ties() -> None:
    """A group is uninformative when no two sorted neighbours differ by more than 1e-9,
    as Curriculum.observe counts it."""
    assert tie_counts((4e-10, 6e-10)) == [2]
    assert tie_counts((0.0, 1.0, 0.0, 1.0 + 1e-12, 0.5)) == [2, 1, 2]
    assert p_informative((4e-10, 6e-10), 2) == 0.0


def test_evidence_in_each_unit() -> None:
    c = Calibration("m", (1.0, 0.5, 0.0, 0.0), (True, False, False, False))
    assert evidence(c, "solved", 4) == (1.0, 3.0)
    assert evidence(c, "reward", 4) == (1.5, 2.5)
    s, f = evidence(c, "informative", 2)  # two groups' worth, each informative with chance 1 - 1/6
    assert (s, f) == pytest.approx((2 * 5 / 6, 2 * 1 / 6))
    assert evidence(c, "reward", 4, weight=0.5) == (0.75, 1.25)
    with pytest.raises(ValueError, match="evidence must be one of"):
        evidence(c, "mean", 4)


@pytest.mark.parametrize(
    ("credit", "level"), [(1.0, 1), (0.7, 1), (0.55, 1), (0.5, 2), (0.3, 2), (0.2, 3), (0.1, 3), (0.05, 4), (0.0, 4)]
)
def test_level_is_the_nearest_share_of_credit(credit: float, level: int) -> None:
    assert level_for(credit) == level


def test_calibrated_copy_keeps_the_task_and_adds_the_record() -> None:
    t = task("a", family="fam", difficulty=1)
    c = Calibration("m", (0.0, 0.0), (False, False))
    kept, leveled = calibrated(t, c), calibrated(t, c, set_level=True)
    assert kept.difficulty == 1 and leveled.difficulty == 4
    assert kept.metadata == {"family": "fam", "calibration": c.to_dict()} and t.metadata == {"family": "fam"}
    assert of(kept) == c


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("lots", "must be an object"),
        ({"rewards": []}, "rewards must be a non-empty list"),
        ({"rewards": [1.0, "x"], "solved": [True, False]}, "finite numbers"),
        ({"rewards": [1.0, math.inf], "solved": [True, False]}, "finite numbers"),
        ({"rewards": [True], "solved": [True]}, "finite numbers"),
        ({"rewards": [1.0, 0.0], "solved": [True]}, r"one per reward \(2\)"),
        ({"rewards": [1.0], "solved": [1]}, "true/false"),
    ],
)
def test_a_malformed_record_is_refused_by_name(raw: object, says: str) -> None:
    with pytest.raises(CalibrationError, match=f"task a: metadata.calibration.*{says}"):
        of(task("a", raw))  # type: ignore[arg-type]


def test_the_loader_refuses_a_malformed_record_with_its_line(tmp_path: Path) -> None:
    good = task("ok", record([1.0, 0.0])).to_dict()
    bad = task("bad", {"rewards": [1.0], "solved": []}).to_dict()
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TaskLoadError, match=r"t.jsonl:2: task bad: metadata.calibration.solved"):
        load_tasks(str(path))
    path.write_text(json.dumps(good) + "\n")
    assert of(load_tasks(str(path))[0]) == Calibration("m", (1.0, 0.0), (True, False))


def test_estimates_start_from_the_calibration() -> None:
    """k = 2 around the difficulty-1 prior 0.7: a task calibrated 0 of 4 starts at
    (2 * 0.7 + 0) / (2 + 4) = 0.233, one 4 of 4 at (1.4 + 4) / 6 = 0.9, and its family
    member without a record is pulled by that evidence: (2 * 0.7 + 4) / (2 + 4) = 0.9."""
    tasks = [
        task("none", record([0.0] * 4)),
        task("all", record([1.0] * 4), family="f"),
        task("sib", family="f"),
        task("plain"),
    ]
    cfg = CurriculumConfig(strategy="learnability", prior_strength=2.0, pool_cells=False)
    cur = Curriculum(tasks, 0, cfg, group_size=4)
    assert cur.est.p("none") == pytest.approx(1.4 / 6)
    assert cur.est.p("all") == pytest.approx(5.4 / 6)
    assert cur.est.p("sib") == pytest.approx(5.4 / 6)
    assert cur.est.p("plain") == pytest.approx(0.7)
    off = Curriculum(tasks, 0, cfg.model_copy(update={"calibration_weight": 0.0}), group_size=4)
    assert all(off.est.p(t.id) == pytest.approx(0.7) for t in tasks)


def test_calibration_evidence_fades_like_any_other() -> None:
    est = TaskEstimates([task("a")], prior_strength=2.0, memory=0.5, retire_after=3, start={"a": (4.0, 0.0)})
    est.observe("a", 0.0, 4)  # s = 0.5 * 4 + 0, f = 0.5 * 0 + 4
    assert est.p("a") == pytest.approx((1.4 + 2.0) / (2 + 2.0 + 4.0))


def test_a_calibrated_curriculum_resumes_exactly() -> None:
    tasks = [task(f"t{i}", record([float(i % 3 == 0)] * 2 + [0.0, 1.0]), family=f"f{i % 4}") for i in range(12)]
    tasks += [task(f"u{i}", family=f"f{i % 4}") for i in range(6)]
    cfg = CurriculumConfig(strategy="learnability", prefilter=0.8)
    a = Curriculum(tasks, 7, cfg, group_size=4)
    for step in range(3):
        drawn = a.sample(4)
        rewards, solved = [1.0, 0.0, float(step % 2), 0.0], [True, False, bool(step % 2), False]
        a.observe([Outcome(t.id, rewards, solved) for t in drawn])
    b = Curriculum(tasks, 7, cfg, group_size=4)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert [t.id for t in b.sample(6)] == [t.id for t in a.sample(6)]
    assert all(b.est.p(t.id) == a.est.p(t.id) for t in tasks)


def _observed(tasks: list[Task], weight: float) -> Curriculum:
    cfg = CurriculumConfig(strategy="learnability", calibration_weight=weight)
    cur = Curriculum(tasks, 3, cfg, group_size=4)
    for _ in range(2):
        cur.observe([Outcome(t.id, [1.0, 0.0, 0.0, 0.0], [True, False, False, False]) for t in cur.sample(3)])
    return cur


def test_the_checkpoint_alone_decides_the_evidence_when_the_calibration_changed() -> None:
    """Resumed with the calibration off (or on a file calibrated since), each task's
    evidence and its family's and cell's sums are the checkpoint's: they still add up."""
    tasks = [task(f"t{i}", record([1.0, 1.0, 0.0, 1.0]), family=f"f{i % 3}") for i in range(9)]
    plain = [task(t.id, family=t.metadata["family"]) for t in tasks]
    for saved, resumed, weight in ((tasks, tasks, 0.0), (plain, tasks, 1.0)):
        a = _observed(saved, 1.0)
        b = Curriculum(resumed, 3, CurriculumConfig(strategy="learnability", calibration_weight=weight), group_size=4)
        b.load_state_dict(json.loads(json.dumps(a.state_dict())))
        assert all(b.est.p(t.id) == a.est.p(t.id) for t in tasks)
        for key, (fam_s, fam_f) in b.est.families.items():
            members = [e for e in b.est.by_id.values() if e.family == key]
            assert fam_s == pytest.approx(sum(e.s for e in members)) and fam_f == pytest.approx(
                sum(e.f for e in members)
            )
