"""One policy update from a batch of scored trajectories.

The learner owns the optimizer, the optional frozen reference model and the optional
value head (PPO). `step(trajs)`:

1. `prepare`: the pure pieces of `rlvr.learner.prepare` around the model passes: masks
   (padding, the trajectory's own loss mask, DAPO's overlong filter); the no-grad passes
   when needed (`passes`: proximal log-probs for decoupled PPO and importance
   correction, rollout-time values for gae, reference log-probs for KL in the reward);
   token advantages (group estimators on sequence rewards, or GAE with the value head,
   whitened over the batch); importance weights;
2. `updates_per_batch` optimizer steps, each accumulating the whole batch's gradient
   over micro-batches (`gradient_pass`, on prepared rows only) with the batch's
   normalisers, so the update does not depend on micro_batch_size. Micro-batches are
   rows of similar length, reading prompt passes shared by windows of groups
   (`_micro_batches`); rows whose loss is exactly zero are left out.

`rlvr.learner.sharded.ShardedLearner` overrides the passes, the gradient pass's
bookkeeping and the clipping to run the same update across ranks.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import torch
from transformers import PreTrainedModel

from rlvr.algos import KL_ESTIMATORS, POLICY_LOSSES, aggregate
from rlvr.algos.names import estimator_needs
from rlvr.algos.policy_loss import value_loss
from rlvr.config import RunConfig
from rlvr.learner.embedding_grad import sparse_tied_embedding_grads
from rlvr.learner.logprobs import SharedPrompts, TokenStats, token_stats
from rlvr.learner.prepare import (
    Needs,
    Normalisers,
    Prepared,
    assemble,
    group_advantages,
    group_index,
    importance,
    inert,
    loss_masks,
    normalisers,
    pad_rows,
    policy_pass,
    reference_kl,
    token_advantages,
)
from rlvr.rollout.models import autocast
from rlvr.types import Trajectory

__all__ = ["Learner", "MetricSums", "Prepared", "group_advantages", "group_index"]


class MetricSums:
    """A gradient pass's metrics: for `*_sum` keys a plain sum over micro-batches, for the
    others a mean weighted by each micro-batch's weight (its loss tokens)."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.weights: dict[str, float] = {}

    def add(self, key: str, value: float, weight: float) -> None:
        self.sums[key] = self.sums.get(key, 0.0) + value * weight
        self.weights[key] = self.weights.get(key, 0.0) + weight

    def result(self, *, skipped: int | float, num_seqs: float) -> dict[str, float]:
        """The metrics (`*_sum` keys lose the suffix), with the fraction of rows skipped."""
        sums, weights = self.sums, self.weights
        out = {k: sums[k] if k.endswith("_sum") else sums[k] / weights[k] if weights[k] else 0.0 for k in sums}
        for k in [k for k in out if k.endswith("_sum")]:
            out[k[: -len("_sum")]] = out.pop(k)
        out["rows_skipped_frac"] = skipped / max(num_seqs, 1.0)
        return out


def _prompt_windows(trajs: list[Trajectory], budget: int) -> list[list[int]]:
    """Row indices in windows of whole groups (first-seen order) whose distinct prompts
    hold at most `budget` tokens together (a window holds at least one group)."""
    windows: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for group in group_index(trajs):
        prompts = {tuple(trajs[i].prompt_ids) for i in group}
        if not windows or sum(len(p) for p in seen | prompts) > budget:
            windows.append([])
            seen = set()
        windows[-1].extend(group)
        seen |= prompts
    return windows


