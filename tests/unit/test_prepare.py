"""The learner's preparation pieces (rlvr.learner.prepare) against hand-worked examples."""

from __future__ import annotations

import math

import pytest
import torch

from rlvr.algos.kl import kl_k1
from rlvr.config import AlgoConfig, load_config
from rlvr.learner.logprobs import TokenStats
from rlvr.learner.prepare import (
    Advantages,
    Needs,
    Prepared,
    assemble,
    group_advantages,
    importance,
    inert,
    loss_masks,
    normalisers,
    pad_rows,
    policy_pass,
    reference_kl,
    token_advantages,
)
from rlvr.types import RewardBreakdown, Trajectory


def traj(
    group: str,
    completion: list[int],
    reward: float | None = 0.0,
    *,
    logprobs: list[float] | None = None,
    loss_mask: list[int] | None = None,
    finish: str = "eos",
) -> Trajectory:
    return Trajectory(
        task_id=group,
        domain="python",
        group_id=group,
        prompt_ids=[1, 2],
        completion_ids=completion,
        logprobs=logprobs if logprobs is not None else [-1.0] * len(completion),
        loss_mask=loss_mask if loss_mask is not None else [],
        finish_reason=finish,
        reward=RewardBreakdown(total=reward, components={}) if reward is not None else None,
    )


def algo(*overrides: str) -> AlgoConfig:
    return load_config(None, list(overrides)).algo


def stats(logprobs: list[list[float]], values: list[list[float]] | None = None) -> TokenStats:
    lp = torch.tensor(logprobs)
    return TokenStats(lp, torch.zeros_like(lp), torch.ones_like(lp), torch.tensor(values) if values else None)


def test_needs_follow_the_algorithm() -> None:
    assert Needs.of(algo()) == Needs(proximal=False, values=False, ref_kl=False)
    assert Needs.of(algo("algo.decoupled=true")).proximal
    assert Needs.of(algo("algo.importance=token")).policy_pass
    n = Needs.of(algo("algo.advantage=gae", "algo.group_size=1", "algo.kl_coef=0.1", "algo.kl_in=reward"))
    assert n == Needs(proximal=False, values=True, ref_kl=True) and n.policy_pass
    assert not Needs.of(algo("algo.kl_coef=0.1")).ref_kl  # KL in the loss: no pass before the update


