"""Per-token log-probs of given tokens under a causal LM, without full-vocabulary logits
for the whole batch.

The decoder runs each distinct prompt once (`SharedPrompts`; the learner runs a whole
window of groups' prompts once and lets micro-batches of rows sorted by length read it,
so they carry little padding), then the completions as right-padded rows over the
prompts' key/value cache. Each row's products are those of running it alone, so the
log-probs equal a plain full-sequence pass's (bit for bit on CPU in the tests' and the
bench's batches). The hidden states of the positions that predict
completion tokens are gathered ([N, H]) and pushed through the output head in chunks of
`chunk` positions. The [chunk, V] logits exist for one chunk at a time in the forward
pass and are recomputed, one chunk at a time, in backward (a fused autograd function
for the log-prob; a checkpointed chunk when the entropy bonus needs its gradient).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import torch
from torch.utils.checkpoint import checkpoint
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from rlvr.rollout.padding import distinct_prompts


class TokenStats(NamedTuple):
    """Per completion token, laid out [B, L] (right-padded): log-prob of the token, entropy
    of the distribution it was drawn from, the mask (1 where a token exists), and the
    value head's estimate of the state before the token (None without a value head)."""

    logprobs: torch.Tensor
    entropy: torch.Tensor
    mask: torch.Tensor
    values: torch.Tensor | None = None


def _chunk_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperature: float, entropy_grad: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = torch.nn.functional.linear(hidden, weight).float() / temperature  # [n, V], as the model's own head
    # log_softmax subtracts the max before anything else; `logits - logsumexp(logits)`
    # would lose ~1e-5 to cancellation between two large numbers
    logp_all = torch.log_softmax(logits, dim=-1)  # [n, V]
    logp = logp_all.gather(1, targets[:, None]).squeeze(1)  # [n]
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        entropy = -(logp_all.exp() * logp_all).sum(-1)  # [n]
    return logp, entropy


class _FusedHeadLogprob(torch.autograd.Function):
    """Log-prob of each target under softmax(hidden @ W^T / T), and the entropy (no
    gradient), for one chunk. Nothing of size [n, V] is kept for backward: the logits are
    recomputed there, and the gradient with respect to the logits is written in one pass
    as g * (onehot(target) - softmax) / T, instead of autograd's zero-filled gather
    backward followed by log_softmax's backward."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        targets: torch.Tensor,
        temperature: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logp, entropy = _chunk_logprobs(hidden, weight, targets, temperature)
        ctx.save_for_backward(hidden, weight, targets)
        ctx.temperature = temperature  # type: ignore[attr-defined]
        kind = hidden.device.type  # backward runs outside any autocast region: it re-enters the forward's
        ctx.autocast = (kind, torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind))  # type: ignore[attr-defined]
        return logp, entropy

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad_logp: torch.Tensor, _grad_entropy: torch.Tensor | None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, None, None]:
        hidden, weight, targets = ctx.saved_tensors  # type: ignore[attr-defined]
        t = float(ctx.temperature)  # type: ignore[attr-defined]
        kind, enabled, dtype = ctx.autocast  # type: ignore[attr-defined]
        with torch.autocast(kind, dtype=dtype, enabled=enabled):
            logits = torch.nn.functional.linear(hidden, weight).float() / t  # [n, V]
            g = torch.softmax(logits, dim=-1)  # reuse the buffer: softmax, then -g * softmax
            del logits
            g.mul_(-grad_logp[:, None])
            g.scatter_add_(1, targets[:, None], grad_logp[:, None])
            g.div_(t)
            g = g.to(hidden.dtype)
            grad_hidden = g @ weight if ctx.needs_input_grad[0] else None  # type: ignore[attr-defined]
            grad_weight = g.t() @ hidden if ctx.needs_input_grad[1] else None  # type: ignore[attr-defined]
        # under autocast the products come out in bfloat16: gradients match their inputs
        return (
            grad_hidden.to(hidden.dtype) if grad_hidden is not None else None,
            grad_weight.to(weight.dtype) if grad_weight is not None else None,
            None,
            None,
        )


def sequence_logprobs(
    model: PreTrainedModel,
    prompts: list[list[int]],
    completions: list[list[int]],
    *,
    pad_id: int,
    temperature: float = 1.0,
    chunk: int = 1024,
    share_prompts: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logprobs, entropy, mask), each [B, L]: see `token_stats`."""
    st = token_stats(
        model, prompts, completions, pad_id=pad_id, temperature=temperature, chunk=chunk, share_prompts=share_prompts
    )
    return st.logprobs, st.entropy, st.mask


