import math

import pytest
import torch

from rlvr.algos import (
    ADVANTAGES,
    KL_ESTIMATORS,
    POLICY_LOSSES,
    aggregate,
    drgrpo_advantages,
    grpo_advantages,
    kl_k1,
    kl_k2,
    kl_k3,
    ppo_clip_loss,
)


def test_grpo_advantages_hand_worked() -> None:
    # group [1, 0, 0, 1]: mean 0.5; unbiased std = sqrt(4 * 0.25 / 3) = sqrt(1/3) = 0.57735
    # advantages = ±0.5 / 0.57735 = ±0.866025
    adv = grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), eps=0.0)
    assert torch.allclose(adv, torch.tensor([[0.866025, -0.866025, -0.866025, 0.866025]]), atol=1e-5)


def test_grpo_equal_rewards_give_zero() -> None:
    adv = grpo_advantages(torch.tensor([[0.3, 0.3, 0.3], [1.0, 1.0, 1.0]]))
    assert torch.equal(adv, torch.zeros(2, 3))


def test_drgrpo_has_no_std_scaling() -> None:
    # group [1, 0, 0, 0]: mean 0.25 -> [0.75, -0.25, -0.25, -0.25]
    adv = drgrpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
    assert torch.allclose(adv, torch.tensor([[0.75, -0.25, -0.25, -0.25]]))


def test_advantages_reject_flat_input() -> None:
    with pytest.raises(ValueError, match=r"\[B, G\]"):
        grpo_advantages(torch.tensor([1.0, 0.0]))


def test_registry_unknown_name_lists_valid() -> None:
    with pytest.raises(KeyError, match="valid names: drgrpo, gae, grpo"):
        ADVANTAGES.get("gpro")
    assert "ppo_clip" in POLICY_LOSSES.names()
    assert KL_ESTIMATORS.names() == ["k1", "k2", "k3"]


def test_ppo_clip_hand_worked() -> None:
    # Three tokens of one sequence, advantage +1 on all:
    #   token 0: ratio = e^0 = 1.0            -> surrogate min(1.0, 1.0) = 1.0
    #   token 1: ratio = e^0.5 = 1.6487       -> clipped at 1 + clip_high = 1.28; min = 1.28
    #   token 2: ratio = e^-0.5 = 0.6065      -> unclipped 0.6065 < clipped 0.8; min = 0.6065
    # token-mean loss = -(1.0 + 1.28 + 0.6065) / 3 = -0.962177
    old = torch.zeros(1, 3)
    new = torch.tensor([[0.0, 0.5, -0.5]])
    loss, m = ppo_clip_loss(new, old, torch.tensor([1.0]), torch.ones(1, 3), clip_low=0.2, clip_high=0.28)
    assert loss.item() == pytest.approx(-(1.0 + 1.28 + math.exp(-0.5)) / 3, abs=1e-6)
    assert m["clip_frac"] == pytest.approx(1 / 3)


def test_ppo_clip_negative_advantage_uses_low_clip() -> None:
    # advantage -1, ratio = e^-0.5 = 0.6065: unclipped -0.6065, clipped (at 0.8) -0.8;
    # min(-0.6065, -0.8) = -0.8 -> loss 0.8 (the clip stops pushing the ratio further down)
    loss, _ = ppo_clip_loss(
        torch.tensor([[-0.5]]), torch.zeros(1, 1), torch.tensor([-1.0]), torch.ones(1, 1), clip_low=0.2, clip_high=0.28
    )
    assert loss.item() == pytest.approx(0.8, abs=1e-6)


def test_ppo_gradient_on_policy_is_minus_advantage() -> None:
    # At ratio 1 the gradient of -ratio*A w.r.t. logp is -A per token, / number of tokens.
    logp = torch.zeros(2, 2, requires_grad=True)
    loss, _ = ppo_clip_loss(logp, torch.zeros(2, 2), torch.tensor([1.0, -2.0]), torch.ones(2, 2))
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-0.25, -0.25], [0.5, 0.5]]))


def test_aggregations_hand_worked() -> None:
    # seq 0 has 3 tokens [1, 2, 3]; seq 1 has 1 token [4] (then padding)
    v = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
    m = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    # token-mean: (1+2+3+4) / 4 = 2.5
    assert aggregate(v, m, "token-mean").item() == pytest.approx(2.5)
    # seq-mean-token-mean: (6/3 + 4/1) / 2 = 3.0
    assert aggregate(v, m, "seq-mean-token-mean").item() == pytest.approx(3.0)
    # seq-mean-token-sum with norm_len 4: (6 + 4) / (2 * 4) = 1.25
    assert aggregate(v, m, "seq-mean-token-sum", norm_len=4).item() == pytest.approx(1.25)
    with pytest.raises(ValueError, match="norm_len"):
        aggregate(v, m, "seq-mean-token-sum")
    with pytest.raises(ValueError, match="valid: token-mean"):
        aggregate(v, m, "mean")


def test_aggregation_global_normaliser_splits_exactly() -> None:
    v = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
    m = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum"):
        whole = aggregate(v, m, mode, norm_len=3)
        parts = sum(
            aggregate(v[i : i + 1], m[i : i + 1], mode, num_tokens=4.0, num_seqs=2.0, norm_len=3) for i in range(2)
        )
        assert float(parts) == pytest.approx(float(whole))


def test_kl_estimators_hand_worked() -> None:
    # logp = -1, ref = -2: log_ratio = 1
    # k1 = 1; k2 = 0.5; k3 = e^-1 - 1 + 1 = 0.367879
    lp, ref = torch.tensor([-1.0]), torch.tensor([-2.0])
    assert kl_k1(lp, ref).item() == pytest.approx(1.0)
    assert kl_k2(lp, ref).item() == pytest.approx(0.5)
    assert kl_k3(lp, ref).item() == pytest.approx(math.exp(-1), abs=1e-6)
    # all are zero when the policies agree
    for fn in (kl_k1, kl_k2, kl_k3):
        assert fn(lp, lp).item() == 0.0
