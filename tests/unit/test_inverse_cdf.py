"""The two-level inverse CDF against the one-level float64 cumulative sum it replaces."""

import torch

from rlvr.rollout.hf import inverse_cdf


def _reference(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    cdf = probs.double().cumsum(dim=-1)
    return torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(1).clamp(max=probs.shape[1] - 1)


def test_agrees_with_the_full_cumulative_sum() -> None:
    g = torch.Generator().manual_seed(0)
    for v, block in [(1000, 256), (1024, 256), (7, 4), (49152, 256)]:
        probs = torch.softmax(torch.randn(32, v, generator=g) * 3, dim=-1)
        for _ in range(20):
            u = torch.rand((32, 1), generator=g, dtype=torch.float64)
            assert torch.equal(inverse_cdf(probs, u, block), _reference(probs, u))


def test_hand_worked_rows_and_zero_probability_tokens() -> None:
    # row 0: masses 0, 0, 1, 0, 3 (total 4): u 0.2 -> target 0.8 lands in token 2,
    # u 0.3 -> 1.2 in token 4; the empty block [0, 1] and token 3 are never drawn
    probs = torch.tensor([[0.0, 0.0, 1.0, 0.0, 3.0]])
    for u, want in [(0.0, 2), (0.2, 2), (0.2499, 2), (0.25, 4), (0.3, 4), (0.999999, 4)]:
        assert int(inverse_cdf(probs, torch.tensor([[u]], dtype=torch.float64), block=2)[0]) == want
    # a residual at the very end of a block never picks its zero-probability tail
    probs = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    assert int(inverse_cdf(probs, torch.tensor([[1.0 - 1e-17]], dtype=torch.float64), block=4)[0]) == 0


def test_frequencies_follow_the_probabilities() -> None:
    g = torch.Generator().manual_seed(1)
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3, 0.0, 0.0, 0.0]]).repeat(4000, 1)
    tok = inverse_cdf(probs, torch.rand((4000, 1), generator=g, dtype=torch.float64), block=3)
    freq = torch.bincount(tok, minlength=7).double() / 4000
    assert freq[[1, 4, 5, 6]].sum() == 0
    assert torch.allclose(freq, probs[0].double(), atol=0.03)
