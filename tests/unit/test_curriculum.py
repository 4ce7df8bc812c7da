"""The curriculum's strategies on hand-worked cases, and exact resumption."""

import json
import random

import pytest

from rlvr.config import load_config
from rlvr.config.curriculum import CurriculumConfig
from rlvr.curriculum import Curriculum, Outcome
from rlvr.curriculum.estimates import TaskEstimates, prior_mean
from rlvr.curriculum.mix import DomainMix, capped, group_signal
from rlvr.curriculum.pools import LadderPool, LearnabilityPool, weighted_without_replacement
from rlvr.types import Task


def task(i: int, domain: str = "python", difficulty: int = 1) -> Task:
    return Task(id=f"{domain}/{i}", domain=domain, prompt="p", tests={}, difficulty=difficulty)


def cfg(**kw: object) -> CurriculumConfig:
    return CurriculumConfig(**kw)  # type: ignore[arg-type]


# ---- estimates ----------------------------------------------------------------------


def test_prior_follows_difficulty() -> None:
    assert [prior_mean(d) for d in (1, 2, 3, 4, None)] == [0.7, 0.4, 0.15, 0.1, 0.5]
    est = TaskEstimates([task(0, difficulty=2)], prior_strength=2.0, memory=0.5, retire_after=2)
    assert est.p("python/0") == pytest.approx(0.4)


def test_posterior_update_with_memory_by_hand() -> None:
    est = TaskEstimates([task(0, difficulty=2)], prior_strength=2.0, memory=0.5, retire_after=2)
    # a0 = 0.8, b0 = 1.2; 3 of 4 solved: a = 0.8 + 3, b = 1.2 + 1
    est.observe("python/0", 3, 4)
    assert est.p("python/0") == pytest.approx(3.8 / 6.0)
    # then 0 of 4, the old evidence halved: a = 0.8 + 0.5 * 3, b = 1.2 + 0.5 * 1 + 4
    est.observe("python/0", 0, 4)
    assert est.p("python/0") == pytest.approx(2.3 / 8.0)


def test_probability_that_a_group_agrees() -> None:
    # k = 2 pseudo-observations at the unknown-difficulty mean 0.5: a = b = 1, p uniform on
    # [0, 1], so E[p^2] + E[(1-p)^2] = 1/3 + 1/3
    est = TaskEstimates([task(0, difficulty=None)], prior_strength=2.0, memory=1.0, retire_after=2)  # type: ignore[arg-type]
    assert est.p_all_equal("python/0", 2) == pytest.approx(2 / 3)
    # then 0 of 8 solved: a = 1, b = 9; E[(1-p)^4] = 9*10*11*12 / (10*11*12*13), E[p^4] = 1*2*3*4 / (...)
    est.observe("python/0", 0, 8)
    assert est.p_all_equal("python/0", 4) == pytest.approx((9 * 10 * 11 * 12 + 24) / (10 * 11 * 12 * 13))


def fam(i: int, family: str | None, domain: str = "python", difficulty: int = 2) -> Task:
    t = task(i, domain, difficulty)
    if family is not None:
        t.metadata["family"] = family
    return t


def test_a_family_shares_its_evidence_by_hand() -> None:
    tasks = [fam(0, "add_{k}"), fam(1, "add_{k}"), fam(2, "add_{k}"), fam(3, None), fam(4, "mul_{k}")]
    tasks.append(fam(5, "add_{k}", domain="repair"))  # same family name, other domain: not pooled
    est = TaskEstimates(tasks, prior_strength=2.0, memory=0.5, retire_after=2, pool_by="family")
    est.observe("python/0", 4, 4)
    # python/1's prior mean: (k * 0.4 + 4) / (k + 4) = 4.8 / 6 = 0.8, with k = 2 behind it
    assert est.p("python/1") == pytest.approx(0.8)
    # python/0 itself: prior from the others (none seen yet) = 0.4; a = 0.8 + 4, b = 1.2
    assert est.p("python/0") == pytest.approx(4.8 / 6.0)
    assert [est.p(t) for t in ("python/3", "python/4", "repair/5")] == pytest.approx([0.4, 0.4, 0.4])
    est.observe("python/1", 1, 4)
    # python/2 sees S = 4 + 1, F = 0 + 3: m = (0.8 + 5) / (2 + 8) = 0.58
    assert est.p("python/2") == pytest.approx(0.58)
    # python/0 sees only python/1's evidence in its prior: m = (0.8 + 1) / (2 + 4) = 0.3;
    # a = 2 * 0.3 + 4, b = 2 * 0.7 + 0
    assert est.p("python/0") == pytest.approx(4.6 / 6.0)
    # a second group of python/0 fades its own first one: s = 0.5 * 4 + 0, f = 0 + 4; the
    # family's sums follow: S = 2 + 1, F = 4 + 3
    est.observe("python/0", 0, 4)
    assert est.families["python\x00add_{k}"] == pytest.approx([3.0, 7.0])
    assert est.p("python/2") == pytest.approx((0.8 + 3.0) / (2.0 + 10.0))
    # without pool_by nothing is shared
    alone = TaskEstimates(tasks, prior_strength=2.0, memory=0.5, retire_after=2, pool_by="")
    alone.observe("python/0", 4, 4)
    assert alone.p("python/1") == pytest.approx(0.4)


