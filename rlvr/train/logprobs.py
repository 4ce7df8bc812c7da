"""Per-token log-probs of given tokens under a causal LM, without full-vocabulary logits
for the whole batch.

The decoder runs each distinct prompt once, then every completion of the batch as one
unpadded sequence over the prompts' shared key/value cache (a block mask keeps each row
to its own prompt and its own earlier tokens), so the cost follows the real token count
rather than rows x the longest row. The hidden states of the positions that predict
completion tokens are gathered ([N, H]) and pushed through the output head in chunks of
`chunk` positions. The [chunk, V] logits exist for one chunk at a time in the forward
pass and are recomputed, one chunk at a time, in backward (a fused autograd function
for the log-prob; a checkpointed chunk when the entropy bonus needs its gradient).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.utils.checkpoint import checkpoint
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from rlvr.padding import distinct_prompts


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
) -> TokenStats:
    """Log-probs [B, L] of each completion token given its prompt and the tokens before it,
    per-token entropies [B, L], and the mask [B, L] (1 where a completion token exists).
    L is the longest completion; rows are right-padded.

    With `share_prompts`, each distinct prompt is run once and the rows that share it
    (the G samples of a group) read its key/value cache, so a group of G costs one prompt
    pass instead of G; the completions then run packed, without padding. Gradients flow
    through the shared cache, so the result and its gradient are those of running every
    row in full (up to float rounding).
    """
    if share_prompts:
        sel = _shared_prompt_hidden(model, prompts, completions, pad_id=pad_id)
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


def _shared_prompt_hidden(
    model: PreTrainedModel, prompts: list[list[int]], completions: list[list[int]], *, pad_id: int
) -> torch.Tensor:
    device = next(model.parameters()).device
    row_to_u, p_ids, p_mask, p_pos = distinct_prompts(prompts, pad_id)
    base = getattr(model, model.base_model_prefix)
    p_out = base(
        input_ids=p_ids.to(device), attention_mask=p_mask.to(device), position_ids=p_pos.to(device), use_cache=True
    )
    cache = p_out.past_key_values
    if all(type(layer) is DynamicLayer for layer in cache.layers):
        return _packed_completion_hidden(base, cache, p_out.last_hidden_state[:, -1], row_to_u, p_mask, completions)
    return _padded_completion_hidden(base, cache, p_out.last_hidden_state[:, -1], row_to_u, p_mask, completions)


def _packed_completion_hidden(
    base: torch.nn.Module,
    cache: DynamicCache,
    last_prompt_h: torch.Tensor,
    row_to_u: list[int],
    p_mask: torch.Tensor,
    completions: list[list[int]],
) -> torch.Tensor:
    """The completions of all rows as one sequence without padding: row r's tokens (all
    but its last, whose output predicts nothing) attend to its own prompt's keys in the
    shared cache and to its own earlier tokens, through a block mask; positions continue
    each row's prompt. Cost follows the real token count, not rows x the longest row."""
    device = last_prompt_h.device
    U, P = p_mask.shape
    for layer in cache.layers:  # [U, h, P, d] -> [1, h, U * P, d]: every prompt side by side
        assert isinstance(layer, DynamicLayer) and layer.keys is not None and layer.values is not None
        k, v = layer.keys, layer.values
        layer.keys = k.transpose(0, 1).reshape(1, k.shape[1], U * P, k.shape[3])
        layer.values = v.transpose(0, 1).reshape(1, v.shape[1], U * P, v.shape[3])
    p_len = p_mask.sum(-1).tolist()
    ids: list[int] = []
    pos: list[int] = []
    q_row: list[int] = []
    q_t: list[int] = []
    select: list[int] = []
    for r, c in enumerate(completions):
        u = row_to_u[r]
        if c:
            select.append(u)  # token 0 is predicted by the prompt's last position
        for t in range(len(c) - 1):
            select.append(U + len(ids))  # token t + 1 is predicted by the output at token t
            ids.append(c[t])
            pos.append(p_len[u] + t)
            q_row.append(r)
            q_t.append(t)
    hidden = last_prompt_h
    if ids:
        row = torch.tensor(q_row)
        step = torch.tensor(q_t)
        u_of_q = torch.tensor(row_to_u)[row]  # [N]
        key_u = torch.arange(U).repeat_interleave(P)  # [U * P]
        sees_prompt = (key_u[None, :] == u_of_q[:, None]) & p_mask.flatten().bool()[None, :]  # [N, U * P]
        sees_own = (row[None, :] == row[:, None]) & (step[None, :] <= step[:, None])  # [N, N] causal within a row
        mask = torch.cat([sees_prompt, sees_own], dim=1)[None, None]  # [1, 1, N, U * P + N]
        out = base(
            input_ids=torch.tensor([ids], device=device),
            attention_mask=mask.to(device),
            position_ids=torch.tensor([pos], device=device),
            past_key_values=cache,
            use_cache=True,
        )
        hidden = torch.cat([last_prompt_h, out.last_hidden_state[0]], dim=0)  # [U + N, H]
    return hidden[torch.tensor(select, device=device)]  # [N_tokens, H]


def _padded_completion_hidden(
    base: torch.nn.Module,
    cache: DynamicCache,
    last_prompt_h: torch.Tensor,
    row_to_u: list[int],
    p_mask: torch.Tensor,
    completions: list[list[int]],
) -> torch.Tensor:
    """The completions as right-padded rows over the prompt cache expanded to every row
    (for caches that are not plain per-layer key/value tensors, e.g. sliding windows)."""
    device = last_prompt_h.device
    B = len(completions)
    pad_id = 0  # padded positions are masked out; any id will do
    idx = torch.tensor(row_to_u, device=device)
    cache.batch_select_indices(idx)  # [U, ...] -> [B, ...], differentiable gather
    last_h = last_prompt_h[idx]  # [B, H], predicts completion token 0
    Lc = max(1, max(len(c) for c in completions))
    c_ids = torch.full((B, Lc), pad_id, dtype=torch.long)
    c_mask = torch.zeros((B, Lc), dtype=torch.long)
    for r, c in enumerate(completions):
        if c:
            c_ids[r, : len(c)] = torch.tensor(c)
            c_mask[r, : len(c)] = 1
    p_len = p_mask.sum(-1)[torch.tensor(row_to_u)]  # [B]
    c_pos = p_len[:, None] + torch.arange(Lc)[None, :]  # [B, Lc]
    full_mask = torch.cat([p_mask[torch.tensor(row_to_u)], c_mask], dim=1)  # [B, P + Lc]
    c_out = base(
        input_ids=c_ids.to(device),
        attention_mask=full_mask.to(device),
        position_ids=c_pos.to(device),
        past_key_values=cache,
        use_cache=True,
    )
    # Hidden state predicting completion token t: the last prompt position for t = 0,
    # completion position t - 1 otherwise.
    h_all = torch.cat([last_h[:, None, :], c_out.last_hidden_state[:, :-1]], dim=1)  # [B, Lc, H]
    rows = [r for r, c in enumerate(completions) for _ in c]
    cols = [t for c in completions for t in range(len(c))]
    return h_all[torch.tensor(rows, device=device), torch.tensor(cols, device=device)]  # [N, H]


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
