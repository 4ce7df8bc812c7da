"""single_query_attention against PyTorch's own attention on hand-built cases."""

import math

import pytest
import torch

from rlvr.rollout.attention import single_query_attention


def _reference(q, k, v, mask, scaling):  # type: ignore[no-untyped-def]
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # transformers' repeat_kv order
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling)
    return out.transpose(1, 2)  # [B, 1, H, D]


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (9, 3), (6, 1)])
def test_equals_sdpa_with_grouped_heads_and_left_padding(heads: int, kv_heads: int) -> None:
    g = torch.Generator().manual_seed(heads)
    b, length, d = 3, 7, 8
    q = torch.randn(b, heads, 1, d, generator=g)
    cap = torch.randn(b, kv_heads, length + 5, d, generator=g)  # a preallocated buffer: a strided view
    k = cap[:, :, :length]
    v = torch.randn(b, kv_heads, length, d, generator=g)
    mask = torch.ones(b, 1, 1, length, dtype=torch.bool)
    mask[1, ..., :3] = False  # row 1 was left-padded by three positions
    got = single_query_attention(q, k, v, mask, None)
    assert got.shape == (b, 1, heads, d)
    assert torch.allclose(got, _reference(q, k, v, mask, None), atol=1e-6)
    assert torch.allclose(single_query_attention(q, k, v, None, 0.5), _reference(q, k, v, None, 0.5), atol=1e-6)


def test_padding_is_never_attended() -> None:
    """A masked position's value cannot leak: changing it changes nothing."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 2, 1, 4, generator=g), torch.randn(1, 2, 5, 4, generator=g)
    v = torch.randn(1, 2, 5, 4, generator=g)
    mask = torch.tensor([False, False, True, True, True]).view(1, 1, 1, 5)
    v2 = v.clone()
    v2[..., :2, :] = 1e6
    assert torch.equal(single_query_attention(q, k, v, mask, None), single_query_attention(q, k, v2, mask, None))


def test_hand_worked_two_positions() -> None:
    """One head, keys e1 and e2, query (ln 3) e1 at scaling 1: weights 3/4, 1/4."""
    q = torch.tensor([math.log(3.0), 0.0]).view(1, 1, 1, 2)
    k = torch.eye(2).view(1, 1, 2, 2)
    v = torch.tensor([[4.0, 0.0], [0.0, 8.0]]).view(1, 1, 2, 2)
    out = single_query_attention(q, k, v, None, 1.0)
    assert torch.allclose(out.view(2), torch.tensor([3.0, 2.0]))


def test_additive_float_mask_and_bfloat16_queries() -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, 1, 8, generator=g)
    k, v = torch.randn(2, 2, 6, 8, generator=g), torch.randn(2, 2, 6, 8, generator=g)
    add = torch.zeros(2, 1, 1, 6)
    add[0, ..., 0] = float("-inf")
    assert torch.allclose(single_query_attention(q, k, v, add, None), _reference(q, k, v, add, None), atol=1e-6)
    # a bfloat16 query against a float32 cache is computed in the cache's dtype
    out = single_query_attention(q.bfloat16(), k, v, None, None)
    assert out.dtype == torch.float32
    assert torch.allclose(out, _reference(q.bfloat16().float(), k, v, None, None), atol=1e-6)


def test_refuses_more_than_one_query_or_uneven_heads() -> None:
    k = torch.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match="one query per row"):
        single_query_attention(torch.zeros(1, 2, 2, 4), k, k, None, None)
    with pytest.raises(ValueError, match="one query per row"):
        single_query_attention(torch.zeros(1, 3, 1, 4), k, k, None, None)