class Learner:
    def __init__(self, model: PreTrainedModel, cfg: RunConfig, pad_id: int) -> None:
        self.model = model
        self.cfg = cfg
        self.pad_id = pad_id
        self.version = 0
        self.value_head: torch.nn.Linear | None = None
        if estimator_needs(cfg.algo.advantage).values:
            self.value_head = torch.nn.Linear(model.config.hidden_size, 1, device=model.device)
            torch.nn.init.zeros_(self.value_head.weight)
            torch.nn.init.zeros_(self.value_head.bias)
        self._build_optimizer()
        self.on_progress: Callable[[str, int, int], None] | None = None  # (phase, done, total)
        self.ref_model: PreTrainedModel | None = None
        if cfg.algo.kl_coef > 0:
            self.ref_model = copy.deepcopy(model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)

    def _build_optimizer(self) -> None:
        """AdamW over the trained parameters, with its warm-up schedule."""
        tc = self.cfg.train
        self.optimizer = torch.optim.AdamW(self.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
        warm = max(tc.warmup_steps, 0)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0
        )

    def parameters(self) -> list[torch.nn.Parameter]:
        ps = [p for p in self.model.parameters() if p.requires_grad]
        return ps + (list(self.value_head.parameters()) if self.value_head is not None else [])

    def _stats(
        self,
        model: PreTrainedModel,
        trajs: list[Trajectory],
        *,
        value_head: bool = False,
        entropy_grad: bool = False,
        shared: tuple[SharedPrompts, list[int]] | None = None,
    ) -> TokenStats:
        with autocast(next(model.parameters()).device, self.cfg.model.compute_dtype):
            return token_stats(
                model,
                [t.prompt_ids for t in trajs],
                [t.completion_ids for t in trajs],
                pad_id=self.pad_id,
                temperature=self.cfg.generation.temperature,
                chunk=self.cfg.train.logprob_chunk,
                entropy_grad=entropy_grad,
                value_head=self.value_head if value_head else None,
                shared=shared,
            )

    def _micro_batches(
        self,
        model: PreTrainedModel,
        trajs: list[Trajectory],
        *,
        value_head: bool = False,
        entropy_grad: bool = False,
        phase: str = "",
    ) -> Iterator[tuple[list[int], TokenStats]]:
        """(row indices, token stats) per micro-batch of at most micro_batch_size rows.

        Whole groups are taken in windows whose distinct prompts hold at most as many
        tokens as a micro-batch of full-length completions; a window's prompts run once
        (`SharedPrompts`) and its rows, sorted by completion length, form the micro-batches,
        so rows of similar length are padded together. A caller recording gradients calls
        backward on each micro-batch's loss before asking for the next; the window's prompt
        pass then gets its gradient once, after its last micro-batch."""
        mbs = self.cfg.train.micro_batch_size
        budget = mbs * self.cfg.generation.max_new_tokens
        windows = _prompt_windows(trajs, budget)
        total, done = sum(-(-len(w) // mbs) for w in windows), 0  # micro-batches in all (ceil per window)
        report = self.on_progress if phase else None
        for window in windows:
            with autocast(next(model.parameters()).device, self.cfg.model.compute_dtype):
                ctx = SharedPrompts(model, [trajs[i].prompt_ids for i in window], self.pad_id)
            order = sorted(range(len(window)), key=lambda j: -len(trajs[window[j]].completion_ids))
            chunks = [order[s : s + mbs] for s in range(0, len(order), mbs)]
            # A non-plain cache is read once: with several micro-batches each runs its own prompts.
            window_ctx = ctx if ctx.plain or len(chunks) == 1 else None
            del ctx
            for chunk in chunks:
                if report is not None:
                    report(phase, done, total)
                done += 1
                rows = [window[j] for j in chunk]
                yield (
                    rows,
                    self._stats(
                        model,
                        [trajs[i] for i in rows],
                        value_head=value_head,
                        entropy_grad=entropy_grad,
                        shared=(window_ctx, chunk) if window_ctx is not None else None,
                    ),
                )
            if window_ctx is not None and torch.is_grad_enabled():
                window_ctx.backward()
        if report is not None:
            report(phase, total, total)

    # ---- before the first update ----------------------------------------------------------
    def passes(
        self, trajs: list[Trajectory], needs: Needs
    ) -> tuple[list[list[float]], list[list[float]], list[list[float]] | None]:
        """The no-grad passes `needs` asks for: (log-probs the ratio can be taken against,
        the value head's rollout-time values, per-token KL to the reference or None)."""
        prox: list[list[float]] = [list(t.logprobs) for t in trajs]
        values: list[list[float]] = [[] for _ in trajs]
        kl: list[list[float]] | None = None
        with torch.no_grad():
            if needs.policy_pass:
                batches = self._micro_batches(self.model, trajs, value_head=needs.values, phase="recomputing log-probs")
                prox, values = policy_pass(trajs, batches, proximal=needs.proximal)
            if needs.ref_kl:
                kl_fn = KL_ESTIMATORS.get(self.cfg.algo.kl_estimator)
                if self.ref_model is not None:
                    kl = reference_kl(trajs, self._micro_batches(self.ref_model, trajs), kl_fn)
                else:
                    kl = [[0.0] * len(t.completion_ids) for t in trajs]
        return prox, values, kl

    def prepare(self, trajs: list[Trajectory]) -> tuple[list[Prepared], dict[str, float]]:
        """Masks, the no-grad passes, token advantages (recorded per trajectory as its
        `advantage`) and importance weights: one `Prepared` row per trajectory."""
        ac = self.cfg.algo
        needs = Needs.of(ac)
        masks = loss_masks(trajs, overlong_filter=ac.overlong_filter, compact_filter=ac.compact_filter)
        prox, values, kl = self.passes(trajs, needs)
        adv = token_advantages(trajs, masks, ac, kl=kl, values=values if needs.values else None)
        for t, a in zip(trajs, adv.sequence, strict=True):
            t.advantage = a
        metrics = dict(adv.metrics)
        weights = None
        if needs.proximal:
            weights, is_metrics = importance(masks, prox, [t.logprobs for t in trajs], ac.importance, ac.is_cap)
            metrics.update(is_metrics)
        old = prox if ac.decoupled else [list(t.logprobs) for t in trajs]
        rows = assemble(trajs, masks, old, adv, weights=weights, values=values if needs.values else None)
        return rows, metrics

    # ---- the update -------------------------------------------------------------------------
    def step(self, trajs: list[Trajectory]) -> dict[str, float]:
        """Advantages, then `updates_per_batch` optimizer steps over the batch."""
        usable = [t for t in trajs if t.status == "ok" and t.completion_ids]
        if not usable:
            return {"skipped": 1.0}
        prepared, pre_metrics = self.prepare(usable)
        if not any(any(p.mask) for p in prepared):  # e.g. every completion overlong-filtered
            return {"skipped": 1.0, **pre_metrics}
        metrics: dict[str, float] = {}
        for _ in range(self.cfg.algo.updates_per_batch):
            metrics = self._update(prepared)
        metrics.update(pre_metrics)
        metrics["staleness_mean"] = sum(self.version - t.policy_version for t in usable) / len(usable)
        self.version += 1
        metrics["policy_version"] = float(self.version)
        return metrics

    def _update(self, prepared: list[Prepared]) -> dict[str, float]:
        out = self.accumulate_gradients(prepared)
        grad_norm = self._clip_gradients()
        self.optimizer.step()
        self.scheduler.step()
        self.model.eval()
        out["grad_norm"] = grad_norm if math.isfinite(grad_norm) else float("nan")
        out["lr"] = float(self.scheduler.get_last_lr()[0])
        return out

    def _clip_gradients(self) -> float:
        """Clip the gradient to max_grad_norm; its norm before clipping."""
        return float(torch.nn.utils.clip_grad_norm_(self.parameters(), self.cfg.train.max_grad_norm))

    def accumulate_gradients(self, batch: list[Prepared] | list[Trajectory]) -> dict[str, float]:
        """Zero the gradients, then accumulate the whole batch's loss gradient over
        micro-batches (`gradient_pass`, which takes prepared rows only). The result does
        not depend on micro_batch_size. Trajectories given here are prepared first
        (advantages from their rewards)."""
        if batch and isinstance(batch[0], Trajectory):
            batch = self.prepare(batch)[0]
        prepared: list[Prepared] = batch  # type: ignore[assignment]
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        norms = normalisers(prepared, self.cfg.generation.max_new_tokens)
        # The normalisers count every row; rows that contribute nothing are then left out
        # of the passes, so the gradient is exactly the whole batch's.
        active = [p for p in prepared if not self._inert(p)]
        with sparse_tied_embedding_grads(self.model) if self.cfg.train.sparse_embedding_grads else nullcontext():
            sums = self.gradient_pass(active, norms)
        if not active:
            self._zero_gradients(sums)
        return sums.result(skipped=len(prepared) - len(active), num_seqs=norms.num_seqs)

    def _zero_gradients(self, sums: MetricSums) -> None:
        """Every row inert: a zero gradient, which Adam still steps with."""
        for p in self.parameters():
            p.grad = torch.zeros_like(p)
        sums.add("loss_sum", 0.0, 1.0)
        sums.add("pg_loss_sum", 0.0, 1.0)

    def gradient_pass(self, prepared: list[Prepared], norms: Normalisers) -> MetricSums:
        """Forward and backward over `prepared` in micro-batches, adding to the gradients;
        each micro-batch's loss is normalised by the batch-wide `norms`, so the sum of
        their gradients is the batch loss's. Returns the metrics' weighted sums."""
        ac = self.cfg.algo
        loss_fn = POLICY_LOSSES.get(ac.policy_loss)
        kl_fn = KL_ESTIMATORS.get(ac.kl_estimator)
        gae_mode = self.value_head is not None
        agg = norms.kwargs()
        sums = MetricSums()
        acc = sums.add
        batch_trajs = [p.traj for p in prepared]
        for rows, st in self._micro_batches(
            self.model, batch_trajs, value_head=gae_mode, entropy_grad=ac.entropy_coef > 0, phase="learning"
        ):
            mb = [prepared[i] for i in rows]
            trajs = [p.traj for p in mb]
            logp, L, dev = st.logprobs, st.logprobs.shape[1], st.logprobs.device
            mask = st.mask * pad_rows([p.mask for p in mb], L, dev)
            old = pad_rows([p.old for p in mb], L, dev)
            behav = pad_rows([t.logprobs for t in trajs], L, dev)
            adv = pad_rows([p.adv for p in mb], L, dev)
            w = pad_rows([p.weights or [] for p in mb], L, dev) if mb[0].weights is not None else None
            loss, m = loss_fn(
                logp,
                old,
                adv,
                mask,
                clip_low=ac.clip_low,
                clip_high=ac.clip_high,
                aggregation=ac.aggregation,
                is_weights=w,
                **agg,
            )
            acc("pg_loss_sum", float(loss.detach()), 1.0)
            if ac.kl_coef > 0 and ac.kl_in == "loss" and self.ref_model is not None:
                with torch.no_grad():
                    ref_logp = self._ref_logprobs(trajs)
                kl = kl_fn(logp, ref_logp)
                loss = loss + ac.kl_coef * aggregate(kl, mask, ac.aggregation, **agg)
                acc("kl", float((kl.detach() * mask).sum() / mask.sum().clamp(min=1)), float(mask.sum()))
            if ac.entropy_coef > 0:
                loss = loss - ac.entropy_coef * aggregate(st.entropy, mask, ac.aggregation, **agg)
            if gae_mode and st.values is not None:
                old_v = pad_rows([p.old_values or [] for p in mb], L, dev)
                ret = pad_rows([p.returns or [] for p in mb], L, dev)
                v_loss, vm = value_loss(st.values, old_v, ret, mask, clip=ac.value_clip, num_tokens=norms.num_tokens)
                loss = loss + ac.value_coef * v_loss
                acc("value_loss_sum", float(v_loss.detach()), 1.0)
                for k, v in vm.items():
                    acc(k, v, float(mask.sum()))
            loss.backward()
            n_tok = float(mask.sum())
            acc("loss_sum", float(loss.detach()), 1.0)
            acc("entropy", float((st.entropy.detach() * mask).sum() / mask.sum().clamp(min=1)), n_tok)
            acc(
                "logprob_mismatch", float(((logp.detach() - behav).abs() * mask).sum() / mask.sum().clamp(min=1)), n_tok
            )
            for k, v in m.items():
                acc(k, v, n_tok)
        return sums

    def _ref_logprobs(self, trajs: list[Trajectory]) -> torch.Tensor:
        """[b, L] log-probs of the rows' completion tokens under the reference model."""
        assert self.ref_model is not None
        return self._stats(self.ref_model, trajs).logprobs

    def _inert(self, p: Prepared) -> bool:
        """True when the row's loss and its gradient are exactly zero, so its forward and
        backward passes can be skipped: every token has a zero advantage or is masked out
        (a group whose rewards are all equal, an overlong-filtered row), and nothing else
        in the loss acts per token (entropy bonus, KL in the loss, value loss)."""
        ac = self.cfg.algo
        if not self.cfg.train.skip_inert_rows or self.value_head is not None or ac.entropy_coef > 0:
            return False
        if ac.kl_coef > 0 and ac.kl_in == "loss":
            return False
        return inert(p)

    def state_dict(self, *, optimizer: bool = True) -> dict[str, Any]:
        """Everything to resume from; without `optimizer`, AdamW's moments are left out."""
        return {
            **({"optimizer": self.optimizer.state_dict()} if optimizer else {}),
            "scheduler": self.scheduler.state_dict(),
            "version": self.version,
            "value_head": self.value_head.state_dict() if self.value_head is not None else None,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a checkpoint's state; one saved without the optimizer keeps AdamW fresh."""
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.version = int(state["version"])
        if self.value_head is not None:
            if state.get("value_head") is None:
                raise ValueError(
                    f"the checkpoint has no value head, but advantage '{self.cfg.algo.advantage}' needs one"
                )
            self.value_head.load_state_dict(state["value_head"])
