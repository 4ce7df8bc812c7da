"""decode_attention on a real (tiny, random) transformers model: what it switches, what
it leaves alone, and that generation through it agrees with transformers' own sdpa."""

import pytest
import torch

from rlvr.rollout.attention import NAME, decode_attention
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.kvcache import preallocated_cache


def test_generation_agrees_with_sdpa_and_the_switch_is_undone(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    assert model.config._attn_implementation == "sdpa"
    # prompts of different lengths: the batch is left-padded, so the mask matters
    prompts = [tok("def add(a, b):")["input_ids"], tok("Hello")["input_ids"], tok("x = [1, 2, 3]\nprint(")["input_ids"]]
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=5)
    fast = HFEngine(model, tok, fast_attention=True).generate(prompts, params)
    assert model.config._attn_implementation == "sdpa"
    plain = HFEngine(model, tok, fast_attention=False).generate(prompts, params)
    assert [c.token_ids for c in fast] == [c.token_ids for c in plain]
    for a, b in zip(fast, plain, strict=True):
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5)


def test_decoding_steps_take_the_single_query_path(tiny, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Prefill (many queries) falls back to sdpa; each decoding step goes through the
    single-query product, with logits equal to the plain model's."""
    import rlvr.rollout.attention as attention

    model, _ = tiny
    calls: list[int] = []
    real = attention.single_query_attention
    monkeypatch.setattr(attention, "single_query_attention", lambda q, *a: calls.append(q.shape[0]) or real(q, *a))
    ids = torch.tensor([[0, 0, 5, 7, 9], [3, 4, 8, 8, 2]])
    attn = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])

    def run() -> torch.Tensor:
        cache = preallocated_cache(model.config.num_hidden_layers, 8)
        model(input_ids=ids, attention_mask=attn, past_key_values=cache, use_cache=True)
        nxt = torch.tensor([[11], [12]])
        attn2 = torch.cat([attn, torch.ones(2, 1, dtype=attn.dtype)], dim=1)
        pos = torch.tensor([[3], [5]])
        return model(
            input_ids=nxt, attention_mask=attn2, position_ids=pos, past_key_values=cache, use_cache=True
        ).logits

    with torch.no_grad():
        plain = run()
        assert calls == []
        with decode_attention(model) as switched:
            assert switched and model.config._attn_implementation == NAME
            fast = run()
    assert calls == [2] * model.config.num_hidden_layers  # the decoding step only, every layer
    assert torch.allclose(plain, fast, atol=1e-5)


def test_gradients_take_the_plain_path(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    ids = torch.tensor([[1, 5, 7, 9]])
    model.zero_grad()
    model(ids).logits.sum().backward()
    ref = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with decode_attention(model):
        model(ids).logits.sum().backward()
    for r, p in zip(ref, model.parameters(), strict=True):
        assert torch.allclose(r, p.grad, atol=1e-6)


def test_restored_on_error_and_other_implementations_left_alone(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    with pytest.raises(RuntimeError, match="boom"), decode_attention(model):
        raise RuntimeError("boom")
    assert model.config._attn_implementation == "sdpa"
    model.config._attn_implementation = "eager"
    try:
        with decode_attention(model) as switched:
            assert not switched and model.config._attn_implementation == "eager"
    finally:
        model.config._attn_implementation = "sdpa"