def token_stats(
    model: PreTrainedModel,
    prompts: list[list[int]],
    completions: list[list[int]],
    *,
    pad_id: int,
    temperature: float = 1.0,
    chunk: int = 1024,
    share_prompts: bool = True,
    entropy_grad: bool = False,
    value_head: torch.nn.Module | None = None,
    shared: tuple[SharedPrompts, list[int]] | None = None,
) -> TokenStats:
    """Log-probs [B, L] of each completion token given its prompt and the tokens before it,
    per-token entropies [B, L], and the mask [B, L] (1 where a completion token exists).
    L is the longest completion; rows are right-padded.

    With `share_prompts`, each distinct prompt is run once and the rows that share it
    (the G samples of a group) read its key/value cache, so a group of G costs one prompt
    pass instead of G. Gradients flow through the shared cache, so the result and its
    gradient are those of running every row in full (up to float rounding). `shared`
    gives a prompt pass already run (`SharedPrompts`) and which of its rows these are;
    the caller then calls its `backward()` after the last micro-batch's.
    """
    if shared is not None or share_prompts:
        sel = _shared_prompt_hidden(model, prompts, completions, pad_id=pad_id, shared=shared)
    else:
        sel = _full_hidden(model, prompts, completions, pad_id=pad_id)
    return _scatter(model, sel, completions, temperature, chunk, entropy_grad, value_head)


def _full_hidden(
    model: PreTrainedModel, prompts: list[list[int]], completions: list[list[int]], *, pad_id: int
) -> torch.Tensor:
    device = next(model.parameters()).device
    B = len(prompts)
    T = max(len(p) + len(c) for p, c in zip(prompts, completions, strict=True))
    input_ids = torch.full((B, T), pad_id, dtype=torch.long)
    attn = torch.zeros((B, T), dtype=torch.long)
    rows, cols = [], []
    for r, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        input_ids[r, : len(p) + len(c)] = torch.tensor(p + c)
        attn[r, : len(p) + len(c)] = 1
        for t in range(len(c)):
            rows.append(r)
            cols.append(len(p) - 1 + t)  # the position whose output predicts token t
    base = getattr(model, model.base_model_prefix)
    hidden = base(input_ids=input_ids.to(device), attention_mask=attn.to(device)).last_hidden_state  # [B, T, H]
    return hidden[torch.tensor(rows, device=device), torch.tensor(cols, device=device)]  # [N, H]


