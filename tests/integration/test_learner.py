import copy

import pytest
import torch

from rlvr.config import load_config
from rlvr.learner.learner import Learner, group_advantages
from rlvr.learner.logprobs import sequence_logprobs
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.types import RewardBreakdown
from tests.integration.helpers import tiny_batch


def _full_logits_reference(model, prompt, completion, temperature=1.0):  # type: ignore[no-untyped-def]
    ids = torch.tensor([prompt + completion], device=model.device)
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


@pytest.mark.parametrize("plain", [True, False])
def test_prompts_shared_across_micro_batches(tiny, plain) -> None:  # type: ignore[no-untyped-def]
    """One prompt pass read by micro-batches of rows (as the learner does: rows sorted by
    length, each micro-batch's backward, then the prompt pass's once): log-probs and
    gradients equal running every row in full on its own. A cache that is not plain
    key/value tensors is read once, with the gradient going through it directly."""
    from rlvr.learner.logprobs import SharedPrompts, token_stats

    model, _ = tiny
    prompts = [[1, 5, 7, 9], [3, 4], [1, 5, 7, 9], [8, 8, 8, 8, 8, 2], [3, 4]]
    comps = [[10, 11, 12, 13, 14], [13], [15, 16], [], [17, 18, 19, 20]]
    weights = (torch.arange(1.0, 6.0)[:, None] * torch.arange(1.0, 6.0)[None, :]).to(model.device)  # [5, 5]
    model.zero_grad()
    full, _, m = sequence_logprobs(model, prompts, comps, pad_id=2, temperature=0.9, share_prompts=False)
    (full * m * weights).sum().backward()
    g_full = torch.cat([p.grad.flatten() for p in model.parameters()])
    model.zero_grad()
    ctx = SharedPrompts(model, prompts, pad_id=2, collect=plain)
    if not plain:  # what a sliding-window cache gets: the graph kept, the cache read in place
        ctx.plain = False
    chunks = [[0, 4], [2, 1], [3]] if plain else [[0, 1, 2, 3, 4]]
    got = torch.zeros(5, 5, device=model.device)
    for rows in chunks:
        st = token_stats(
            model, [prompts[r] for r in rows], [comps[r] for r in rows], pad_id=2, temperature=0.9, shared=(ctx, rows)
        )
        L = st.logprobs.shape[1]
        if st.mask.sum() > 0:  # a row without completion tokens has no graph
            (st.logprobs * st.mask * weights[rows, :L]).sum().backward()
        got[rows, :L] = st.logprobs.detach()
    ctx.backward()
    g_shared = torch.cat([p.grad.flatten() for p in model.parameters()])
    assert torch.allclose(got, full.detach(), atol=1e-6)
    # Summing the gradient over micro-batches rounds differently (the row gradients cancel
    # a lot); in float64 every split agrees to 3e-8.
    assert float((g_full - g_shared).norm() / g_full.norm()) < 2e-5
    if not plain:
        with pytest.raises(RuntimeError, match="one set of rows"):
            ctx.rows([0])


def test_prompt_windows_keep_groups_whole_within_the_budget() -> None:
    from rlvr.learner.learner import _prompt_windows
    from rlvr.types import Trajectory

    def traj(group: str, plen: int) -> Trajectory:
        return Trajectory(task_id=group, domain="python", group_id=group, prompt_ids=[int(group)] * plen)

    trajs = [traj("1", 5), traj("2", 4), traj("1", 5), traj("2", 4), traj("3", 9), traj("4", 20), traj("5", 1)]
    assert _prompt_windows(trajs, 10) == [[0, 2, 1, 3], [4], [5], [6]]
    assert _prompt_windows(trajs, 100) == [[0, 2, 1, 3, 4, 5, 6]]


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
        adv = torch.tensor(group_advantages(trajs, "grpo"), device=lp.device)
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


ALGO_CONFIGS = [
    ["algo.advantage=grpo", "algo.policy_loss=ppo_clip"],
    ["algo.advantage=rloo", "algo.aggregation=seq-mean-token-mean"],
    ["algo.advantage=reinforce_pp", "algo.aggregation=seq-mean-token-sum", "algo.kl_coef=0.1", "algo.kl_in=reward"],
    ["algo.advantage=drgrpo", "algo.policy_loss=gspo", "algo.clip_low=3e-4", "algo.clip_high=4e-4"],
    ["algo.advantage=gae", "algo.group_size=1", "algo.kl_coef=0.05", "algo.kl_in=reward"],
    ["algo.advantage=grpo", "algo.entropy_coef=0.01", "algo.overlong_filter=true"],
    ["algo.advantage=grpo", "algo.importance=token", "algo.decoupled=true"],
    ["algo.advantage=grpo", "algo.importance=sequence", "algo.kl_coef=0.1"],
]


