import pytest
import torch

from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.packed import packed_linears, packing_available, packing_supported

needs_packing = pytest.mark.skipif(not packing_available(torch.device("cpu")), reason="torch without oneDNN")


def _linears(model):  # type: ignore[no-untyped-def]
    return [m for m in model.modules() if isinstance(m, torch.nn.Linear)]


@needs_packing
def test_packed_products_equal_plain_ones_and_are_undone(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    if model.device.type != "cpu":
        pytest.skip("packing is for CPUs")
    ids = torch.tensor([[1, 5, 7, 9, 11], [3, 4, 8, 8, 2]])
    with torch.no_grad():
        plain = model(ids).logits
        with packed_linears(model, rows_hint=2) as n:
            assert n == len(_linears(model)) > 0
            assert all("forward" in m.__dict__ for m in _linears(model))
            packed = model(ids).logits
    assert all("forward" not in m.__dict__ for m in _linears(model))
    assert torch.allclose(plain, packed, atol=1e-5, rtol=1e-5)


@needs_packing
def test_gradients_bypass_the_packed_weights(tiny) -> None:  # type: ignore[no-untyped-def]
    """With gradients recorded the plain product runs, so training inside the block is
    unaffected (and a weight changed in the block is used as changed)."""
    model, _ = tiny
    if model.device.type != "cpu":
        pytest.skip("packing is for CPUs")
    ids = torch.tensor([[1, 5, 7, 9]])
    model.zero_grad()
    model(ids).logits.sum().backward()
    ref = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with packed_linears(model):
        model(ids).logits.sum().backward()
    for r, p in zip(ref, model.parameters(), strict=True):
        assert torch.allclose(r, p.grad, atol=1e-6)


@needs_packing
def test_forwards_are_restored_when_the_block_raises(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    with pytest.raises(RuntimeError, match="boom"), packed_linears(model):
        raise RuntimeError("boom")
    assert all("forward" not in m.__dict__ for m in _linears(model))


@needs_packing
def test_bfloat16_autocast_packs_in_bfloat16(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    if model.device.type != "cpu":
        pytest.skip("packing is for CPUs")
    ids = torch.tensor([[1, 5, 7, 9, 11]])
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        plain = model(ids).logits.float()
        with packed_linears(model) as n:
            packed = model(ids).logits.float()
    assert packed.dtype == torch.float32
    assert (plain - packed).abs().max() < 0.05 * plain.abs().max()
    # packed where the CPU can pack bfloat16 (AVX-512 or AVX-NE-CONVERT); on an AVX2-only
    # CPU nothing is packed and the plain autocast forward runs instead of failing
    assert n == (len(_linears(model)) if packing_supported(torch.bfloat16) else 0)
    assert packing_supported(torch.float32)


def test_generation_with_and_without_packing_agrees(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    prompts = [tok("def add(a, b):")["input_ids"], tok("Hello")["input_ids"]] * 2
    params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=3)
    a = HFEngine(model, tok, packed_weights=True).generate(prompts, params)
    b = HFEngine(model, tok, packed_weights=False).generate(prompts, params)
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    for x, y in zip(a, b, strict=True):
        assert torch.allclose(torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=1e-5)