class SharedPrompts:
    """The distinct prompts of a set of rows, run once: their key/value cache and last
    hidden states, which any subset of the rows then reads (one micro-batch's completion
    pass at a time).

    With gradients recorded (`collect`), the prompt pass runs without keeping its graph;
    the rows read leaf tensors that collect the gradient of every micro-batch, and
    `backward()` reruns the prompt pass (same inputs, autocast state and RNG state, so
    the same values) and sends the total through it once. The prompts' activations are
    thus never held across micro-batches. `plain` is False for caches other than
    per-layer key/value tensors (e.g. sliding windows): those are read in place, by one
    set of rows only, whose backward goes through the prompt pass directly."""

    def __init__(self, model: PreTrainedModel, prompts: list[list[int]], pad_id: int, *, collect: bool = True) -> None:
        device = next(model.parameters()).device
        self._base = getattr(model, model.base_model_prefix)
        self._set_inputs(prompts, pad_id, device, share=True)
        kind = device.type
        self._autocast = (kind, torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind))
        self._rng_devices = [device.index or 0] if kind == "cuda" else []
        self._rng = torch.get_rng_state(), [torch.cuda.get_rng_state(d) for d in self._rng_devices]
        grad = torch.is_grad_enabled() and any(p.requires_grad for p in model.parameters())
        with torch.no_grad() if collect and grad else contextlib.nullcontext():
            outputs, self.cache, self.plain = self._run()
        if grad and not self.plain:
            # Read in place, with its graph. Selecting a shared prompt for several rows
            # there would sum their cache gradients in the thread-dependent order of
            # `x[idx]`'s backward (transformers' batch_select_indices), so each row runs its
            # own copy of its prompt and the read is a permutation.
            self._set_inputs(prompts, pad_id, device, share=False)
            outputs, self.cache, self.plain = self._run()
        self._recompute = collect and grad and self.plain
        self._inputs = [t.requires_grad_() if self._recompute else t for t in outputs]
        self._used = False

    def _set_inputs(self, prompts: list[list[int]], pad_id: int, device: torch.device, *, share: bool) -> None:
        self.row_to_u, p_ids, self.p_mask, p_pos = distinct_prompts(prompts, pad_id, share=share)
        self._args = {
            "input_ids": p_ids.to(device),
            "attention_mask": self.p_mask.to(device),
            "position_ids": p_pos.to(device),
            "use_cache": True,
        }

    def _run(self) -> tuple[list[torch.Tensor], DynamicCache, bool]:
        out = self._base(**self._args)
        cache = out.past_key_values
        plain = all(type(layer) is DynamicLayer for layer in cache.layers)
        outputs: list[torch.Tensor] = [out.last_hidden_state[:, -1]]  # [U, H]: predicts token 0
        if plain:
            for layer in cache.layers:
                assert isinstance(layer, DynamicLayer) and layer.keys is not None and layer.values is not None
                outputs += [layer.keys, layer.values]  # [U, h, P, d] each
        return outputs, cache, plain

    def rows(self, rows: list[int]) -> tuple[DynamicCache, torch.Tensor, torch.Tensor]:
        """(cache [b, ...], last prompt hidden state [b, H], prompt mask [b, P]) of these rows."""
        u = [self.row_to_u[r] for r in rows]
        idx = torch.tensor(u, device=self._inputs[0].device)
        # index_select, not `x[idx]`: its backward (index_add_) adds the rows that share a
        # prompt in row order; `x[idx]`'s accumulates with atomic adds across threads, in an
        # order that changes from run to run.
        if self.plain:
            cache = DynamicCache()
            for i in range(1, len(self._inputs), 2):
                k, v = self._inputs[i].index_select(0, idx), self._inputs[i + 1].index_select(0, idx)
                cache.update(k, v, (i - 1) // 2)
        else:
            if self._used:
                raise RuntimeError("a non-plain prompt cache can be read by one set of rows only")
            cache = self.cache
            cache.batch_select_indices(idx)  # [U, ...] -> [b, ...], differentiable gather
        self._used = True
        return cache, self._inputs[0].index_select(0, idx), self.p_mask[torch.tensor(u)]

    def backward(self) -> None:
        """Back-propagate the gradients the rows collected through the prompt pass."""
        grads = [t.grad for t in self._inputs] if self._recompute else []
        if all(g is None for g in grads):
            return
        kind, enabled, dtype = self._autocast
        with (
            torch.random.fork_rng(devices=self._rng_devices),
            torch.enable_grad(),
            torch.autocast(kind, dtype=dtype, enabled=enabled),
        ):
            torch.set_rng_state(self._rng[0])
            for d, state in zip(self._rng_devices, self._rng[1], strict=True):
                torch.cuda.set_rng_state(state, d)
            outputs, _, _ = self._run()
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=True) if g is not None]
        torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])