def test_family_sums_resume_exactly() -> None:
    tasks = [fam(i, "f") for i in range(4)]
    est = TaskEstimates(tasks, prior_strength=2.0, memory=0.9, retire_after=3, pool_by="family")
    for i, k in [(0, 1), (1, 3), (0, 2), (2, 0), (1, 4)]:
        est.observe(f"python/{i}", k, 4)
    state = json.loads(json.dumps(est.state_dict()))
    again = TaskEstimates(tasks, prior_strength=2.0, memory=0.9, retire_after=3, pool_by="family")
    again.load_state_dict(state)
    for i in range(4):
        assert again.p(f"python/{i}") == est.p(f"python/{i}")
        assert again.p_all_equal(f"python/{i}", 4) == est.p_all_equal(f"python/{i}", 4)


def test_a_cell_shares_its_evidence_by_hand() -> None:
    # math/0..2 at difficulty 1 (a cell), math/3 alone at difficulty 2, python/4 at 1
    tasks = [task(0, "math"), task(1, "math"), task(2, "math"), task(3, "math", 2), task(4, "python")]
    est = TaskEstimates(tasks, prior_strength=2.0, memory=0.5, retire_after=2, pool_cells=True)
    est.observe("math/0", 0, 4)
    # math/1's prior mean: (k * 0.7 + 0) / (k + 4) = 1.4 / 6
    assert est.p("math/1") == pytest.approx(1.4 / 6)
    assert [est.p(t) for t in ("math/3", "python/4")] == pytest.approx([0.4, 0.7])  # other cells
    est.observe("math/1", 0, 4)
    # math/2 sees 0 of 8: m = 1.4 / 10; math/0 sees only math/1's 0 of 4: m = 1.4 / 6,
    # a = 2 * m + 0, b = 2 * (1 - m) + 4, a + b = 6
    assert est.p("math/2") == pytest.approx(0.14)
    assert est.p("math/0") == pytest.approx(2 * 1.4 / 6 / 6)
    assert est.cells["math\x001"] == pytest.approx([0.0, 8.0])
    # the group of 4 all failing is now likely for an unseen task of the cell: a = 0.28, b = 1.72
    a, b = 0.28, 1.72
    want = 1.0
    for i in range(4):
        want *= (b + i) / (a + b + i)
    assert est.p_all_equal("math/2", 4) == pytest.approx(want + 0.28 * 1.28 * 2.28 * 3.28 / (2 * 3 * 4 * 5))
    # without pool_cells nothing is shared
    alone = TaskEstimates(tasks, prior_strength=2.0, memory=0.5, retire_after=2)
    alone.observe("math/0", 0, 4)
    assert alone.p("math/1") == pytest.approx(0.7)


def test_families_nest_inside_cells_by_hand() -> None:
    # python/0, 1 of family f; python/2 of family g; python/3 without one: one cell (difficulty 2)
    tasks = [fam(0, "f"), fam(1, "f"), fam(2, "g"), fam(3, None), fam(5, "g")]
    est = TaskEstimates(tasks, prior_strength=2.0, memory=1.0, retire_after=2, pool_by="family", pool_cells=True)
    est.observe("python/0", 4, 4)
    est.observe("python/2", 0, 4)
    # python/1: the cell without family f's evidence is 0 of 4: m_cell = 0.8 / 6; family f
    # without python/1 is 4 of 4: m = (2 * m_cell + 4) / 6
    m_cell = 0.8 / 6
    assert est.p("python/1") == pytest.approx((2 * m_cell + 4) / 6)
    # python/3 (no family): the cell without its own evidence is 4 of 8: m = (0.8 + 4) / 10
    assert est.p("python/3") == pytest.approx(0.48)
    # python/5 (family g): cell without g is 4 of 4: m_cell = 4.8 / 6; g without python/5 is 0 of 4
    assert est.p("python/5") == pytest.approx(2 * (4.8 / 6) / 6)


