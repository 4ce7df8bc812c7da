"""Batched sampling with a transformers causal LM and its KV cache.

The loop samples each token from the same logits it records the log-prob from, so the
behaviour log-probs cost no second forward pass. Finished rows are dropped from the
batch (and the cache) as they end, so a batch runs only as long as its live rows need.
Log-probs are those of softmax(logits / temperature) before top-p truncation; with
top_p = 1 that is exactly the distribution sampled from, and what the learner recomputes.

Rows with the same prompt (the samples of a group) share one prefill: each distinct
prompt runs once and its cache is copied to its rows. The cache is preallocated for the
batch's longest possible sequence (`kvcache.PreallocatedLayer`), so decoding never
copies it. A token is drawn by inverting the cumulative distribution at one uniform
number per row (the same distribution as torch.multinomial, without its one random
number per vocabulary entry). On a CPU the linear layers multiply with weights packed
once per call for oneDNN (`packed.packed_linears`), and a decoding step attends its one
query per row with two batched products instead of the flash kernel
(`attention.decode_attention`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.rollout.attention import decode_attention
from rlvr.rollout.engine import Completion, Report, SamplingParams, check_prompts
from rlvr.rollout.kvcache import RowKV, cache_from_rows, kv_bytes, preallocated_cache, row_kv
from rlvr.rollout.models import autocast
from rlvr.rollout.packed import packed_linears
from rlvr.rollout.padding import distinct_prompts

EPISODE_CACHE_MIB = 2048


class EpisodeStore:
    """Contexts kept between calls, by their tokens: the previous call's (looked up) and
    this call's (kept for the next). `prefilled` counts the prompt tokens run through the
    model, `hits` the rows that resumed a kept context."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.prev: dict[int, dict[tuple[int, ...], RowKV]] = {}  # by length, then tokens
        self.cur: dict[int, dict[tuple[int, ...], RowKV]] = {}
        self.cur_bytes = 0
        self.prefilled = self.hits = self.misses = self.not_kept = 0

    def next_call(self) -> None:
        self.prev, self.cur, self.cur_bytes = self.cur, {}, 0

    def lookup(self, prompts: list[list[int]]) -> list[tuple[RowKV, int] | None]:
        """For each prompt, the longest kept context it extends (keys and values, length)."""
        lengths = sorted(self.prev, reverse=True)
        out: list[tuple[RowKV, int] | None] = []
        for p in prompts:
            found = ((self.prev[n][k], n) for n in lengths if n < len(p) and (k := tuple(p[:n])) in self.prev[n])
            hit = next(found, None)
            out.append(hit)
            self.hits += hit is not None
            self.misses += hit is None
        return out

    def put(self, key: list[int], take: Callable[[], RowKV]) -> None:
        if not key or tuple(key) in self.cur.get(len(key), {}):
            return
        kv = take()
        size = kv_bytes(kv)
        if self.cur_bytes + size > self.max_bytes:
            self.not_kept += 1
            return
        self.cur.setdefault(len(key), {})[tuple(key)] = kv
        self.cur_bytes += size


