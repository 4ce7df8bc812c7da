import torch

from rlvr.config import load_config
from rlvr.train.learner import Learner, group_advantages
from rlvr.train.logprobs import sequence_logprobs
from tests.integration.helpers import tiny_batch


def _full_logits_reference(model, prompt, completion, temperature=1.0):  # type: ignore[no-untyped-def]
    ids = torch.tensor([prompt + completion])
    logp = (model(ids).logits[0].float() / temperature).log_softmax(-1)  # [T, V]
    return torch.stack([logp[len(prompt) - 1 + t, tok] for t, tok in enumerate(completion)])


def test_chunked_shared_logprobs_match_full_logits(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _tok = tiny
    prompts = [[1, 5, 7, 9], [1, 5, 7, 9], [3, 4], [8, 8, 8, 8, 8, 2]]
    comps = [[10, 11, 12], [13], [], [16, 17, 18, 19]]
    with torch.no_grad():
        for share in (True, False):
            for chunk in (1, 3, 1024):
                lp, _, mask = sequence_logprobs(
                    model, prompts, comps, pad_id=2, chunk=chunk, share_prompts=share, temperature=0.8
                )
                assert mask.sum().item() == 8
                for r, (p, c) in enumerate(zip(prompts, comps, strict=True)):
                    if c:
                        ref = _full_logits_reference(model, p, c, 0.8)
                        assert torch.allclose(lp[r, : len(c)], ref, atol=1e-5)


def test_shared_prompt_gradients_equal_plain(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    prompts = [[1, 5, 7, 9], [1, 5, 7, 9], [3, 4]]
    comps = [[10, 11, 12], [13], [14, 15]]
    grads = []
    for share in (False, True):
        model.zero_grad()
        lp, _, m = sequence_logprobs(model, prompts, comps, pad_id=2, share_prompts=share)
        (lp * m).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_group_advantages_follow_groups(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=4)
    adv = group_advantages(trajs, "drgrpo")
    # rewards per group are 0, .25, .5, .75 -> mean .375
    assert [round(a, 4) for a in adv[:4]] == [-0.375, -0.125, 0.125, 0.375]


def test_micro_batching_does_not_change_the_gradient(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=4)
    for t, a in zip(trajs, group_advantages(trajs, "grpo"), strict=True):
        t.advantage = a
    grads = []
    for mb in (8, 1):
        for agg in ("token-mean", "seq-mean-token-mean"):
            cfg = load_config(None, [f"train.micro_batch_size={mb}", f"algo.aggregation={agg}", "algo.kl_coef=0.1"])
            learner = Learner(model, cfg, pad_id=tok.pad_token_id)
            learner.accumulate_gradients(trajs)
            grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.allclose(grads[0], grads[2], atol=1e-6)  # token-mean, 8 vs 1
    assert torch.allclose(grads[1], grads[3], atol=1e-6)  # seq-mean-token-mean, 8 vs 1


def test_repeated_updates_raise_the_batch_objective(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=4)
    cfg = load_config(None, ["train.lr=3e-3", "algo.updates_per_batch=1", "algo.clip_high=10", "algo.clip_low=0.99"])
    learner = Learner(model, cfg, pad_id=tok.pad_token_id)

    def objective() -> float:
        # sum_i A_i * mean_t log pi(y_it): what the policy gradient ascends
        with torch.no_grad():
            lp, _, m = sequence_logprobs(
                model, [t.prompt_ids for t in trajs], [t.completion_ids for t in trajs], pad_id=2
            )
        adv = torch.tensor(group_advantages(trajs, "grpo"))
        return float(((lp * m).sum(1) / m.sum(1) * adv).sum())

    before = objective()
    for _ in range(5):
        learner.step(trajs)
    after = objective()
    assert after > before + 0.1, (before, after)
    assert learner.version == 5


def test_kl_to_reference_is_zero_at_start_and_grows(tiny) -> None:  # type: ignore[no-untyped-def]
    model, tok = tiny
    trajs = tiny_batch(model, tok)
    cfg = load_config(None, ["algo.kl_coef=0.5", "train.lr=3e-3"])
    learner = Learner(model, cfg, pad_id=tok.pad_token_id)
    first = learner.step(trajs)
    assert abs(first["kl"]) < 1e-6
    second = learner.step(trajs)
    assert second["kl"] > 1e-6