def test_cells_resume_and_old_checkpoints_rebuild_them() -> None:
    tasks = [task(i, "math") for i in range(3)]
    est = TaskEstimates(tasks, prior_strength=2.0, memory=0.9, retire_after=3, pool_cells=True)
    for i, k in [(0, 1), (1, 0), (0, 2)]:
        est.observe(f"math/{i}", k, 4)
    state = json.loads(json.dumps(est.state_dict()))
    again = TaskEstimates(tasks, prior_strength=2.0, memory=0.9, retire_after=3, pool_cells=True)
    again.load_state_dict(state)
    assert [again.p(f"math/{i}") for i in range(3)] == [est.p(f"math/{i}") for i in range(3)]
    del state["cells"]  # a checkpoint from before cells: their sums come from the tasks' evidence
    old = TaskEstimates(tasks, prior_strength=2.0, memory=0.9, retire_after=3, pool_cells=True)
    old.load_state_dict(state)
    assert old.cells.keys() == est.cells.keys() == {"math\x001"}
    assert old.cells["math\x001"] == pytest.approx(est.cells["math\x001"])


def test_a_family_across_difficulties_nests_in_each_cell() -> None:
    # family F has python/0 at difficulty 1 and python/1 at 2; python/2 shares python/0's cell
    tasks = [fam(0, "F", difficulty=1), fam(1, "F", difficulty=2), fam(2, None, difficulty=1)]
    est = TaskEstimates(tasks, prior_strength=2.0, memory=1.0, retire_after=2, pool_by="family", pool_cells=True)
    est.observe("python/1", 0, 10)
    est.observe("python/2", 0, 10)
    # python/0 is alone in its part of F (difficulty 1): its prior is its cell's, which holds
    # python/2's 0 of 10 (python/1's failures are in another cell and do not cancel them)
    assert est.p("python/0") == pytest.approx(2 * 0.7 / 12)


def test_sums_missing_from_a_checkpoint_are_rebuilt_from_the_tasks() -> None:
    tasks = [task(i, "math") for i in range(3)]
    est = TaskEstimates(tasks, prior_strength=2.0, memory=1.0, retire_after=3, pool_cells=True)
    est.observe("math/0", 1, 4)
    est.observe("math/1", 0, 4)
    state = json.loads(json.dumps(est.state_dict()))
    state["cells"] = {}  # saved by a run whose cells were not pooled
    again = TaskEstimates(tasks, prior_strength=2.0, memory=1.0, retire_after=3, pool_cells=True)
    again.load_state_dict(state)
    assert again.cells["math\x001"] == pytest.approx([1.0, 7.0])
    assert again.p("math/2") == pytest.approx(est.p("math/2"))


def test_resuming_with_other_evidence_units_is_refused_or_starts_the_estimates_afresh() -> None:
    tasks = [task(0), task(1)]
    cur = Curriculum(tasks, seed=0, cfg=cfg(strategy="learnability"), group_size=4)
    cur.observe([_outcome("python/0", 1.0)])
    state = json.loads(json.dumps(cur.state_dict()))
    with pytest.raises(ValueError, match=r"curriculum\.evidence=reward"):
        Curriculum(tasks, seed=0, cfg=cfg(strategy="learnability", evidence="solved"), group_size=4).load_state_dict(
            state
        )
    del state["evidence"]  # from before the setting: its estimates counted solved replies
    old = Curriculum(tasks, seed=0, cfg=cfg(strategy="learnability"), group_size=4)
    old.load_state_dict(state)
    assert old.est.by_id["python/0"].groups == 0 and old.calls == cur.calls  # estimates afresh, draws kept
    same = Curriculum(tasks, seed=0, cfg=cfg(strategy="learnability", evidence="solved"), group_size=4)
    same.load_state_dict(state)
    assert same.est.by_id["python/0"].groups == 1


def test_retire_after_k_agreeing_groups_and_revive_on_a_mixed_one() -> None:
    est = TaskEstimates([task(0)], prior_strength=2.0, memory=0.9, retire_after=2)
    est.observe("python/0", 4, 4)
    assert not est.retired("python/0")
    est.observe("python/0", 4, 4)
    assert est.retired("python/0")
    est.observe("python/0", 2, 4)
    assert not est.retired("python/0")
    est.observe("python/0", 0, 4)
    est.observe("python/0", 0, 4)
    assert est.retired("python/0")  # failed every time counts too


# ---- learnability ---------------------------------------------------------------------


