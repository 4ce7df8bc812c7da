"""Training a reward model on feedback (`rlvr rm train`): a Bradley-Terry loss on pairs,
a pointwise loss on rated outputs (rlvr.feedback.rm_metrics), held-out figures before,
during and after, and early stopping on the held-out loss. A batch's loss is the mean
over its examples, so micro-batching does not change the update. The data:
rlvr.feedback.rm_data.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.config import RunConfig
from rlvr.config.rm import RmConfig
from rlvr.feedback.records import FeedbackError
from rlvr.feedback.rm import forward_scores, save, score_head
from rlvr.feedback.rm_data import EncPair, EncPoint, Example, RmData, batches
from rlvr.feedback.rm_metrics import held_out_loss, length_baseline, measure, pair_loss, point_loss


def trainable(rm: PreTrainedModel, cfg: RunConfig) -> PreTrainedModel:
    """Freeze or wrap the model for `rm.mode`; the head always trains."""
    mode = cfg.rm.mode
    if cfg.model.lora and mode != "lora":
        raise FeedbackError(f"model.lora is set but rm.mode is {mode!r}: set rm.mode=lora, or leave model.lora out")
    if mode == "frozen":
        rm.requires_grad_(False)
    elif mode == "lora":
        from peft import LoraConfig, get_peft_model

        lora = cfg.model.lora
        r, alpha = (lora.r, lora.alpha) if lora else (16, 32)
        targets = lora.target_modules if lora else ["q_proj", "k_proj", "v_proj", "o_proj"]
        dropout = lora.dropout if lora else 0.0
        wrapper = get_peft_model(rm, LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets))
        rm = wrapper.get_base_model()  # type: ignore[assignment]
        object.__setattr__(rm, "_rlvr_peft_wrapper", wrapper)
    score_head(rm).requires_grad_(True)
    return rm


def plain(rm: PreTrainedModel) -> PreTrainedModel:
    """The model to save: LoRA adapters merged in."""
    wrapper = getattr(rm, "_rlvr_peft_wrapper", None)
    return rm if wrapper is None else wrapper.merge_and_unload()


def lr_factor(step: int, total: int, warmup: int, schedule: str) -> float:
    """The learning rate's share of its peak at optimizer step `step` (0-based)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant" or total <= warmup:
        return 1.0
    done = (step - warmup) / max(total - warmup, 1)
    return 0.5 * (1 + math.cos(math.pi * done)) if schedule == "cosine" else 1.0 - done


def _batch_loss(rm: PreTrainedModel, items: Sequence[Example], rm_cfg: RmConfig, pad: int) -> tuple[torch.Tensor, int]:
    """The summed loss of a micro-batch (one forward over its sequences) and how many
    pairs it held whose chosen score came out above the rejected one."""
    pairs = [x for x in items if isinstance(x, EncPair)]
    points = [x for x in items if isinstance(x, EncPoint)]
    seqs = [p.chosen for p in pairs] + [p.rejected for p in pairs] + [p.ids for p in points]
    s = forward_scores(rm, seqs, pad)
    n = len(pairs)
    loss = s.new_zeros(())
    right = 0
    if pairs:
        loss = loss + pair_loss(s[:n], s[n : 2 * n], rm_cfg.center).sum()
        right = int((s[:n] > s[n : 2 * n]).sum())
    if points:
        y = torch.tensor([p.label for p in points], device=s.device)
        loss = loss + rm_cfg.rating_weight * point_loss(s[2 * n :], y).sum()
    return loss, right


@dataclass
class RmResult:
    before: dict[str, float]
    after: dict[str, float]
    best_step: int
    steps: int
    length_baseline: float
    seconds: float  # in training steps (the evaluations not counted)
    tokens: int  # in training steps


