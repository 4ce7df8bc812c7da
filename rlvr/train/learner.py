"""One policy update from a batch of scored trajectories.

The learner owns the optimizer, the optional frozen reference model and the optional
value head (PPO). `step(trajs)`:

1. masks: padding, the trajectory's own loss mask (environment tokens excluded), DAPO's
   overlong filter;
2. a no-grad pass when needed, giving the proximal log-probs (decoupled PPO, importance
   correction), the rollout-time values (gae) and the reference log-probs (KL);
3. advantages: group estimators on sequence rewards (minus the summed KL with
   kl_in='reward'), or GAE on per-token rewards (terminal reward, per-token KL) with the
   value head, whitened over the batch;
4. `updates_per_batch` optimizer steps, each accumulating the whole batch's gradient
   over micro-batches with global normalisers, so the update does not depend on
   micro_batch_size. Micro-batches are rows of similar length, reading prompt passes
   shared by windows of groups (`_micro_batches`); rows whose loss is exactly zero are
   left out.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel

from rlvr.algos import ADVANTAGES, KL_ESTIMATORS, POLICY_LOSSES, aggregate
from rlvr.algos.advantages import gae, whiten
from rlvr.algos.filtering import overlong_loss_mask
from rlvr.algos.importance import importance_weights
from rlvr.algos.policy_loss import value_loss
from rlvr.config import RunConfig
from rlvr.models import autocast
from rlvr.train.logprobs import SharedPrompts, TokenStats, token_stats
from rlvr.types import Trajectory


def group_index(trajs: list[Trajectory]) -> list[list[int]]:
    """[B][G] indices of each group's trajectories (groups in first-seen order)."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(trajs):
        groups.setdefault(t.group_id, []).append(i)
    return list(groups.values())


def group_advantages(trajs: list[Trajectory], estimator: str, rewards: list[float] | None = None) -> list[float]:
    """Advantages per trajectory, computed within groups of equal group_id."""
    index = group_index(trajs)
    sizes = {len(g) for g in index}
    if len(sizes) != 1:
        raise ValueError(f"groups must all have the same size, got sizes {sorted(sizes)}")
    totals = rewards if rewards is not None else [t.reward.total if t.reward is not None else 0.0 for t in trajs]
    adv = ADVANTAGES.get(estimator)(torch.tensor([[totals[i] for i in g] for g in index]))  # [B, G]
    out = [0.0] * len(trajs)
    for gi, g in enumerate(index):
        for j, i in enumerate(g):
            out[i] = float(adv[gi, j])
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


def _pad(rows: list[list[float]], L: int, device: torch.device | None = None) -> torch.Tensor:
    return torch.tensor([r[:L] + [0.0] * (L - len(r[:L])) for r in rows], dtype=torch.float32, device=device)


@dataclass
class Prepared:
    """What the update needs per trajectory, fixed before the first optimizer step."""

    traj: Trajectory
    mask: list[float]  # [L] loss mask
    old: list[float]  # [L] log-probs the ratio is taken against (behaviour or proximal)
    adv: list[float]  # [L] advantage per token
    weights: list[float] | None = None  # [L] importance weights
    old_values: list[float] | None = None  # [L] gae only
    returns: list[float] | None = None  # [L] gae only