def test_learnability_weights_by_hand() -> None:
    tasks = [task(0), task(1)]
    c = cfg(strategy="learnability", floor=0.02, retired_weight=0.005, retire_after=1, prior_strength=2.0, memory=1.0)
    est = TaskEstimates(tasks, c.prior_strength, c.memory, c.retire_after)
    pool = LearnabilityPool(tasks, "0", c, est)
    assert pool.weight(tasks[0]) == pytest.approx(0.7 * 0.3 + 0.02)  # prior only
    est.observe("python/0", 1, 2)  # a = 1.4 + 1, b = 0.6 + 1: p = 0.6
    assert pool.weight(tasks[0]) == pytest.approx(0.6 * 0.4 + 0.02)
    est.observe("python/1", 2, 2)  # all solved, retire_after 1: retired
    assert pool.weight(tasks[1]) == 0.005


def test_weighted_draws_follow_the_weights_and_never_repeat_within_a_round() -> None:
    items = [task(i) for i in range(3)]
    rng = random.Random(0)
    counts = [0, 0, 0]
    for _ in range(4000):
        (pick,) = weighted_without_replacement(items, [0.25, 0.5, 0.25], 1, rng)
        counts[items.index(pick)] += 1
    assert [abs(c / 4000 - w) < 0.03 for c, w in zip(counts, [0.25, 0.5, 0.25], strict=True)] == [True] * 3
    draw = weighted_without_replacement(items, [1.0, 0.0, 1.0], 3, random.Random(1))
    assert sorted(t.id for t in draw[:2]) == ["python/0", "python/2"] and draw[2].id == "python/1"
    assert len(weighted_without_replacement(items, [1.0, 1.0, 1.0], 7, rng)) == 7


def test_learnability_spends_draws_on_tasks_the_model_sometimes_solves() -> None:
    tasks = [task(0), task(1), task(2)]  # always solved, sometimes, never
    cur = Curriculum(tasks, seed=3, cfg=cfg(strategy="learnability", retire_after=2), group_size=4)
    rate = {"python/0": 1.0, "python/1": 0.5, "python/2": 0.0}
    picks = []
    for _ in range(60):
        drawn = cur.sample(1)
        picks += [t.id for t in drawn]
        cur.observe([_outcome(t.id, rate[t.id]) for t in drawn])
    late = picks[20:]
    assert late.count("python/1") > 0.8 * len(late)
    assert cur.metrics()["retired"] == 2.0
    assert {"python/0", "python/2"} & set(late)  # retired tasks are still revisited now and then


# ---- ladder ---------------------------------------------------------------------------


def test_ladder_moves_up_and_down_by_hand() -> None:
    tasks = [task(0, difficulty=1), task(1, difficulty=2), task(2, difficulty=3)]
    c = cfg(strategy="ladder", ladder_up=0.6, ladder_down=0.1, ladder_window=4, ladder_review=0.0)
    pool = LadderPool(tasks, "0", c, TaskEstimates(tasks, 2.0, 0.9, 3))
    assert [t.id for t in pool.draw(3, random.Random(0))] == ["python/0"] * 3
    pool.observe(tasks[0], 2, 2)  # window 2 of 4: no move yet
    assert pool.band == 0
    pool.observe(tasks[0], 1, 2)  # 3 of 4 = 0.75 >= 0.6: up
    assert pool.band == 1 and pool.window == []
    pool.observe(tasks[0], 0, 4)  # a review draw does not move the ladder
    assert pool.band == 1
    pool.observe(tasks[1], 0, 4)  # 0 of 4 <= 0.1: down
    assert pool.band == 0
    assert pool.metrics()["band"] == 1.0


def test_ladder_review_draws_from_easier_bands_only() -> None:
    tasks = [task(i, difficulty=1 + i % 3) for i in range(9)]
    c = cfg(strategy="ladder", ladder_review=0.5)
    pool = LadderPool(tasks, "0", c, TaskEstimates(tasks, 2.0, 0.9, 3))
    pool.band = 1
    drawn = pool.draw(200, random.Random(0))
    levels = [t.difficulty for t in drawn]
    assert set(levels) == {1, 2} and 70 < levels.count(1) < 130


# ---- domains ----------------------------------------------------------------------------


def test_group_signal_by_hand() -> None:
    assert group_signal([0.0, 1.0, 0.0, 1.0]) == 1.0
    assert group_signal([1.0, 1.0, 1.0, 1.0]) == 0.0
    assert group_signal([0.0, 0.0, 0.0, 1.0]) == pytest.approx(0.75)  # mean |r - 0.25| = 0.375