@pytest.mark.parametrize("overrides", ALGO_CONFIGS, ids=lambda o: ",".join(x.split("=")[1] for x in o))
def test_batch_of_8_equals_8_micro_batches_of_1(tiny, overrides) -> None:  # type: ignore[no-untyped-def]
    """The issue's invariant, for every algorithm: one update from a batch of 8 in one
    micro-batch equals the update with 8 micro-batches of 1 (gradient accumulation)."""
    import copy

    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=4)
    for i, t in enumerate(trajs):  # exercised by the overlong filter
        t.finish_reason = "length" if i == 1 else "eos"
    results = []
    for mb in (8, 1):
        m = copy.deepcopy(model)
        cfg = load_config(None, [f"train.micro_batch_size={mb}", "train.lr=1e-3", *overrides])
        learner = Learner(m, cfg, pad_id=tok.pad_token_id)
        prepared, _ = learner.prepare(trajs)
        learner.accumulate_gradients(prepared)
        grad = torch.cat([p.grad.flatten() for p in learner.parameters() if p.grad is not None])
        learner.optimizer.zero_grad()
        stats = learner.step(trajs)
        params = torch.cat([p.detach().flatten() for p in learner.parameters()])
        results.append((grad, params, stats))
    (g8, p8, s8), (g1, p1, s1) = results
    assert g8.abs().sum() > 0
    assert torch.allclose(g8, g1, atol=1e-6, rtol=1e-4)
    # Adam's first step is lr * g / (|g| + eps): where |g| is near eps (a handful of the
    # 3.2M parameters) float rounding between the two summation orders is amplified, so
    # the updates are compared as vectors: equal to 1e-3 relative.
    start = torch.cat(
        [
            p.detach().flatten()
            for p in Learner(copy.deepcopy(model), load_config(None, overrides), pad_id=tok.pad_token_id).parameters()
        ]
    )
    d8, d1 = p8 - start, p1 - start
    assert float((d8 - d1).norm() / d8.norm()) < 1e-3
    assert s8["loss"] == pytest.approx(s1["loss"], abs=1e-5)


@pytest.mark.parametrize("overrides", ALGO_CONFIGS, ids=lambda o: ",".join(x.split("=")[1] for x in o))
def test_skipping_inert_rows_keeps_the_update(tiny, overrides) -> None:  # type: ignore[no-untyped-def]
    """Rows whose loss is exactly zero (a group with equal rewards) are left out of the
    passes; gradient, update and loss are those of running the whole batch."""
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=3, group=4)
    for t in trajs[4:8]:  # the second group: all rewards equal, so zero advantages
        t.reward = RewardBreakdown(total=0.5, components={"completion": 0.5})
    for i, t in enumerate(trajs):
        t.finish_reason = "length" if i == 1 else "eos"
    results = []
    for skip in (False, True):
        m = copy.deepcopy(model)
        cfg = load_config(None, [f"train.skip_inert_rows={str(skip).lower()}", "train.micro_batch_size=3", *overrides])
        learner = Learner(m, cfg, pad_id=tok.pad_token_id)
        grad_stats = learner.accumulate_gradients(learner.prepare(trajs)[0])
        grad = torch.cat([p.grad.flatten() for p in learner.parameters() if p.grad is not None])
        learner.optimizer.zero_grad()
        stats = learner.step(trajs)
        results.append((grad, torch.cat([p.detach().flatten() for p in learner.parameters()]), stats, grad_stats))
    (g_all, p_all, s_all, gs_all), (g_skip, p_skip, s_skip, gs_skip) = results
    assert gs_all["rows_skipped_frac"] == 0.0
    inert = not any(x in overrides for x in ("algo.advantage=gae", "algo.entropy_coef=0.01"))
    inert = inert and not ("algo.kl_coef=0.1" in overrides and "algo.kl_in=reward" not in overrides)
    # the second group's 4 rows, plus row 1 when the overlong filter masks it
    expected = (4 + ("algo.overlong_filter=true" in overrides)) / 12 if inert else 0.0
    assert gs_skip["rows_skipped_frac"] == pytest.approx(expected)
    assert g_all.shape == g_skip.shape and g_all.abs().sum() > 0
    assert torch.allclose(g_all, g_skip, atol=1e-6, rtol=1e-4)
    assert torch.allclose(p_all, p_skip, atol=1e-6)
    assert s_skip["loss"] == pytest.approx(s_all["loss"], abs=1e-6)