def _shared_prompt_hidden(
    model: PreTrainedModel,
    prompts: list[list[int]],
    completions: list[list[int]],
    *,
    pad_id: int,
    shared: tuple[SharedPrompts, list[int]] | None = None,
) -> torch.Tensor:
    if shared is None:
        shared = SharedPrompts(model, prompts, pad_id, collect=False), list(range(len(prompts)))
    ctx, rows = shared
    cache, last_prompt_h, p_mask = ctx.rows(rows)
    device = last_prompt_h.device
    base = getattr(model, model.base_model_prefix)
    B = len(completions)
    Lc = max(1, max(len(c) for c in completions))
    c_ids = torch.full((B, Lc), pad_id, dtype=torch.long)
    c_mask = torch.zeros((B, Lc), dtype=torch.long)
    for r, c in enumerate(completions):
        if c:
            c_ids[r, : len(c)] = torch.tensor(c)
            c_mask[r, : len(c)] = 1
    p_len = p_mask.sum(-1)  # [B]
    c_pos = p_len[:, None] + torch.arange(Lc)[None, :]  # [B, Lc]
    c_out = base(
        input_ids=c_ids.to(device),
        attention_mask=torch.cat([p_mask, c_mask], dim=1).to(device),  # [B, P + Lc]
        position_ids=c_pos.to(device),
        past_key_values=cache,
        use_cache=True,
    )
    # Hidden state predicting completion token t: the last prompt position for t = 0,
    # completion position t - 1 otherwise.
    h_all = torch.cat([last_prompt_h[:, None, :], c_out.last_hidden_state[:, :-1]], dim=1)  # [B, Lc, H]
    rows_i = [r for r, c in enumerate(completions) for _ in c]
    cols = [t for c in completions for t in range(len(c))]
    return h_all[
        torch.tensor(rows_i, dtype=torch.long, device=device), torch.tensor(cols, dtype=torch.long, device=device)
    ]


def _scatter(
    model: PreTrainedModel,
    sel: torch.Tensor,
    completions: list[list[int]],
    temperature: float,
    chunk: int,
    entropy_grad: bool = False,
    value_head: torch.nn.Module | None = None,
) -> TokenStats:
    """Chunked head over the selected hidden states [N, H]; results laid out as [B, L]."""
    device = sel.device
    B = len(completions)
    L = max(1, max(len(c) for c in completions))
    tgt = torch.tensor([tok for c in completions for tok in c], dtype=torch.long, device=device)  # [N]
    weight = model.get_output_embeddings().weight  # [V, H]
    parts_lp, parts_ent = [], []
    for s in range(0, sel.shape[0], chunk):
        h, y = sel[s : s + chunk], tgt[s : s + chunk]
        if torch.is_grad_enabled() and not entropy_grad:
            lp, ent = _FusedHeadLogprob.apply(h, weight, y, temperature)
        elif torch.is_grad_enabled():  # the entropy bonus needs the entropy's gradient too
            lp, ent = checkpoint(_chunk_logprobs, h, weight, y, temperature, entropy_grad, use_reentrant=False)
        else:
            lp, ent = _chunk_logprobs(h, weight, y, temperature)
        parts_lp.append(lp)
        parts_ent.append(ent)
    out = torch.zeros((B, L), dtype=torch.float32, device=device)
    ent = torch.zeros((B, L), dtype=torch.float32, device=device)
    mask = torch.zeros((B, L), dtype=torch.float32, device=device)
    if parts_lp:
        r_idx = torch.tensor([r for r, c in enumerate(completions) for _ in c], device=device)
        c_idx = torch.tensor([t for c in completions for t in range(len(c))], device=device)
        out = out.index_put((r_idx, c_idx), torch.cat(parts_lp).float())
        ent = ent.index_put((r_idx, c_idx), torch.cat(parts_ent).float())
        mask[r_idx, c_idx] = 1.0
    values = None
    if value_head is not None:
        values = torch.zeros((B, L), dtype=torch.float32, device=device)
        if parts_lp:
            values = values.index_put((r_idx, c_idx), value_head(sel).squeeze(-1).float())
    return TokenStats(out, ent, mask, values)