def test_fixed_weights_and_a_misnamed_domain() -> None:
    mix = DomainMix(["math", "python"], cfg(domain_mix="fixed", domain_weights={"python": 3.0}))
    assert mix.shares() == {"math": 0.25, "python": 0.75}
    with pytest.raises(ValueError, match=r"names \['pyhton'\], not among"):
        DomainMix(["math", "python"], cfg(domain_mix="fixed", domain_weights={"pyhton": 3.0}))


def test_bandit_update_and_shares_by_hand() -> None:
    c = cfg(domain_mix="bandit", bandit_temperature=0.1, min_domain_share=0.05, memory=0.9)
    mix = DomainMix(["math", "python"], c)
    assert mix.shares() == pytest.approx({"math": 0.5, "python": 0.5})
    mix.observe("python", [0.0, 1.0, 0.0, 1.0])  # signal 1: 0.9 * 0.5 + 0.1 = 0.55
    mix.observe("math", [1.0, 1.0, 1.0, 1.0])  # signal 0: 0.45
    assert mix.score == pytest.approx({"math": 0.45, "python": 0.55})
    soft = 2.718281828 / (1 + 2.718281828)  # exp(5.5) / (exp(5.5) + exp(4.5))
    assert mix.shares()["python"] == pytest.approx(0.9 * soft + 0.05)


def test_bandit_moves_rollouts_to_the_domain_that_teaches_and_keeps_a_floor() -> None:
    tasks = [task(i, "math") for i in range(4)] + [task(i, "python") for i in range(4)]
    c = cfg(domain_mix="bandit", strategy="learnability", min_domain_share=0.1)
    cur = Curriculum(tasks, seed=0, cfg=c, group_size=4)
    for _ in range(30):
        drawn = cur.sample(4)
        cur.observe([_outcome(t.id, 0.5 if t.domain == "python" else 1.0) for t in drawn])
    m = cur.metrics()
    assert m["domain_weight/python"] > 0.8 and m["domain_weight/math"] >= 0.1


# ---- the composed curriculum ---------------------------------------------------------------


def _outcome(task_id: str, rate: float, n: int = 4) -> Outcome:
    k = round(rate * n)
    return Outcome(task_id, [1.0] * k + [0.0] * (n - k), [True] * k + [False] * (n - k))


def test_defaults_sample_what_the_old_uniform_sampler_did() -> None:
    tasks = [task(i) for i in range(5)]
    cur = Curriculum(tasks, seed=7)
    got = [t.id for t in cur.sample(12)]
    want = []
    for epoch in range(3):
        order = list(range(5))
        random.Random(f"7:{epoch}").shuffle(order)
        want += [tasks[i].id for i in order]
    assert got == want[:12]


def test_prefilter_skips_predictable_tasks_but_revisits_them() -> None:
    tasks = [task(0), task(1, difficulty=2)]  # two cells: python/0's evidence stays its own
    cur = Curriculum(tasks, seed=0, cfg=cfg(strategy="uniform", prefilter=0.9, memory=1.0), group_size=4)
    for _ in range(6):
        cur.observe([_outcome("python/0", 1.0)])  # solved every time: the group will agree
    drawn = [t.id for _ in range(12) for t in cur.sample(1)]
    skipped = int(cur.metrics()["prefiltered"])
    total = skipped + drawn.count("python/0")  # times python/0 came up
    assert skipped >= 3 and drawn.count("python/0") == total // 4  # every fourth one is generated
    assert cur.skips["python/0"] == total


def test_metrics_informative_share_and_calibration() -> None:
    tasks = [task(0, difficulty=2), task(1, difficulty=2)]
    cur = Curriculum(tasks, seed=0, cfg=cfg(prior_strength=2.0), group_size=4)
    cur.sample(2)
    cur.observe([_outcome("python/0", 0.5), _outcome("python/1", 1.0)])
    m = cur.metrics()
    assert m["informative"] == 0.5
    # python/0 was predicted at the prior 0.4; python/1, observed after it in the same
    # cell, at (k * 0.4 + 2) / (k + 4) = 2.8 / 6
    assert m["predicted_pass"] == pytest.approx((0.4 + 2.8 / 6) / 2) and m["observed_pass"] == pytest.approx(0.75)
    assert m["calibration_error"] == pytest.approx((0.1 + (1 - 2.8 / 6)) / 2)
    assert m["difficulty_share/2"] == 1.0 and m["domain_share/python"] == 1.0
    assert "informative" not in cur.metrics()  # counted per step


