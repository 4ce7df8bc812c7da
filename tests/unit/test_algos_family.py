"""The rest of the algorithm family against hand-worked numbers (arithmetic in comments)."""

import math

import pytest
import torch

from rlvr.algos import ADVANTAGES, POLICY_LOSSES
from rlvr.algos.advantages import gae, reinforce_pp_advantages, rloo_advantages, whiten
from rlvr.algos.filtering import informative_groups, overlong_loss_mask
from rlvr.algos.importance import importance_weights
from rlvr.algos.policy_loss import gspo_loss, ppo_clip_loss, value_loss


def test_rloo_hand_worked() -> None:
    # group [1, 0, 0, 1]: baseline of sample 0 = (0+0+1)/3 = 1/3 -> 2/3; sample 1 = (1+0+1)/3 -> -2/3
    a = rloo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]))
    assert torch.allclose(a, torch.tensor([[2 / 3, -2 / 3, -2 / 3, 2 / 3]]))
    # equals G/(G-1) * (r - mean)
    r = torch.tensor([[0.3, 0.9, 0.1], [1.0, 1.0, 0.0]])
    assert torch.allclose(rloo_advantages(r), 1.5 * (r - r.mean(1, keepdim=True)))
    assert "rloo" in ADVANTAGES.names() and "reinforce_pp" in ADVANTAGES.names()


def test_reinforce_pp_uses_batch_std() -> None:
    # groups [1, 0] and [0.5, 0.5]: centred [0.5, -0.5, 0, 0]; batch std (unbiased) of
    # those = sqrt((0.25+0.25)/3) = 0.40825 -> [1.2247, -1.2247, 0, 0]
    a = reinforce_pp_advantages(torch.tensor([[1.0, 0.0], [0.5, 0.5]]))
    s = math.sqrt(0.5 / 3)
    assert torch.allclose(a, torch.tensor([[0.5 / s, -0.5 / s], [0.0, 0.0]]), atol=1e-5)


def test_gae_hand_worked() -> None:
    # one sequence of 3 tokens, reward 1 at the end, values [0.5, 0.6, 0.7], gamma 1, lam 0.5
    # deltas: d2 = 1 - 0.7 = 0.3; d1 = 0 + 0.7 - 0.6 = 0.1; d0 = 0 + 0.6 - 0.5 = 0.1
    # A2 = 0.3; A1 = 0.1 + 0.5*0.3 = 0.25; A0 = 0.1 + 0.5*0.25 = 0.225; returns = A + V
    r = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    v = torch.tensor([[0.5, 0.6, 0.7, 9.9]])  # the padded position's value is ignored
    m = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    adv, ret = gae(r, v, m, gamma=1.0, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.225, 0.25, 0.3, 0.0]]))
    assert torch.allclose(ret, torch.tensor([[0.725, 0.85, 1.0, 0.0]]))
    # lam = 1, gamma = 1: A_t = R - V_t (Monte Carlo)
    adv1, _ = gae(r, v, m, gamma=1.0, lam=1.0)
    assert torch.allclose(adv1, torch.tensor([[0.5, 0.4, 0.3, 0.0]]))
    with pytest.raises(ValueError, match="share one"):
        gae(r, v[:, :3], m)


def test_whiten_ignores_padding() -> None:
    x = torch.tensor([[1.0, 3.0, 100.0]])
    m = torch.tensor([[1.0, 1.0, 0.0]])
    # mean 2, unbiased std sqrt(2) -> [-0.7071, 0.7071, 0]
    assert torch.allclose(whiten(x, m), torch.tensor([[-1 / math.sqrt(2), 1 / math.sqrt(2), 0.0]]), atol=1e-6)


