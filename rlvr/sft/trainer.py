"""The supervised update: the mean negative log-likelihood of the replies' tokens.

One optimizer step takes a batch of encoded examples, runs it in micro-batches of rows
sorted by length, and accumulates the gradient of

    loss = - sum over the batch's trained tokens of log p(token | before) / (trained tokens in the batch)

so the update is that of the whole batch whatever the micro-batch size (a test holds
8 x 1 equal to 1 x 8). Log-probs come from the learner's chunked, fused output head
(`rlvr.learner.logprobs.token_stats`): the [tokens, vocabulary] logits never exist for
a whole micro-batch. AdamW, a linear warm-up, then a constant, cosine or linear learning
rate; the gradient is clipped to sft.max_grad_norm.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from transformers import PreTrainedModel

from rlvr.config import SftConfig
from rlvr.learner.logprobs import token_stats
from rlvr.sft.encode import Encoded


def lr_factor(step: int, *, warmup: int, total: int, schedule: str) -> float:
    """The learning rate's multiplier for optimizer step `step` (0-based): a linear
    warm-up over `warmup` steps, then 1 (constant) or a decay that reaches 0 one step
    after the last (cosine, linear), so every step learns something."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant" or total <= warmup:
        return 1.0
    progress = (step - warmup) / (total - warmup)
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "linear":
        return 1.0 - progress
    raise ValueError(f"sft.schedule: unknown schedule {schedule!r}")


class SftTrainer:
    def __init__(
        self, model: PreTrainedModel, cfg: SftConfig, pad_id: int, total_steps: int, *, chunk: int = 1024
    ) -> None:
        self.model, self.cfg, self.pad_id, self.chunk = model, cfg, pad_id, chunk
        self.total_steps = total_steps
        self.steps_done = 0
        self.optimizer = torch.optim.AdamW(self.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda s: lr_factor(s, warmup=cfg.warmup_steps, total=total_steps, schedule=cfg.schedule),
        )
        self.on_progress: Callable[[str, int, int], None] | None = None  # (phase, done, total)

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def step(self, batch: list[Encoded]) -> dict[str, float]:
        """One optimizer step on `batch`: loss (mean NLL per trained token), trained
        tokens, grad norm before clipping, the learning rate the step used."""
        if not batch:
            raise ValueError("an empty batch")
        lr = float(self.scheduler.get_last_lr()[0])
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        tokens = sum(e.trained for e in batch)
        nll = entropy = 0.0
        micro = _micro_batches(batch, self.cfg.micro_batch_size)
        for i, rows in enumerate(micro):
            if self.on_progress is not None:
                self.on_progress("learning", i, len(micro))
            total, ent = self._nll(rows)  # summed over the rows' trained tokens
            (total / max(tokens, 1)).backward()
            nll += float(total.detach())
            entropy += ent
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters(), self.cfg.max_grad_norm))
        self.optimizer.step()
        self.scheduler.step()
        self.model.eval()
        self.steps_done += 1
        return {
            "loss": nll / max(tokens, 1),
            "entropy": entropy / max(tokens, 1),  # mean over the trained tokens, of the policy before the step
            "tokens": float(tokens),
            "examples": float(len(batch)),
            "grad_norm": grad_norm if math.isfinite(grad_norm) else float("nan"),
            "lr": lr,
        }

    @torch.no_grad()
    def mean_loss(self, examples: list[Encoded]) -> float:
        """Mean NLL per trained token over `examples` (no update): the held-out loss."""
        if not examples:
            return float("nan")
        was = self.model.training
        self.model.eval()
        total, tokens = 0.0, 0
        for rows in _micro_batches(examples, self.cfg.micro_batch_size):
            total += float(self._nll(rows)[0])
            tokens += sum(e.trained for e in rows)
        self.model.train(was)
        return total / max(tokens, 1)

    def _nll(self, rows: list[Encoded]) -> tuple[torch.Tensor, float]:
        """The summed negative log-likelihood of the rows' trained tokens (a scalar), and
        their summed entropy (a number)."""
        prompts = [e.prompt_ids for e in rows]
        share = len({tuple(p) for p in prompts}) < len(prompts)  # samples of one task: one prompt pass
        st = token_stats(
            self.model,
            prompts,
            [e.completion_ids for e in rows],
            pad_id=self.pad_id,
            chunk=self.chunk,
            share_prompts=share,
        )
        mask = torch.zeros_like(st.logprobs)  # [B, L]
        for r, e in enumerate(rows):
            mask[r, : len(e.mask)] = torch.tensor(e.mask, dtype=mask.dtype)
        return -(st.logprobs * mask).sum(), float((st.entropy.detach() * mask).sum())

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "steps_done": self.steps_done,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.steps_done = int(state["steps_done"])


def _micro_batches(rows: list[Encoded], size: int) -> list[list[Encoded]]:
    """Rows sorted by length (longest first: the largest pass meets the memory peak at
    once), then cut into micro-batches of `size`, so that each carries little padding."""
    order = sorted(rows, key=lambda e: -e.length)
    return [order[i : i + size] for i in range(0, len(order), size)]