def test_partial_credit_is_evidence_unless_told_to_count_solved_replies() -> None:
    tasks = [task(0, difficulty=2), task(1, difficulty=3)]
    group = Outcome("python/0", [0.5, 0.25, 1.5, -0.2], [False] * 4)  # none solved, rewards clipped to 0..1
    by_reward = Curriculum(tasks, seed=0, cfg=cfg(), group_size=4)
    by_reward.observe([group])
    # a = 0.8 + (0.5 + 0.25 + 1 + 0), b = 1.2 + (4 - 1.75)
    assert by_reward.est.p("python/0") == pytest.approx(2.55 / 6)
    assert by_reward.metrics()["observed_pass"] == pytest.approx(1.75 / 4)
    by_solved = Curriculum(tasks, seed=0, cfg=cfg(evidence="solved"), group_size=4)
    by_solved.observe([group])
    assert by_solved.est.p("python/0") == pytest.approx(0.8 / 6)


def test_informative_evidence_by_hand() -> None:
    tasks = [task(0, difficulty=2), task(1, difficulty=3)]
    c = cfg(strategy="learnability", evidence="informative", prior_strength=2.0, memory=1.0, retire_after=2, floor=0.0)
    cur = Curriculum(tasks, seed=0, cfg=c, group_size=4)
    # the difficulty-2 prior 0.4 as the chance that 4 replies disagree: 1 - 0.4^4 - 0.6^4
    m = 1 - 0.4**4 - 0.6**4
    assert cur.est.p("python/0") == pytest.approx(m)
    flat = Outcome("python/0", [0.75] * 4, [False] * 4)  # 3 of 4 tests each time: mean 0.75, teaches nothing
    cur.observe([flat])
    # one event, not informative: a = 2m, b = 2(1 - m) + 1
    assert cur.est.p("python/0") == pytest.approx(2 * m / 3)
    assert cur.est.p_all_equal("python/0", 4) == pytest.approx(1 - 2 * m / 3)
    pool = cur.pools["*"]
    assert pool.weight(tasks[0]) == pytest.approx(2 * m / 3)  # type: ignore[attr-defined]
    assert cur.metrics()["observed_pass"] == 0.0
    cur.observe([flat])
    assert cur.est.retired("python/0")  # two uninformative groups in a row
    mixed = Outcome("python/1", [1.0, 0.0, 0.5, 0.5], [True, False, False, False])
    cur.observe([mixed, mixed, mixed])
    assert not cur.est.retired("python/1")  # informative every time: never retired for it
    # by mean reward the flat task would look as learnable as any: p -> 0.75, p(1-p) ~ 0.19
    by_reward = Curriculum(tasks, seed=0, cfg=cfg(strategy="learnability", floor=0.0, memory=1.0), group_size=4)
    by_reward.observe([flat, flat])
    assert by_reward.est.teaching("python/0") > 0.15


def test_informative_evidence_finds_the_tasks_whose_groups_teach() -> None:
    """Partial credit: half the tasks give every reply the same part (0.5), the others a
    spread. By mean reward both look alike; counting informative groups tells them apart."""
    tasks = [task(i, "python", 2) for i in range(40)]  # each drawn about 8 times in 40 steps of 8
    spread = {t.id for t in tasks[::2]}
    rng = random.Random(0)

    def share_of_spread(evidence: str) -> float:
        c = cfg(strategy="learnability", evidence=evidence, prefilter=0.8, prior_strength=1.0, pool_cells=False)
        cur = Curriculum(tasks, seed=2, cfg=c, group_size=4)
        later = []
        for step in range(40):
            batch = cur.sample(8)
            later += [t.id in spread for t in batch] if step >= 20 else []
            outs = []
            for t in batch:
                rewards = [rng.choice([0.0, 0.5, 1.0]) for _ in range(4)] if t.id in spread else [0.5] * 4
                outs.append(Outcome(t.id, rewards, [r == 1.0 for r in rewards]))
            cur.observe(outs)
        return sum(later) / len(later)

    informative, by_reward = share_of_spread("informative"), share_of_spread("reward")  # 0.88, 0.51 by seed
    assert informative > 0.75
    assert by_reward < 0.65


