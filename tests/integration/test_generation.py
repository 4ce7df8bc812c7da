import torch

from rlvr.learner.logprobs import sequence_logprobs
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine


def _prompts(tok):  # type: ignore[no-untyped-def]
    return [tok("def add(a, b):")["input_ids"], tok("Hello")["input_ids"], tok("x = [1, 2, 3]\nprint(")["input_ids"]]


def test_behaviour_logprobs_match_a_forward_pass(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    prompts = _prompts(tok)
    eng = HFEngine(model, tok, batch_size=2)  # two batches, with left padding
    outs = eng.generate(prompts, SamplingParams(max_new_tokens=12, temperature=0.7, seed=1))
    assert [len(o.token_ids) for o in outs] == [12, 12, 12]
    assert all(o.finish_reason == "length" for o in outs)
    with torch.no_grad():
        lp, _, _mask = sequence_logprobs(
            model, prompts, [o.token_ids for o in outs], pad_id=tok.pad_token_id, temperature=0.7
        )
    for r, o in enumerate(outs):
        assert torch.allclose(lp[r, : len(o.token_ids)].cpu(), torch.tensor(o.logprobs), atol=1e-5)


def test_seeded_sampling_is_reproducible_and_greedy_is_argmax(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    eng = HFEngine(model, tok)
    p = _prompts(tok)
    a = eng.generate(p, SamplingParams(max_new_tokens=8, seed=5))
    b = eng.generate(p, SamplingParams(max_new_tokens=8, seed=5))
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    g = eng.generate(p[:1], SamplingParams(max_new_tokens=1, greedy=True))[0]
    with torch.no_grad():
        logits = model(torch.tensor([p[0]], device=model.device)).logits[0, -1]
    assert g.token_ids[0] == int(logits.argmax())


def test_stops_on_eos_and_on_stop_strings(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    eng = HFEngine(model, tok)
    p = _prompts(tok)[:1]
    first = eng.generate(p, SamplingParams(max_new_tokens=6, greedy=True))[0]
    # Treat the third greedy token as end-of-sequence: generation ends there.
    eng.eos_ids = {first.token_ids[2]}
    eos = eng.generate(p, SamplingParams(max_new_tokens=6, greedy=True))[0]
    assert (
        eos.finish_reason == "eos" and eos.token_ids == first.token_ids[: first.token_ids.index(first.token_ids[2]) + 1]
    )
    eng = HFEngine(model, tok)
    stop_text = tok.decode(first.token_ids[:2])
    if stop_text.strip():
        stopped = eng.generate(p, SamplingParams(max_new_tokens=6, greedy=True, stop=(stop_text,)))[0]
        assert stopped.finish_reason == "stop" and len(stopped.token_ids) <= 2


def test_top_p_samples_only_from_the_nucleus(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    p = _prompts(tok)[:1] * 8
    outs = HFEngine(model, tok).generate(p, SamplingParams(max_new_tokens=1, top_p=1e-6, seed=3))
    with torch.no_grad():
        top = int(model(torch.tensor([p[0]], device=model.device)).logits[0, -1].argmax())
    assert {o.token_ids[0] for o in outs} == {top}


def test_groups_share_their_prefill_and_match_a_forward_pass(tiny) -> None:  # type: ignore[no-untyped-def]
    """Rows with the same prompt are prefilled once (the cache copied to each row): their
    behaviour log-probs still match a forward pass, and greedy copies agree with a run
    of the prompt alone."""
    model, tok = tiny
    base = _prompts(tok)
    prompts = [p for p in base for _ in range(3)]  # 3 groups of 3, prompts of different lengths
    outs = HFEngine(model, tok).generate(prompts, SamplingParams(max_new_tokens=10, temperature=0.9, seed=2))
    with torch.no_grad():
        lp, _, _mask = sequence_logprobs(
            model, prompts, [o.token_ids for o in outs], pad_id=tok.pad_token_id, temperature=0.9
        )
    for r, o in enumerate(outs):
        assert torch.allclose(lp[r, : len(o.token_ids)].cpu(), torch.tensor(o.logprobs), atol=1e-5)
    greedy = HFEngine(model, tok).generate(prompts, SamplingParams(max_new_tokens=10, greedy=True))
    for i, p in enumerate(base):
        alone = HFEngine(model, tok).generate([p], SamplingParams(max_new_tokens=10, greedy=True))[0]
        assert all(g.token_ids == alone.token_ids for g in greedy[3 * i : 3 * i + 3])


def test_sampler_draws_from_the_softmax() -> None:
    """Inverse-CDF sampling: frequencies follow softmax(logits / T); a token of zero
    probability (after top-p, or -inf) is never drawn; the log-prob is the chosen token's."""
    gen = torch.Generator()
    gen.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0, float("-inf"), 0.5], [3.0, -2.0, 0.0, 1.0, 1.0]])
    params = SamplingParams(max_new_tokens=1, temperature=0.8)
    n = 20_000
    counts = torch.zeros(2, 5)
    for _ in range(n):
        tok, logp = HFEngine._sample(logits, params, gen)
        counts[0, tok[0]] += 1
        counts[1, tok[1]] += 1
    expected = torch.softmax(logits / 0.8, dim=-1)
    assert counts[0, 3] == 0
    assert torch.allclose(counts / n, expected, atol=0.015)
    assert torch.allclose(logp, torch.log_softmax(logits / 0.8, -1).gather(1, tok[:, None]).squeeze(1))
    nucleus = SamplingParams(max_new_tokens=1, top_p=0.5)
    drawn = {int(HFEngine._sample(logits[:1], nucleus, gen)[0]) for _ in range(200)}
    assert drawn == {2}  # token 2 alone holds more than half the mass


def test_preallocated_cache_matches_the_dynamic_cache() -> None:
    from transformers.cache_utils import DynamicLayer

    from rlvr.rollout.kvcache import PreallocatedLayer

    torch.manual_seed(0)
    ours, ref = PreallocatedLayer(capacity=6), DynamicLayer()
    steps = [torch.randn(3, 2, 4, 5), torch.randn(3, 2, 1, 5), torch.randn(3, 2, 1, 5), torch.randn(3, 2, 3, 5)]
    for i, kv in enumerate(steps):  # the last one outgrows the planned capacity
        k1, v1 = ours.update(kv, kv * 2)
        k2, v2 = ref.update(kv, kv * 2)
        assert torch.equal(k1, k2) and torch.equal(v1, v2)
        assert ours.get_seq_length() == ref.get_seq_length()
        if i == 1:
            sel = torch.tensor([2, 0])
            ours.batch_select_indices(sel)
            ref.batch_select_indices(sel)
            steps[2:] = [s[:2] for s in steps[2:]]
    ours.crop(-2)
    ref.crop(-2)
    assert torch.equal(ours.keys, ref.keys) and ours.get_seq_length() == 7