def test_gspo_sequence_ratio_hand_worked() -> None:
    # token log-ratios [0.1, 0.3] -> mean 0.2 -> s = e^0.2 = 1.2214; A = 1, clip_high 0.1
    # -> min(1.2214, 1.1) = 1.1 -> loss -1.1 (1 sequence)
    lp = torch.tensor([[0.1, 0.3]], requires_grad=True)
    old = torch.zeros(1, 2)
    m = torch.ones(1, 2)
    loss, met = gspo_loss(lp, old, torch.tensor([1.0]), m, clip_low=0.1, clip_high=0.1)
    assert loss.item() == pytest.approx(-1.1) and met["clip_frac"] == 1.0
    # on-policy gradient: d/dlp_t of -(exp(mean(lp)) * A) = -A / len = -0.5 per token
    lp2 = torch.zeros(1, 2, requires_grad=True)
    gspo_loss(lp2, old, torch.tensor([1.0]), m)[0].backward()
    assert torch.allclose(lp2.grad, torch.tensor([[-0.5, -0.5]]))
    assert "gspo" in POLICY_LOSSES.names()


def test_gspo_padding_and_global_seq_normaliser() -> None:
    lp = torch.zeros(2, 3)
    m = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    # on-policy: ratio 1, loss = -(A0 + A1) / num_seqs = -(1 + 3) / 4 with num_seqs 4
    loss, _ = gspo_loss(lp, lp, torch.tensor([1.0, 3.0]), m, num_seqs=4.0)
    assert loss.item() == pytest.approx(-1.0)


def test_value_loss_clipped_hand_worked() -> None:
    # V 1.0, V_old 0.5, R 0.0, clip 0.2: unclipped (1-0)^2 = 1, clipped V = 0.7 -> 0.49
    # max = 1 -> 0.5 * 1 = 0.5
    v = torch.tensor([[1.0]])
    loss, _ = value_loss(v, torch.tensor([[0.5]]), torch.tensor([[0.0]]), torch.ones(1, 1), clip=0.2)
    assert loss.item() == pytest.approx(0.5)
    # V 0.0, V_old 0.5, R 1.0: unclipped 1, clipped V = 0.3 -> 0.49 -> max 1 -> 0.5
    loss, _ = value_loss(torch.tensor([[0.0]]), torch.tensor([[0.5]]), torch.tensor([[1.0]]), torch.ones(1, 1))
    assert loss.item() == pytest.approx(0.5)


def test_importance_weights_token_and_sequence() -> None:
    prox = torch.tensor([[math.log(0.5), math.log(0.9)]])
    behav = torch.tensor([[math.log(0.25), math.log(0.9)]])
    m = torch.ones(1, 2)
    # token: 0.5/0.25 = 2 -> capped at 1.5; 0.9/0.9 = 1
    assert torch.allclose(importance_weights(prox, behav, m, "token", cap=1.5), torch.tensor([[1.5, 1.0]]))
    # sequence: product 2 * 1 = 2 (cap 3) repeated
    assert torch.allclose(importance_weights(prox, behav, m, "sequence", cap=3.0), torch.tensor([[2.0, 2.0]]))
    assert torch.equal(importance_weights(prox, behav, m, "none"), m)
    with pytest.raises(ValueError, match="unknown importance level"):
        importance_weights(prox, behav, m, "tokens")


def test_ppo_is_weights_scale_token_losses() -> None:
    lp = torch.zeros(1, 2)
    adv = torch.tensor([1.0])
    m = torch.ones(1, 2)
    base, _ = ppo_clip_loss(lp, lp, adv, m)
    weighted, _ = ppo_clip_loss(lp, lp, adv, m, is_weights=torch.tensor([[2.0, 0.0]]))
    # base: token-mean of [-1, -1] = -1; weighted: [-2, 0] -> -1 as well, but per token
    assert base.item() == pytest.approx(-1.0) and weighted.item() == pytest.approx(-1.0)
    weighted2, _ = ppo_clip_loss(lp, lp, adv, m, is_weights=torch.tensor([[0.5, 0.5]]))
    assert weighted2.item() == pytest.approx(-0.5)


def test_dynamic_sampling_and_overlong_filters() -> None:
    r = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert informative_groups(r).tolist() == [False, True, False]
    assert overlong_loss_mask(["eos", "length", "stop"]) == [1, 0, 1]