class Learner:
    def __init__(self, model: PreTrainedModel, cfg: RunConfig, pad_id: int) -> None:
        self.model = model
        self.cfg = cfg
        self.pad_id = pad_id
        self.version = 0
        tc = cfg.train
        self.value_head: torch.nn.Linear | None = None
        if cfg.algo.advantage == "gae":
            self.value_head = torch.nn.Linear(model.config.hidden_size, 1, device=model.device)
            torch.nn.init.zeros_(self.value_head.weight)
            torch.nn.init.zeros_(self.value_head.bias)
        params = [p for p in model.parameters() if p.requires_grad]
        if self.value_head is not None:
            params += list(self.value_head.parameters())
        self.optimizer = torch.optim.AdamW(params, lr=tc.lr, weight_decay=tc.weight_decay)
        warm = max(tc.warmup_steps, 0)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0
        )
        self.on_progress: Callable[[str, int, int], None] | None = None  # (phase, done, total)
        self.ref_model: PreTrainedModel | None = None
        if cfg.algo.kl_coef > 0:
            self.ref_model = copy.deepcopy(model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)

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
    def prepare(self, trajs: list[Trajectory]) -> tuple[list[Prepared], dict[str, float]]:
        ac = self.cfg.algo
        masks = []
        keep = overlong_loss_mask([t.finish_reason for t in trajs]) if ac.overlong_filter else [1] * len(trajs)
        for t, k in zip(trajs, keep, strict=True):
            lm = t.loss_mask if len(t.loss_mask) == len(t.completion_ids) else [1] * len(t.completion_ids)
            masks.append([float(m * k) for m in lm])
        need_prox = ac.decoupled or ac.importance != "none"
        gae_mode = ac.advantage == "gae"
        kl_reward = ac.kl_coef > 0 and ac.kl_in == "reward"
        prox: list[list[float]] = [list(t.logprobs) for t in trajs]
        values: list[list[float]] = [[] for _ in trajs]
        kl_tok: list[list[float]] = [[0.0] * len(t.completion_ids) for t in trajs]
        metrics: dict[str, float] = {}
        if need_prox or gae_mode or kl_reward:
            kl_fn = KL_ESTIMATORS.get(ac.kl_estimator)
            with torch.no_grad():
                if need_prox or gae_mode:
                    phase = "recomputing log-probs"
                    for rows, st in self._micro_batches(self.model, trajs, value_head=gae_mode, phase=phase):
                        for j, i in enumerate(rows):
                            n = len(trajs[i].completion_ids)
                            if need_prox:
                                prox[i] = st.logprobs[j, :n].tolist()
                            if st.values is not None:
                                values[i] = st.values[j, :n].tolist()
                if kl_reward and self.ref_model is not None:
                    for rows, ref in self._micro_batches(self.ref_model, trajs):
                        L = ref.logprobs.shape[1]
                        behav = _pad([trajs[i].logprobs for i in rows], L, ref.logprobs.device)
                        kl = kl_fn(behav, ref.logprobs) * ref.mask
                        for j, i in enumerate(rows):
                            kl_tok[i] = kl[j, : len(trajs[i].completion_ids)].tolist()
        # advantages
        seq_rewards = [t.reward.total if t.reward is not None else 0.0 for t in trajs]
        if kl_reward:
            seq_kl = [sum(k) for k in kl_tok]
            metrics["kl_reward"] = sum(seq_kl) / max(len(seq_kl), 1)
        if gae_mode:
            L = max(1, max(len(t.completion_ids) for t in trajs))
            mask_t = _pad(masks, L)
            tok_r = torch.zeros((len(trajs), L))
            for i, t in enumerate(trajs):
                n = len(t.completion_ids)
                if n:
                    tok_r[i, n - 1] = seq_rewards[i]
                    if kl_reward:
                        tok_r[i, :n] -= ac.kl_coef * torch.tensor(kl_tok[i])
            seq_mask = _pad([[1.0] * len(t.completion_ids) for t in trajs], L)
            adv_t, ret_t = gae(tok_r, _pad(values, L), seq_mask, ac.gamma, ac.lam)
            adv_t = whiten(adv_t, mask_t)
            advs = [adv_t[i, : len(t.completion_ids)].tolist() for i, t in enumerate(trajs)]
            rets = [ret_t[i, : len(t.completion_ids)].tolist() for i, t in enumerate(trajs)]
            for t, tok_adv in zip(trajs, advs, strict=True):
                t.advantage = sum(tok_adv) / max(len(tok_adv), 1)
        else:
            r = [x - ac.kl_coef * sum(k) for x, k in zip(seq_rewards, kl_tok, strict=True)] if kl_reward else None
            seq_adv = group_advantages(trajs, ac.advantage, r)
            advs = [[a] * len(t.completion_ids) for a, t in zip(seq_adv, trajs, strict=True)]
            rets = [[] for _ in trajs]
            for t, a in zip(trajs, seq_adv, strict=True):
                t.advantage = a
        out = []
        for i, t in enumerate(trajs):
            out.append(
                Prepared(
                    traj=t,
                    mask=masks[i],
                    old=prox[i] if ac.decoupled else list(t.logprobs),
                    adv=advs[i],
                    old_values=values[i] if gae_mode else None,
                    returns=rets[i] if gae_mode else None,
                )
            )
        if need_prox:
            L = max(1, max(len(t.completion_ids) for t in trajs))
            m = _pad(masks, L)
            prox_t, behav_t = _pad(prox, L), _pad([t.logprobs for t in trajs], L)
            w = importance_weights(prox_t, behav_t, m, ac.importance, ac.is_cap)
            n_tok = m.sum().clamp(min=1.0)
            metrics["behaviour_prox_mismatch"] = float(((prox_t - behav_t).abs() * m).sum() / n_tok)
            metrics["is_weight_mean"] = float((w * m).sum() / n_tok)
            raw = torch.exp(((prox_t - behav_t) * m).clamp(-20, 20))
            metrics["is_truncated_frac"] = float(((raw > ac.is_cap).float() * m).sum() / n_tok)
            if ac.importance != "none":
                for i, pr in enumerate(out):
                    pr.weights = w[i, : len(pr.traj.completion_ids)].tolist()
        return out, metrics

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
        grad_norm = torch.nn.utils.clip_grad_norm_(self.parameters(), self.cfg.train.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.model.eval()
        out["grad_norm"] = float(grad_norm) if math.isfinite(float(grad_norm)) else float("nan")
        out["lr"] = float(self.scheduler.get_last_lr()[0])
        return out

    def accumulate_gradients(self, batch: list[Prepared] | list[Trajectory]) -> dict[str, float]:
        """Zero the gradients, then accumulate the whole batch's loss gradient over
        micro-batches. The result does not depend on micro_batch_size. Trajectories given
        directly are prepared first (advantages from their rewards)."""
        if batch and isinstance(batch[0], Trajectory):
            batch = self.prepare(batch)[0]
        prepared: list[Prepared] = batch  # type: ignore[assignment]
        ac = self.cfg.algo
        loss_fn = POLICY_LOSSES.get(ac.policy_loss)
        kl_fn = KL_ESTIMATORS.get(ac.kl_estimator)
        gae_mode = self.value_head is not None
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        num_tokens = float(sum(sum(p.mask) for p in prepared))
        num_seqs = float(len(prepared))
        norm_len = float(self.cfg.generation.max_new_tokens)
        agg = {"num_tokens": num_tokens, "num_seqs": num_seqs, "norm_len": norm_len}
        sums: dict[str, float] = {}
        weights: dict[str, float] = {}
        # The normalisers above count every row; rows that contribute nothing are then
        # left out of the passes, so the gradient is exactly the whole batch's.
        active = [p for p in prepared if not self._inert(p)]
        skipped = len(prepared) - len(active)
        prepared = active

        def acc(key: str, value: float, weight: float) -> None:
            sums[key] = sums.get(key, 0.0) + value * weight
            weights[key] = weights.get(key, 0.0) + weight

        batch_trajs = [p.traj for p in prepared]
        for rows, st in self._micro_batches(
            self.model, batch_trajs, value_head=gae_mode, entropy_grad=ac.entropy_coef > 0, phase="learning"
        ):
            mb = [prepared[i] for i in rows]
            trajs = [p.traj for p in mb]
            logp, L, dev = st.logprobs, st.logprobs.shape[1], st.logprobs.device
            mask = st.mask * _pad([p.mask for p in mb], L, dev)
            old = _pad([p.old for p in mb], L, dev)
            behav = _pad([t.logprobs for t in trajs], L, dev)
            adv = _pad([p.adv for p in mb], L, dev)
            w = _pad([p.weights or [] for p in mb], L, dev) if mb[0].weights is not None else None
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
                    ref_logp = self._stats(self.ref_model, trajs).logprobs
                kl = kl_fn(logp, ref_logp)
                loss = loss + ac.kl_coef * aggregate(kl, mask, ac.aggregation, **agg)
                acc("kl", float((kl.detach() * mask).sum() / mask.sum().clamp(min=1)), float(mask.sum()))
            if ac.entropy_coef > 0:
                loss = loss - ac.entropy_coef * aggregate(st.entropy, mask, ac.aggregation, **agg)
            if gae_mode and st.values is not None:
                old_v = _pad([p.old_values or [] for p in mb], L, dev)
                ret = _pad([p.returns or [] for p in mb], L, dev)
                v_loss, vm = value_loss(st.values, old_v, ret, mask, clip=ac.value_clip, num_tokens=num_tokens)
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
        if not prepared:  # every row inert: a zero gradient, which Adam still steps with
            for p in self.parameters():
                p.grad = torch.zeros_like(p)
            sums.update(loss_sum=0.0, pg_loss_sum=0.0)
        out = {k: sums[k] if k.endswith("_sum") else sums[k] / weights[k] if weights[k] else 0.0 for k in sums}
        for k in [k for k in out if k.endswith("_sum")]:
            out[k[: -len("_sum")]] = out.pop(k)
        out["rows_skipped_frac"] = skipped / max(num_seqs, 1.0)
        return out

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
        return all(a == 0.0 or m == 0.0 for a, m in zip(p.adv, p.mask, strict=True))

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
                raise ValueError("the checkpoint has no value head, but advantage 'gae' needs one")
            self.value_head.load_state_dict(state["value_head"])