def train_rm(
    cfg: RunConfig,
    rm: PreTrainedModel,
    tok: PreTrainedTokenizerBase,
    data: RmData,
    out: Path,
    log: Callable[[dict[str, Any]], None] = lambda row: None,
    plan: Sequence[Sequence[int]] | None = None,
) -> RmResult:
    """Train the reward model `rm` (a causal LM's backbone with a new head:
    rlvr.feedback.rm.from_causal_lm; the caller drops the causal LM, which would otherwise
    hold a second copy of the weights) on `data` and save it to `out`. `plan`: the batches
    (indices into data.train) in order, as one epoch; default: a new order each epoch drawn
    from the seed (`batches`)."""
    rc = cfg.rm
    if rc.threads:
        torch.set_num_threads(rc.threads)
    torch.manual_seed(cfg.seed)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    run = _Run(trainable(rm, cfg), rc, data, pad, log)
    per_epoch = len(plan) if plan is not None else math.ceil(len(data.train) / rc.batch_size)
    epochs = 1 if plan is not None else rc.epochs
    todo = list(plan) if plan is not None else batches(len(data.train), rc.batch_size, rc.epochs, cfg.seed)
    total = min(len(todo), rc.max_steps or len(todo))
    before = run.evaluate(0, {"phase": "before"})
    for i, idx in enumerate(todo[:total]):
        row = run.step([data.train[j] for j in idx], i, total, epoch=i // per_epoch)
        if (rc.eval_every and run.steps % rc.eval_every == 0) or (i + 1) % per_epoch == 0 or i + 1 == total:
            run.evaluate(run.steps, row)
        log(row)
        if run.stop:
            break
    best_step = run.keep_best() if rc.patience else run.steps
    after = measure(run.rm, data.held_pairs, data.held_points, pad)
    baseline = length_baseline(data.train, data.held_pairs)
    log({"step": run.steps, "phase": "after", "best_step": best_step, **{f"held_out/{k}": v for k, v in after.items()}})
    scores = _train_scores(run.rm, data, pad)
    meta = {
        "base_model": cfg.model.name_or_path,
        "mode": rc.mode,
        "seed": cfg.seed,
        "max_length": rc.max_length,
        "steps": run.steps,
        "epochs": epochs,
        "best_step": best_step,
        "held_out": after,
        "held_out_before": before,
        "length_baseline_accuracy": baseline,
        "score_mean": sum(scores) / len(scores),
        "score_std": statistics.stdev(scores) if len(scores) > 1 else 0.0,
        "examples": data.line(),
    }
    save(plain(run.rm), tok, out, meta)
    return RmResult(before, after, best_step, run.steps, baseline, run.train_s, run.tokens)


class _Run:
    """One reward model's training as it goes: the optimizer, the counters, the best
    held-out loss so far and its weights (for early stopping)."""

    def __init__(
        self, rm: PreTrainedModel, rc: RmConfig, data: RmData, pad: int, log: Callable[[dict[str, Any]], None]
    ) -> None:
        self.rm, self.rc, self.data, self.pad, self._log = rm, rc, data, pad, log
        head = [p for p in score_head(rm).parameters() if p.requires_grad]
        body = [p for n, p in rm.named_parameters() if p.requires_grad and not n.startswith("score.")]
        groups: list[dict[str, Any]] = [{"params": head, "lr": rc.head_lr or rc.lr}]
        if body:
            groups.append({"params": body, "lr": rc.lr})
        self.peaks = [g["lr"] for g in groups]
        self.opt = torch.optim.AdamW(groups, weight_decay=rc.weight_decay)
        self.steps, self.tokens, self.train_s, self.stale, self.stop = 0, 0, 0.0, 0, False
        self.best: tuple[float | None, int, dict[str, torch.Tensor] | None] = (None, 0, None)

    def step(self, batch: Sequence[Example], i: int, total: int, epoch: int) -> dict[str, Any]:
        """One optimizer step on `batch` (the i-th of `total`); its log row."""
        rc, opt = self.rc, self.opt
        self.rm.train()
        for g, peak in zip(opt.param_groups, self.peaks, strict=True):
            g["lr"] = peak * lr_factor(i, total, rc.warmup_steps, rc.schedule)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_sum, right = 0.0, 0
        for k in range(0, len(batch), rc.micro_batch_size):
            loss, r = _batch_loss(self.rm, batch[k : k + rc.micro_batch_size], rc, self.pad)
            (loss / len(batch)).backward()  # the batch's mean, however it is split
            loss_sum += float(loss.detach())
            right += r
        params = [p for g in opt.param_groups for p in g["params"]]
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, rc.max_grad_norm))
        opt.step()
        self.train_s += time.perf_counter() - t0
        self.steps += 1
        self.tokens += sum(len(x.chosen) + len(x.rejected) if isinstance(x, EncPair) else len(x.ids) for x in batch)
        row: dict[str, Any] = {
            "step": self.steps,
            "epoch": epoch,
            "loss": loss_sum / len(batch),
            "lr": opt.param_groups[-1]["lr"],
            "grad_norm": grad_norm,
            "tokens_per_s": self.tokens / self.train_s,  # training steps only, not the evaluations
        }
        n_pairs = sum(isinstance(x, EncPair) for x in batch)
        if n_pairs:
            row["pair_accuracy"] = right / n_pairs
        return row

    def evaluate(self, step: int, row: dict[str, Any]) -> dict[str, float]:
        """Held-out figures into `row` (logged here at step 0); tracks the best and the
        evaluations since it (early stopping)."""
        figures = measure(self.rm, self.data.held_pairs, self.data.held_points, self.pad)
        row.update({f"held_out/{k}": v for k, v in figures.items()})
        if step == 0:
            self._log({"step": 0, **row})
        loss = held_out_loss(figures, self.rc.rating_weight)
        if loss is not None and (self.best[0] is None or loss < self.best[0]):
            trained = [(n, p) for n, p in self.rm.named_parameters() if p.requires_grad]
            keep = {n: p.detach().clone() for n, p in trained} if self.rc.patience else None
            self.best, self.stale = (loss, step, keep), 0
        else:
            self.stale += 1
            self.stop = bool(self.rc.patience) and self.stale >= self.rc.patience
        return figures

    def keep_best(self) -> int:
        """Put back the best evaluated weights (step 0's, as drawn, when no step beat
        them); the step they are from."""
        _, step, kept = self.best
        if kept is None:
            return self.steps
        with torch.no_grad():
            named = dict(self.rm.named_parameters())
            for n, v in kept.items():
                named[n].copy_(v)
        return step


@torch.no_grad()
def _train_scores(rm: PreTrainedModel, data: RmData, pad: int, most: int = 256) -> list[float]:
    """Scores of (up to `most`) training outputs: what a reward term normalises by."""
    seqs: list[list[int]] = []
    for x in data.train:
        seqs += [x.chosen, x.rejected] if isinstance(x, EncPair) else [x.ids]
    seqs = seqs[:most]
    rm.eval()
    out: list[float] = []
    for k in range(0, len(seqs), 8):
        out += forward_scores(rm, seqs[k : k + 8], pad).tolist()
    return out