def test_a_batch_of_inert_rows_still_steps_the_optimizer(tiny) -> None:  # type: ignore[no-untyped-def]
    """No row carries gradient: nothing is run, and AdamW steps with a zero gradient
    (its momentum and weight decay move the weights) exactly as when every row is run."""
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=4)
    params = []
    for skip in (False, True):
        m = copy.deepcopy(model)
        cfg = load_config(None, [f"train.skip_inert_rows={str(skip).lower()}", "train.weight_decay=0.1"])
        learner = Learner(m, cfg, pad_id=tok.pad_token_id)
        learner.step(trajs)  # a real first update, so Adam has momentum
        for t in trajs:
            t.reward = RewardBreakdown(total=1.0, components={"completion": 1.0})
        stats = learner.step(trajs)
        for i, t in enumerate(trajs):
            t.reward = RewardBreakdown(total=float(i % 4) / 4, components={"completion": 0.0})
        assert stats["rows_skipped_frac"] == (1.0 if skip else 0.0)
        assert stats["loss"] == 0.0
        params.append(torch.cat([p.detach().flatten() for p in learner.parameters()]))
    assert torch.allclose(params[0], params[1], atol=1e-7)


def test_ppo_value_head_learns_the_return(tiny) -> None:  # type: ignore[no-untyped-def]
    """PPO with GAE (lambda 1: the targets are the Monte Carlo returns): repeated updates on
    a fixed batch bring the value head's predictions close to each sequence's reward."""
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=2)  # rewards 0, 0.5, 0, 0.5
    cfg = load_config(None, ["algo.advantage=gae", "algo.group_size=1", "algo.lam=1", "train.lr=1e-3"])
    learner = Learner(model, cfg, pad_id=tok.pad_token_id)

    def value_error() -> float:
        with torch.no_grad():
            st = learner._stats(model, trajs, value_head=True)
        target = torch.tensor([t.reward.total for t in trajs], device=st.mask.device)[:, None] * st.mask
        return float(((st.values - target).abs() * st.mask).sum() / st.mask.sum())

    before = value_error()
    for _ in range(20):  # (a smaller step than 3e-3: there the shared trunk's policy updates made it oscillate)
        learner.step(trajs)
    after = value_error()
    assert before > 0.2 and after < before * 0.5, (before, after)
    assert learner.state_dict()["value_head"] is not None


def test_fused_head_gradient_equals_plain_autograd(tiny) -> None:  # type: ignore[no-untyped-def]
    """The head's hand-written backward (softmax - onehot in one pass) gives autograd's
    gradient through log_softmax and gather (the checkpointed path the entropy bonus uses)."""
    from rlvr.learner.logprobs import token_stats

    model, _ = tiny
    prompts = [[1, 5, 7, 9], [1, 5, 7, 9], [3, 4]]
    comps = [[10, 11, 12], [13], [14, 15, 16, 17]]
    weights = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.5, 0.0, 0.0, 0.0], [-0.3, 0.7, 1.1, -2.0]], device=model.device)
    grads, values = [], []
    for fused in (True, False):
        model.zero_grad()
        st = token_stats(model, prompts, comps, pad_id=2, chunk=2, temperature=0.7, entropy_grad=not fused)
        (st.logprobs * st.mask * weights).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
        values.append(st.logprobs.detach())
    assert torch.equal(values[0], values[1])
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6, rtol=1e-5)


def test_bfloat16_compute_stays_close_to_float32(tiny) -> None:  # type: ignore[no-untyped-def]
    """model.compute_dtype=bfloat16 (autocast): weights and gradients stay float32, the
    log-probs and the update direction stay close to float32's, and generation runs."""
    model, tok = tiny
    trajs = tiny_batch(model, tok, n_prompts=2, group=2)
    grads, logps = {}, {}
    for cd in ("float32", "bfloat16"):
        m = copy.deepcopy(model)
        learner = Learner(m, load_config(None, [f"model.compute_dtype={cd}"]), pad_id=tok.pad_token_id)
        learner.accumulate_gradients(trajs)
        grads[cd] = torch.cat([p.grad.flatten() for p in m.parameters() if p.grad is not None])
        assert grads[cd].dtype == torch.float32 and torch.isfinite(grads[cd]).all()
        with torch.no_grad():
            logps[cd] = learner._stats(m, trajs)
    mask = logps["float32"].mask.bool()
    diff = (logps["float32"].logprobs - logps["bfloat16"].logprobs).abs()[mask]
    assert 0 < float(diff.mean()) < 0.05, float(diff.mean())
    cos = torch.nn.functional.cosine_similarity(grads["float32"], grads["bfloat16"], dim=0)
    assert float(cos) > 0.98, float(cos)
    outs = HFEngine(model, tok, compute_dtype="bfloat16").generate(
        [t.prompt_ids for t in trajs[:2]], SamplingParams(max_new_tokens=4, seed=0)
    )
    assert all(len(o.token_ids) == 4 and all(lp <= 0 for lp in o.logprobs) for o in outs)
    with pytest.raises(ValueError, match="compute_dtype"):
        load_config(None, ["model.compute_dtype=float16"])