def test_loss_masks() -> None:
    trajs = [
        traj("a", [5, 6, 7], loss_mask=[1, 0, 1]),  # an environment token in the middle
        traj("a", [5, 6], loss_mask=[1]),  # a mask that does not cover the completion: all tokens
        traj("b", [5, 6], finish="length"),  # cut off at the token limit
    ]
    assert loss_masks(trajs, overlong_filter=False) == [[1.0, 0.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    assert loss_masks(trajs, overlong_filter=True) == [[1.0, 0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]


def test_compact_filter_masks_episodes_a_budget_cut() -> None:
    trajs = [
        traj("a", [5, 6, 7], loss_mask=[1, 0, 1]),  # submitted: trained
        traj("a", [5, 6], finish="turns"),  # wanted another turn, had none
        traj("a", [5, 6], finish="budget"),  # the environment's own budget (calls, wall time)
        traj("a", [5, 6], finish="context"),  # the context limit
        traj("a", [5, 6], finish="length"),  # cut at the token limit: the overlong filter's, not this one's
    ]
    both = loss_masks(trajs, overlong_filter=False, compact_filter=True)
    assert both == [[1.0, 0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    assert loss_masks(trajs, overlong_filter=False) == [[1.0, 0.0, 1.0]] + [[1.0, 1.0]] * 4
    assert loss_masks(trajs, overlong_filter=True, compact_filter=True)[4] == [0.0, 0.0]


def test_pad_rows() -> None:
    assert pad_rows([[1.0, 2.0, 3.0], [4.0], []], 2).tolist() == [[1.0, 2.0], [4.0, 0.0], [0.0, 0.0]]


def test_policy_pass_places_rows_whatever_the_micro_batches() -> None:
    trajs = [traj("a", [5, 6], logprobs=[-1.0, -2.0]), traj("a", [7], logprobs=[-3.0]), traj("b", [8, 9, 10])]
    # rows 2 and 0 in one micro-batch (sorted by length, padded to 3), row 1 alone
    batches = [
        ([2, 0], stats([[-0.1, -0.2, -0.3], [-0.4, -0.5, 9.9]], [[1.0, 2.0, 3.0], [4.0, 5.0, 9.9]])),
        ([1], stats([[-0.6]], [[6.0]])),
    ]
    prox, values = policy_pass(trajs, batches, proximal=True)
    assert [pytest.approx(r) for r in prox] == [[-0.4, -0.5], [-0.6], [-0.1, -0.2, -0.3]]
    assert values == [[4.0, 5.0], [6.0], [1.0, 2.0, 3.0]]
    # not proximal (gae alone): the behaviour log-probs stay, values are read
    prox, values = policy_pass(trajs, batches, proximal=False)
    assert prox == [[-1.0, -2.0], [-3.0], [-1.0, -1.0, -1.0]] and values[1] == [6.0]
    # no value head: empty values
    _, values = policy_pass(trajs, [([0, 1, 2], stats([[0.0] * 3] * 3))], proximal=True)
    assert values == [[], [], []]


def test_reference_kl_is_per_token_and_masked() -> None:
    trajs = [traj("a", [5, 6], logprobs=[-1.0, -2.0]), traj("a", [7], logprobs=[-3.0])]
    ref = stats([[-1.5, -1.0], [-2.0, 0.0]])
    ref = ref._replace(mask=torch.tensor([[1.0, 1.0], [1.0, 0.0]]))
    # k1 = behaviour - reference
    assert reference_kl(trajs, [([0, 1], ref)], kl_k1) == [[0.5, -1.0], [-1.0]]
    assert reference_kl(trajs, [], kl_k1) == [[0.0, 0.0], [0.0]]


def test_group_advantages_hand_worked() -> None:
    trajs = [traj("a", [5], 1.0), traj("b", [5], 0.0), traj("a", [5], 0.0), traj("b", [5], 0.5)]
    # drgrpo: reward minus the group mean (a: 0.5, b: 0.25)
    assert group_advantages(trajs, "drgrpo") == [0.5, -0.25, -0.5, 0.25]
    # rloo with G = 2: r_i - r_other
    assert group_advantages(trajs, "rloo") == [1.0, -0.5, -1.0, 0.5]
    # grpo: (r - mean) / (std + 1e-6); the sample std of two values d apart is d / sqrt(2)
    adv = group_advantages(trajs, "grpo")
    assert adv[0] == pytest.approx(0.5 / (1 / math.sqrt(2) + 1e-6))
    assert adv[1] == pytest.approx(-0.25 / (0.5 / math.sqrt(2) + 1e-6))
    with pytest.raises(ValueError, match="same size"):
        group_advantages([*trajs, traj("c", [5])], "grpo")


def test_group_token_advantages_with_kl_in_the_reward() -> None:
    trajs = [traj("a", [5, 6], 1.0), traj("a", [7], 0.0), traj("b", [8], None), traj("b", [9, 9, 9], 1.0)]
    masks = loss_masks(trajs, overlong_filter=False)
    ac = algo("algo.advantage=drgrpo", "algo.kl_coef=0.5", "algo.kl_in=reward")
    plain = token_advantages(trajs, masks, ac)
    # a: mean 0.5; b: mean 0.5 (a missing reward counts 0)
    assert plain.sequence == [0.5, -0.5, -0.5, 0.5]
    assert plain.tokens == [[0.5, 0.5], [-0.5], [-0.5], [0.5, 0.5, 0.5]]
    assert plain.returns == [[], [], [], []] and plain.metrics == {}
    kl = [[0.2, 0.2], [0.0], [0.0], [1.0, 0.5, 0.5]]
    got = token_advantages(trajs, masks, ac, kl=kl)
    # rewards minus 0.5 * summed KL: a: 0.8, 0.0 (mean 0.4); b: 0.0, 0.0 (mean 0.0)
    assert got.sequence == pytest.approx([0.4, -0.4, 0.0, 0.0])
    assert got.tokens[0] == pytest.approx([0.4, 0.4])
    assert got.metrics["kl_reward"] == pytest.approx((0.4 + 0.0 + 0.0 + 2.0) / 4)


def test_gae_token_advantages_hand_worked() -> None:
    ac = algo("algo.advantage=gae", "algo.group_size=1", "algo.gamma=1", "algo.lam=0.5")
    # one row, reward 1 on its last token, values 0.5, 0.25:
    # delta_1 = 1 + 0 - 0.25 = 0.75, A_1 = 0.75; delta_0 = 0 + 0.25 - 0.5 = -0.25,
    # A_0 = -0.25 + 0.5 * 0.75 = 0.125; returns A + V = 0.625, 1.0
    trajs = [traj("a", [5, 6], 1.0)]
    got = token_advantages(trajs, [[1.0, 1.0]], ac, values=[[0.5, 0.25]])
    assert got.returns == [pytest.approx([0.625, 1.0])]
    # whitened over the batch's two tokens: mean 0.4375, sample std 0.3125 * sqrt(2)
    s = 0.3125 * math.sqrt(2)
    assert got.tokens[0] == pytest.approx([-0.3125 / s, 0.3125 / s], abs=1e-6)
    assert got.sequence == [pytest.approx(0.0, abs=1e-6)]

    # two rows, zero values, gamma = lambda = 1: the advantage is the reward on every
    # token, minus the KL still to come; one masked token stays out of the whitening
    ac = algo("algo.advantage=gae", "algo.group_size=1", "algo.gamma=1", "algo.lam=1", "algo.kl_coef=0.5")
    trajs = [traj("a", [5, 6], 1.0), traj("b", [7, 8, 9], 0.0)]
    masks = [[1.0, 1.0], [1.0, 1.0, 0.0]]
    kl = [[0.0, 0.0], [0.0, 0.0, 2.0]]  # -1 reward on row b's last token
    got = token_advantages(trajs, masks, ac, kl=kl, values=[[0.0, 0.0], [0.0, 0.0, 0.0]])
    assert got.returns == [[1.0, 1.0], [-1.0, -1.0, -1.0]]
    # masked values 1, 1, -1, -1: mean 0, sample std sqrt(4/3); the masked token gets 0
    a = 1 / math.sqrt(4 / 3)
    assert got.tokens[0] == pytest.approx([a, a], abs=1e-6)
    assert got.tokens[1] == pytest.approx([-a, -a, 0.0], abs=1e-6)
    assert got.metrics["kl_reward"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="values"):
        token_advantages(trajs, masks, ac)


def test_importance_weights_and_metrics() -> None:
    masks = [[1.0, 1.0], [1.0, 0.0]]
    prox = [[-1.0, -1.0], [-1.0, -5.0]]
    behav = [[-2.0, -1.0], [-1.5, -1.0]]
    # log w: 1, 0 | 0.5, (masked)
    w, m = importance(masks, prox, behav, "token", 2.0)
    assert w == [pytest.approx([2.0, 1.0]), pytest.approx([math.exp(0.5), 0.0])]
    assert m["behaviour_prox_mismatch"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert m["is_weight_mean"] == pytest.approx((2.0 + 1.0 + math.exp(0.5)) / 3)
    assert m["is_truncated_frac"] == pytest.approx(1 / 3)  # e^1 > 2
    w, _ = importance(masks, prox, behav, "sequence", 2.0)  # exp(1) capped at 2; exp(0.5)
    assert w == [pytest.approx([2.0, 2.0]), pytest.approx([math.exp(0.5), 0.0])]
    w, m2 = importance(masks, prox, behav, "none", 2.0)
    assert w is None and m2["behaviour_prox_mismatch"] == m["behaviour_prox_mismatch"]


def test_assemble_normalisers_and_inert_rows() -> None:
    trajs = [traj("a", [5, 6], 1.0), traj("a", [7], 0.0)]
    adv = Advantages([[0.5, 0.5], [0.0]], [[1.0, 1.0], [0.0]], [0.5, 0.0])
    rows = assemble(trajs, [[1.0, 0.0], [1.0]], [[-1.0, -1.0], [-2.0]], adv)
    assert rows[0] == Prepared(trajs[0], [1.0, 0.0], [-1.0, -1.0], [0.5, 0.5])
    rows = assemble(
        trajs, [[1.0, 0.0], [1.0]], [[-1.0, -1.0], [-2.0]], adv, weights=[[1.0, 2.0], [1.0]], values=[[0.1, 0.2], [0.3]]
    )
    assert rows[1] == Prepared(trajs[1], [1.0], [-2.0], [0.0], [1.0], [0.3], [0.0])
    norms = normalisers(rows, 16)
    assert (norms.num_tokens, norms.num_seqs, norms.norm_len) == (2.0, 2.0, 16.0)
    assert norms.kwargs() == {"num_tokens": 2.0, "num_seqs": 2.0, "norm_len": 16.0}
    assert not inert(rows[0]) and inert(rows[1])
    # an advantage on a masked-out token only: inert
    assert inert(Prepared(trajs[0], [0.0, 1.0], [0.0, 0.0], [0.3, 0.0]))
