"""Sparse gradients for a tied input embedding: the same gradient as the dense path, the
weight's gradient dense afterwards, untied embeddings left alone."""

import copy

import torch

from rlvr.learner.embedding_grad import sparse_tied_embedding_grads


def _grads(model, ids, sparse: bool):  # type: ignore[no-untyped-def]
    model.zero_grad(set_to_none=True)
    ctx = sparse_tied_embedding_grads(model) if sparse else torch.enable_grad()
    with ctx as applied:
        for row in ids:  # two micro-batches' backwards accumulate, as the learner's do
            model(row[None]).logits.float().logsumexp(-1).sum().backward()
    return applied, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_tied_embedding_gradient_equals_the_dense_one(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    ids = torch.tensor([[1, 5, 7, 9, 5], [3, 4, 8, 8, 2]])
    _, dense = _grads(model, ids, sparse=False)
    applied, sparse = _grads(model, ids, sparse=True)
    assert applied is True
    assert model.get_input_embeddings().sparse is False
    assert dense.keys() == sparse.keys()
    for name, g in dense.items():
        assert not sparse[name].is_sparse, name
        assert torch.allclose(g, sparse[name], atol=1e-6), name


def test_untied_or_frozen_embeddings_keep_the_dense_path(tiny) -> None:  # type: ignore[no-untyped-def]
    model, _ = tiny
    untied = copy.deepcopy(model)
    head = untied.get_output_embeddings()
    head.weight = torch.nn.Parameter(head.weight.detach().clone())
    with sparse_tied_embedding_grads(untied) as applied:
        assert applied is False and untied.get_input_embeddings().sparse is False
    frozen = copy.deepcopy(model)
    frozen.get_input_embeddings().weight.requires_grad_(False)
    with sparse_tied_embedding_grads(frozen) as applied:
        assert applied is False


def test_only_sparse_parts_are_made_dense_on_exit(tiny) -> None:  # type: ignore[no-untyped-def]
    """A block whose backwards reach the embedding only (not the head) still leaves a
    dense gradient for the optimizer."""
    model, _ = tiny
    model.zero_grad(set_to_none=True)
    emb = model.get_input_embeddings()
    with sparse_tied_embedding_grads(model):
        emb(torch.tensor([[1, 3, 3, 2]])).sum().backward()  # 2 is the padding index: no gradient
        assert emb.weight.grad.is_sparse
    assert not emb.weight.grad.is_sparse
    want = torch.zeros_like(emb.weight)
    want[1] += 1
    want[3] += 2
    assert torch.equal(emb.weight.grad, want)
    model.zero_grad(set_to_none=True)


def test_the_learner_takes_it_when_configured_and_the_gradient_is_the_same(tiny) -> None:  # type: ignore[no-untyped-def]
    from rlvr.config import load_config
    from rlvr.learner.learner import Learner
    from rlvr.types import RewardBreakdown, Trajectory

    model, tok = tiny
    trajs = [
        Trajectory(task_id="t", domain="python", group_id="g", prompt_ids=[1, 5, 7], completion_ids=c,
                   logprobs=[-1.0] * len(c), reward=RewardBreakdown(total=r))
        for c, r in [([9, 4, 8], 1.0), ([3, 3], 0.0), ([6, 1, 1, 4], 0.5)]
    ]  # fmt: skip
    grads = {}
    for flag in (False, True):
        cfg = load_config(None, [f"train.sparse_embedding_grads={str(flag).lower()}", "train.micro_batch_size=1"])
        learner = Learner(copy.deepcopy(model), cfg, pad_id=tok.pad_token_id)
        seen = []
        emb = learner.model.get_input_embeddings()
        emb.register_forward_pre_hook(lambda m, a, seen=seen: seen.append(m.sparse))
        learner.accumulate_gradients([copy.copy(t) for t in trajs])
        assert any(seen) == flag  # the embedding ran sparse exactly when configured
        grads[flag] = {n: p.grad.clone() for n, p in learner.model.named_parameters() if p.grad is not None}
    assert grads[False].keys() == grads[True].keys()
    for name, g in grads[False].items():
        assert not grads[True][name].is_sparse
        assert torch.allclose(g, grads[True][name], atol=1e-6), name