def test_learnability_with_cells_drops_a_hopeless_domain_within_a_few_steps() -> None:
    """A mix like the bench's: half of the tasks are never solved (no families to pool);
    the other half are solved half the time. With cells pooled and the prefilter, the
    hopeless domain's share of draws falls far below its half within ten steps of 8."""
    tasks = [task(i, "math", 1 + i % 3) for i in range(150)] + [task(i, "python", 1 + i % 3) for i in range(150)]
    rng = random.Random(0)

    def share_of_math(**kw: object) -> float:
        cur = Curriculum(tasks, seed=1, cfg=cfg(strategy="learnability", **kw), group_size=4)
        drawn = []
        for step in range(20):
            batch = cur.sample(8)
            drawn += [t.domain for t in batch] if step >= 10 else []
            outs = []
            for t in batch:
                solved = [t.domain == "python" and rng.random() < 0.5 for _ in range(4)]
                outs.append(Outcome(t.id, [float(s) for s in solved], solved))
            cur.observe(outs)
        return drawn.count("math") / len(drawn)

    pooled = share_of_math(prefilter=0.8)
    assert pooled < 0.15
    assert share_of_math(prefilter=0.8, pool_cells=False) > 0.3  # each task alone: still about half


def test_canary_and_unknown_outcomes_are_ignored() -> None:
    cur = Curriculum([task(0)], seed=0, group_size=2)
    cur.observe([Outcome("python/0#canary/1", [1.0, 1.0], [True, True]), Outcome("other/1", [0.0], [False])])
    assert cur.est.by_id["python/0"].groups == 0


SETTINGS = [
    {},
    {"strategy": "learnability"},
    {"strategy": "learnability", "prefilter": 0.8},
    {"strategy": "learnability", "prefilter": 0.8, "evidence": "informative", "pool_cells": False},
    {"strategy": "ladder", "ladder_window": 4},
    {"domain_mix": "fixed", "domain_weights": {"math": 2.0}},
    {"domain_mix": "bandit", "strategy": "learnability"},
    {"domain_mix": "bandit", "strategy": "ladder", "ladder_window": 4},
    {"domain_mix": "bandit", "strategy": "learnability", "family_cap": 1, "family_window": 3, "max_domain_share": 0.6},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default")
def test_a_resumed_curriculum_samples_what_the_uninterrupted_one_would(settings: dict) -> None:
    tasks = [task(i, d, 1 + i % 3) for d in ("math", "python") for i in range(6)]
    rate = {t.id: (hash(t.id) % 5) / 4 for t in tasks}

    def run(c: Curriculum, rounds: int) -> list[str]:
        out = []
        for _ in range(rounds):
            drawn = c.sample(3)
            out += [t.id for t in drawn]
            c.observe([_outcome(t.id, rate[t.id]) for t in drawn])
            c.metrics()
        return out

    straight = Curriculum(tasks, seed=5, cfg=cfg(**settings), group_size=4)
    whole = run(straight, 12)
    first = Curriculum(tasks, seed=5, cfg=cfg(**settings), group_size=4)
    head = run(first, 5)
    state = first.state_dict()
    resumed = Curriculum(tasks, seed=5, cfg=cfg(**settings), group_size=4)
    resumed.load_state_dict(json.loads(json.dumps(state)))  # as a checkpoint stores it
    assert head + run(resumed, 7) == whole


def test_an_old_checkpoint_resumes_the_uniform_sampler_only() -> None:
    tasks = [task(i) for i in range(4)]
    cur = Curriculum(tasks, seed=1)
    cur.load_state_dict({"epoch": 2, "pos": 1})
    assert cur.pools["*"].state_dict() == {"epoch": 2, "pos": 1}
    with pytest.raises(ValueError, match=r"curriculum\.strategy uniform"):
        Curriculum(tasks, seed=1, cfg=cfg(strategy="learnability")).load_state_dict({"epoch": 2, "pos": 1})


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match="ladder_down"):
        cfg(ladder_up=0.3, ladder_down=0.5)
    with pytest.raises(ValueError, match="strategy"):
        load_config(None, ["curriculum.strategy=lilo"])


@pytest.mark.parametrize("name", ["curriculum_learnability", "curriculum_ladder", "curriculum_bandit"])
def test_each_curriculum_example_builds_and_samples(name: str) -> None:
    from pathlib import Path

    from rlvr.tasks import load_tasks

    c = load_config(Path(__file__).parents[2] / "examples" / f"{name}.yaml")
    tasks = load_tasks(c.tasks.source)
    cur = Curriculum(tasks, c.seed, c.curriculum, c.algo.group_size)
    drawn = cur.sample(c.train.prompts_per_step)
    assert len(drawn) == c.train.prompts_per_step
    cur.observe([_outcome(t.id, 0.5) for t in drawn])
    assert cur.metrics()["informative"] == 1.0


# ---- many domains: a ceiling per domain, a cap per family ---------------------------


