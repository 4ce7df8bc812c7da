import torch

from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.train.logprobs import sequence_logprobs


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