class HFEngine:
    """Generates with a Hugging Face model: the learner's own model object (sync rollouts:
    weights are never copied), or, with `own_weights`, a frozen copy of it that
    `load_version` refreshes (async rollouts: the learner's updates never tear a batch)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        batch_size: int = 16,
        compute_dtype: str = "float32",
        packed_weights: bool = True,
        *,
        fast_attention: bool = True,
        own_weights: bool = False,
        version: int = 0,
    ):
        if own_weights:
            model = copy.deepcopy(model).eval()
            for p in model.parameters():
                p.requires_grad_(False)
        self.model = model
        self.shares_weights = not own_weights
        self.version = version
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.compute_dtype = compute_dtype
        self.packed_weights = packed_weights
        self.fast_attention = fast_attention
        eos = tokenizer.eos_token_id
        self.eos_ids = {int(eos)} if eos is not None else set()
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        if isinstance(gen_eos, int):
            self.eos_ids.add(gen_eos)
        elif isinstance(gen_eos, list):
            self.eos_ids.update(int(e) for e in gen_eos)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else next(iter(self.eos_ids), 0))
        self._episodes: EpisodeStore | None = None

    @property
    def context_limit(self) -> int | None:
        """The most positions the model takes (its config's max_position_embeddings): an
        episode's context never grows past it (rlvr.rollout.runner)."""
        limit = getattr(self.model.config, "max_position_embeddings", None)
        return int(limit) if isinstance(limit, int) else None

    def load_version(self, version: int, weights: Mapping[str, Any] | None) -> None:
        if weights is not None:
            if self.shares_weights:
                raise ValueError("this engine shares the learner's model: it takes no weights")
            self.model.load_state_dict(dict(weights))  # copies into its own tensors
        self.version = version

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, progress: Report | None = None
    ) -> list[Completion]:
        if not check_prompts(prompts):
            return []
        if self._episodes is not None:
            self._episodes.next_call()
        gen = torch.Generator()
        gen.manual_seed(params.seed if params.seed is not None else int(torch.randint(0, 2**31, ()).item()))
        # Longest first, so batches hold prompts of similar length (less padding).
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        out: list[Completion | None] = [None] * len(prompts)
        # One mixed-precision region for the whole call: the weights are cast once, not at
        # every decoding step; likewise packed once for the call (they change between calls).
        with (
            autocast(next(self.model.parameters()).device, self.compute_dtype),
            packed_linears(self.model, rows_hint=self.batch_size) if self.packed_weights else nullcontext(),
            decode_attention(self.model) if self.fast_attention else nullcontext(),
        ):
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                done = (lambda n, s=start: progress(s + n)) if progress is not None else None
                for i, c in zip(idx, self._generate_batch([prompts[i] for i in idx], params, gen, done), strict=True):
                    out[i] = c
        return [c for c in out if c is not None]

    @torch.no_grad()
    def _generate_batch(
        self, prompts: list[list[int]], params: SamplingParams, gen: torch.Generator, progress: Report | None = None
    ) -> list[Completion]:
        t0 = time.perf_counter()
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        B = len(prompts)
        cache, logits, attn, step_pos = self._prefill(prompts, params, device)

        tokens: list[list[int]] = [[] for _ in range(B)]
        logps: list[list[float]] = [[] for _ in range(B)]
        finish = [""] * B
        live = list(range(B))  # original row of each row still in the batch
        max_stop = max((len(s) for s in params.stop), default=0)
        step_ids = torch.empty((B, 0), dtype=torch.long, device=device)  # [b, 1] once a token is drawn
        for step in range(params.max_new_tokens):
            if step:  # a decoding step: every live row's last token
                cache, logits = self._forward(step_ids, attn, step_pos, cache)
            logits = logits.float().cpu()  # [b, V]; sampled with the CPU generator
            next_tok, next_logp = self._sample(logits, params, gen)
            next_tok = next_tok.to(device)
            keep: list[int] = []
            for j, row in enumerate(live):
                tok = int(next_tok[j])
                tokens[row].append(tok)
                logps[row].append(float(next_logp[j]))
                if tok in self.eos_ids:
                    finish[row] = "eos"
                elif max_stop and self._hit_stop(tokens[row], params.stop, max_stop):
                    finish[row] = "stop"
                else:
                    keep.append(j)
            if progress is not None and len(keep) < len(live):
                progress(B - len(keep))
            if self._episodes is not None and len(keep) < len(live):  # keep the context of the rows that ended
                ended = set(range(len(live))) - set(keep)
                self._store_rows(cache, attn, [(j, prompts[live[j]] + tokens[live[j]][:-1]) for j in sorted(ended)])
            if not keep:
                break
            if len(keep) < len(live):
                sel = torch.tensor(keep, device=device)
                cache.batch_select_indices(sel)
                attn, step_pos, next_tok = attn[sel], step_pos[sel], next_tok[sel]
                live = [live[j] for j in keep]
            step_ids = next_tok.unsqueeze(1)  # [b, 1]
            step_pos = step_pos[:, -1:] + 1  # [b, 1]
            attn = torch.cat([attn, torch.ones((len(live), 1), dtype=attn.dtype, device=device)], dim=1)
        cut = [j for j, row in enumerate(live) if not finish[row]]
        if self._episodes is not None and cut:
            self._store_rows(cache, attn, [(j, prompts[live[j]] + tokens[live[j]][:-1]) for j in cut])
        for row in range(B):
            if not finish[row]:
                finish[row] = "length"
        if progress is not None:
            progress(B)
        if was_training:
            self.model.train()
        elapsed = time.perf_counter() - t0
        return [
            Completion(
                token_ids=tokens[r],
                logprobs=logps[r],
                text=str(self.tokenizer.decode(tokens[r], skip_special_tokens=True)),
                finish_reason=finish[r],
                timings={"generate_s": elapsed},
            )
            for r in range(B)
        ]

    def _forward(
        self, ids: torch.Tensor, attn: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> tuple[Any, torch.Tensor]:
        """One pass over `ids` [b, n] on `cache`: (the cache, the last position's logits [b, V])."""
        out = self.model(
            input_ids=ids,
            attention_mask=attn,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return out.past_key_values, out.logits[:, -1, :]

    def _prefill(
        self, prompts: list[list[int]], params: SamplingParams, device: torch.device
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the prompts through the model: (cache, last logits [B, V], attention mask
        [B, T], positions [B, T or 1]). Rows with the same prompt share one prefill. Inside
        `episode_cache`, a prompt that extends a context kept from the previous call
        prefills only its new tokens on that context."""
        B = len(prompts)
        hits = self._episodes.lookup(prompts) if self._episodes is not None else [None] * B
        if any(h is not None for h in hits):
            return self._resume(prompts, hits, params, device)
        row_to_u, input_ids, attn, positions = distinct_prompts(prompts, self.pad_id)  # [U, P] each
        input_ids, attn, positions = input_ids.to(device), attn.to(device), positions.to(device)
        P = input_ids.shape[1]
        n_layers = getattr(self.model.config, "num_hidden_layers", None)
        cache = preallocated_cache(n_layers, P + params.max_new_tokens) if n_layers else None
        if self._episodes is not None:
            self._episodes.prefilled += int(attn.sum())
        cache, logits = self._forward(input_ids, attn, positions, cache)
        if input_ids.shape[0] < B:  # the shared prefill: one row per distinct prompt -> every row
            expand = torch.tensor(row_to_u, device=device)
            cache.batch_select_indices(expand)
            attn, positions, logits = attn[expand], positions[expand], logits[expand]
        return cache, logits, attn, positions

    def _resume(
        self, prompts: list[list[int]], hits: list[Any], params: SamplingParams, device: torch.device
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each row on its own: its kept context (none for a miss) and its new tokens, then
        the rows right-aligned into one batch cache for decoding."""
        assert self._episodes is not None
        n_layers = int(self.model.config.num_hidden_layers)
        rows, logits = [], []
        for p, hit in zip(prompts, hits, strict=True):
            kv, n = hit if hit is not None else (None, 0)
            delta = p[n:]  # [d]; never empty: a kept context is shorter than the prompt
            if kv is not None:
                cache = cache_from_rows([kv], n + len(delta))[0]
            else:
                cache = preallocated_cache(n_layers, len(delta))
            cache, last = self._forward(
                torch.tensor([delta], device=device),
                torch.ones((1, n + len(delta)), dtype=torch.long, device=device),
                torch.arange(n, n + len(delta), device=device).unsqueeze(0),
                cache,
            )
            self._episodes.prefilled += len(delta)
            rows.append(row_kv(cache, 0, 0))
            logits.append(last)
        lengths = [len(p) for p in prompts]
        T = max(lengths)
        cache, pads = cache_from_rows(rows, T + params.max_new_tokens)
        attn = torch.zeros((len(prompts), T), dtype=torch.long, device=device)
        for i, pad in enumerate(pads):
            attn[i, pad:] = 1
        positions = torch.tensor([[n - 1] for n in lengths], device=device)  # [B, 1]: each row's last position
        return cache, torch.cat(logits), attn, positions

    def _store_rows(self, cache: Any, attn: torch.Tensor, rows: list[tuple[int, list[int]]]) -> None:
        """Keep rows' contexts (batch row j, the tokens its cache holds) for the next call."""
        assert self._episodes is not None
        for j, key in rows:
            pad = int((attn[j] == 0).sum())  # padding is only ever on the left
            self._episodes.put(key, functools.partial(row_kv, cache, j, pad))

    @contextlib.contextmanager
    def episode_cache(self, max_mib: int = EPISODE_CACHE_MIB) -> Iterator[EpisodeStore]:
        """Within the block, each call keeps every row's context (its keys and values), and
        the next call's prompts that extend one prefill only their new tokens: a
        multi-turn episode's history is encoded once, not once a turn. Kept contexts hold
        at most `max_mib` (the previous call's and the current one's: twice that at the
        peak); past it a context is not kept and its row is prefilled whole. The weights
        must not change inside the block (the runner opens it for one batch of episodes)."""
        self._episodes = EpisodeStore(max_mib * 2**20)
        try:
            yield self._episodes
        finally:
            self._episodes = None

    def _hit_stop(self, toks: list[int], stop: tuple[str, ...], max_stop: int) -> bool:
        # Decode a tail long enough to contain any stop string plus a token boundary.
        tail = str(self.tokenizer.decode(toks[-(max_stop + 4) :], skip_special_tokens=True))
        return any(s in tail for s in stop)

    @staticmethod
    def _sample(
        logits: torch.Tensor, params: SamplingParams, gen: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """logits [b, V] -> (token [b], log-prob of token under softmax(logits / T) [b])."""
        if params.greedy:
            logp = torch.log_softmax(logits, dim=-1)
            tok = logp.argmax(dim=-1)
            return tok, logp.gather(1, tok[:, None]).squeeze(1)
        logp = torch.log_softmax(logits / params.temperature, dim=-1)  # [b, V]
        probs = logp.exp()
        if params.top_p < 1.0:
            sorted_p, sorted_i = probs.sort(dim=-1, descending=True)
            cum = sorted_p.cumsum(dim=-1)
            drop = cum - sorted_p > params.top_p  # keep the smallest prefix reaching top_p
            sorted_p = sorted_p.masked_fill(drop, 0.0)
            probs = torch.zeros_like(probs).scatter(1, sorted_i, sorted_p)
        u = torch.rand((probs.shape[0], 1), generator=gen, dtype=torch.float64)
        tok = inverse_cdf(probs, u)
        return tok, logp.gather(1, tok[:, None]).squeeze(1)


CDF_BLOCK = 256


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor, block: int = CDF_BLOCK) -> torch.Tensor:
    """probs [b, V] (unnormalised, >= 0, a positive total per row), u [b, 1] uniform in
    [0, 1) -> [b]: per row the first token whose cumulative probability exceeds u * total.

    Two levels, so that no [b, V] float64 tensor is made: float64 sums of blocks of `block`
    tokens, the block the target falls in (`searchsorted(right=True)` skips empty blocks),
    then the float64 cumulative sum inside that block only. Sums are float64 throughout,
    exact enough for tokens of probability ~1e-12; a token of zero probability is never
    returned."""
    b, v = probs.shape
    pad = (-v) % block
    blocks = torch.nn.functional.pad(probs, (0, pad)) if pad else probs
    blocks = blocks.view(b, -1, block)  # [b, nb, block]
    cum = blocks.sum(dim=-1, dtype=torch.float64).cumsum(dim=-1)  # [b, nb]
    target = u.to(torch.float64) * cum[:, -1:]  # [b, 1]
    j = torch.searchsorted(cum, target, right=True).clamp(max=cum.shape[1] - 1)  # [b, 1]
    before = torch.where(j > 0, cum.gather(1, (j - 1).clamp(min=0)), torch.zeros_like(target))
    inside = blocks.gather(1, j.unsqueeze(-1).expand(b, 1, block)).squeeze(1)  # [b, block]
    k = torch.searchsorted(inside.double().cumsum(dim=-1), target - before, right=True)  # [b, 1]
    # rounding may put the residual at or past the block's own total: the block's last
    # token of positive probability then
    last = block - 1 - (inside > 0).flip(-1).int().argmax(dim=-1, keepdim=True)
    return (j * block + torch.minimum(k, last)).squeeze(1)