def test_a_ceiling_gives_the_excess_to_the_others_in_proportion() -> None:
    # a: 0.7 -> 0.5; its 0.2 goes to b and c as 0.2:0.1, i.e. b 0.2 + 0.1333, c 0.1 + 0.0667
    got = capped({"a": 0.7, "b": 0.2, "c": 0.1}, 0.5)
    assert got == pytest.approx({"a": 0.5, "b": 0.2 + 0.2 * 2 / 3, "c": 0.1 + 0.2 / 3})
    # a ceiling of 0.3 with 3 domains is raised to 1/3; a's excess lifts b over it, and
    # b's excess goes to c: a, b, c = 1/3 each (a: 0.7 -> 1/3; b: 0.2 + 0.2444 -> 1/3;
    # c: 0.1 + 0.1222 + 0.1111 = 1/3)
    got = capped({"a": 0.7, "b": 0.2, "c": 0.1}, 0.3)
    assert got == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})
    assert capped({"a": 0.9, "b": 0.1}, 0.2) == pytest.approx({"a": 0.5, "b": 0.5})  # at least 1/n
    assert capped({"a": 0.5, "b": 0.5}, 1.0) == {"a": 0.5, "b": 0.5}


def test_the_bandit_keeps_every_domain_between_its_floor_and_its_ceiling() -> None:
    domains = [f"d{i}" for i in range(100)]
    mix = DomainMix(domains, cfg(domain_mix="bandit", min_domain_share=0.002, max_domain_share=0.05))
    for _ in range(40):  # one domain teaches on every group, the rest never
        mix.observe("d7", [0.0, 1.0, 0.0, 1.0])
        for d in domains[20:40]:
            mix.observe(d, [0.0, 0.0])
    shares = mix.shares()
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["d7"] == pytest.approx(0.05)  # without the ceiling it would take most draws
    assert min(shares.values()) >= 0.002 - 1e-12
    free = DomainMix(domains, cfg(domain_mix="bandit", min_domain_share=0.002))
    for _ in range(40):
        free.observe("d7", [0.0, 1.0, 0.0, 1.0])
    assert free.shares()["d7"] > 0.4


def _family_task(i: int, family: str) -> Task:
    return Task(id=f"python/{i}", domain="python", prompt="p", tests={}, metadata={"family": family})


def test_the_family_cap_keeps_draws_diverse_and_lifts_only_when_nothing_else_is_left() -> None:
    # 8 tasks of family a, 2 of b, 2 of c; a's are the ones the estimates favour
    tasks = [_family_task(i, "a") for i in range(8)] + [_family_task(8 + i, f) for i, f in enumerate("bbcc")]
    rate = {t.id: 0.5 if t.metadata["family"] == "a" else 0.0 for t in tasks}

    def families(c: Curriculum, steps: int) -> list[str]:
        out = []
        for _ in range(steps):
            drawn = c.sample(3)
            out += [t.metadata["family"] for t in drawn]
            c.observe([_outcome(t.id, rate[t.id]) for t in drawn])
            c.metrics()
        return out

    free = families(Curriculum(tasks, seed=3, cfg=cfg(strategy="learnability", pool_cells=False), group_size=4), 10)
    capped_run = Curriculum(
        tasks, seed=3, cfg=cfg(strategy="learnability", pool_cells=False, family_cap=1, family_window=2), group_size=4
    )
    got = families(capped_run, 10)
    assert free.count("a") > 20  # left alone, family a takes most draws
    for i in range(len(got) - 1):  # no family twice in a row (3 families: never lifted)
        window = got[i : i + 2]
        assert max(window.count(f) for f in "abc") == 1, window
    m = Curriculum(tasks, seed=3, cfg=cfg(strategy="learnability", family_cap=1, family_window=2), group_size=4)
    m.sample(3)
    assert m.metrics()["family_diversity"] == 1.0
    # a call asking for more than the cap allows: the cap is lifted for what is left
    tight = Curriculum(tasks[:4], seed=1, cfg=cfg(strategy="learnability", family_cap=1, family_window=8), group_size=4)
    assert len({t.id for t in tight.sample(4)}) == 4


def test_family_cap_and_ceiling_refuse_settings_where_they_do_nothing() -> None:
    with pytest.raises(ValueError, match="family_cap applies to strategy learnability"):
        cfg(family_cap=2)
    with pytest.raises(ValueError, match="max_domain_share applies to domain_mix bandit or fixed"):
        cfg(max_domain_share=0.5)
    with pytest.raises(ValueError, match="below min_domain_share"):
        cfg(domain_mix="bandit", min_domain_share=0.1, max_domain_share=0.05)
