"""One policy update from a batch of scored trajectories.

The learner owns the optimizer and the (optional) frozen reference model. It turns
rewards into group-relative advantages, recomputes log-probs with gradients, and applies
the configured policy loss (+ KL) over micro-batches whose gradients accumulate to exactly
the whole batch's gradient (global normalisers are passed to every micro-batch).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from transformers import PreTrainedModel

from rlvr.algos import ADVANTAGES, KL_ESTIMATORS, POLICY_LOSSES, aggregate
from rlvr.config import RunConfig
from rlvr.train.logprobs import sequence_logprobs
from rlvr.types import Trajectory


def group_advantages(trajs: list[Trajectory], estimator: str) -> list[float]:
    """Advantages per trajectory, computed within groups (consecutive equal group_id)."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(trajs):
        groups.setdefault(t.group_id, []).append(i)
    sizes = {len(v) for v in groups.values()}
    if len(sizes) != 1:
        raise ValueError(f"groups must all have the same size, got sizes {sorted(sizes)}")
    index = list(groups.values())  # [B][G]
    totals = [t.reward.total if t.reward is not None else 0.0 for t in trajs]
    rewards = torch.tensor([[totals[i] for i in g] for g in index])  # [B, G]
    adv = ADVANTAGES.get(estimator)(rewards)  # [B, G]
    out = [0.0] * len(trajs)
    for gi, g in enumerate(index):
        for j, i in enumerate(g):
            out[i] = float(adv[gi, j])
    return out


class Learner:
    def __init__(self, model: PreTrainedModel, cfg: RunConfig, pad_id: int) -> None:
        self.model = model
        self.cfg = cfg
        self.pad_id = pad_id
        self.version = 0
        tc = cfg.train
        self.optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad], lr=tc.lr, weight_decay=tc.weight_decay
        )
        warm = max(tc.warmup_steps, 0)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0
        )
        self.ref_model: PreTrainedModel | None = None
        if cfg.algo.kl_coef > 0:
            self.ref_model = copy.deepcopy(model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)

    def _logprobs(
        self, model: PreTrainedModel, trajs: list[Trajectory]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return sequence_logprobs(
            model,
            [t.prompt_ids for t in trajs],
            [t.completion_ids for t in trajs],
            pad_id=self.pad_id,
            temperature=self.cfg.generation.temperature,
            chunk=self.cfg.train.logprob_chunk,
        )

    def step(self, trajs: list[Trajectory]) -> dict[str, float]:
        """Advantages, then `updates_per_batch` optimizer steps over the batch."""
        usable = [t for t in trajs if t.status == "ok" and t.completion_ids]
        if not usable:
            return {"skipped": 1.0}
        advs = group_advantages(usable, self.cfg.algo.advantage)
        for t, a in zip(usable, advs, strict=True):
            t.advantage = a
        metrics: dict[str, float] = {}
        for _ in range(self.cfg.algo.updates_per_batch):
            metrics = self._update(usable)
        self.version += 1
        metrics["policy_version"] = float(self.version)
        return metrics

    def _update(self, trajs: list[Trajectory]) -> dict[str, float]:
        out = self.accumulate_gradients(trajs)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.train.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.model.eval()
        out["grad_norm"] = float(grad_norm) if math.isfinite(float(grad_norm)) else float("nan")
        out["lr"] = float(self.scheduler.get_last_lr()[0])
        return out

    def accumulate_gradients(self, trajs: list[Trajectory]) -> dict[str, float]:
        """Zero the gradients, then accumulate the whole batch's loss gradient over
        micro-batches. The result does not depend on micro_batch_size."""
        ac, tc = self.cfg.algo, self.cfg.train
        loss_fn = POLICY_LOSSES.get(ac.policy_loss)
        kl_fn = KL_ESTIMATORS.get(ac.kl_estimator)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        num_tokens = float(sum(sum(t.loss_mask) for t in trajs))
        num_seqs = float(len(trajs))
        sums: dict[str, float] = {}
        weights: dict[str, float] = {}

        def acc(key: str, value: float, weight: float) -> None:
            sums[key] = sums.get(key, 0.0) + value * weight
            weights[key] = weights.get(key, 0.0) + weight

        for s in range(0, len(trajs), tc.micro_batch_size):
            mb = trajs[s : s + tc.micro_batch_size]
            logp, ent, mask = self._logprobs(self.model, mb)  # [b, L] each
            L = logp.shape[1]
            old = torch.tensor([t.logprobs + [0.0] * (L - len(t.logprobs)) for t in mb])  # [b, L]
            lmask = torch.tensor([t.loss_mask + [0] * (L - len(t.loss_mask)) for t in mb], dtype=torch.float32)
            mask = mask * lmask
            adv = torch.tensor([t.advantage or 0.0 for t in mb])  # [b]
            loss, m = loss_fn(
                logp,
                old,
                adv,
                mask,
                clip_low=ac.clip_low,
                clip_high=ac.clip_high,
                aggregation=ac.aggregation,
                num_tokens=num_tokens,
                num_seqs=num_seqs,
                norm_len=float(self.cfg.generation.max_new_tokens),
            )
            pg_loss = float(loss.detach())
            if self.ref_model is not None:
                with torch.no_grad():
                    ref_logp, _, _ = self._logprobs(self.ref_model, mb)
                kl = kl_fn(logp, ref_logp)
                kl_loss = aggregate(
                    kl,
                    mask,
                    ac.aggregation,
                    num_tokens=num_tokens,
                    num_seqs=num_seqs,
                    norm_len=float(self.cfg.generation.max_new_tokens),
                )
                loss = loss + ac.kl_coef * kl_loss
                acc("kl", float((kl.detach() * mask).sum() / mask.sum().clamp(min=1)), float(mask.sum()))
            loss.backward()
            n_tok = float(mask.sum())
            acc("pg_loss_sum", pg_loss, 1.0)
            acc("loss_sum", float(loss.detach()), 1.0)
            acc("entropy", float((ent * mask).sum() / mask.sum().clamp(min=1)), n_tok)
            acc("logprob_mismatch", float(((logp.detach() - old).abs() * mask).sum() / mask.sum().clamp(min=1)), n_tok)
            for k, v in m.items():
                acc(k, v, n_tok)
        out = {k: sums[k] / weights[k] if not k.endswith("_sum") else sums[k] for k in sums}
        out["pg_loss"] = out.pop("pg_loss_sum")
        out["loss"] = out.pop("loss_sum")
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "version": self.version,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.version = int(state["version"])
