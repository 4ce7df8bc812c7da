"""A reward model's losses and held-out figures.

    pair   (chosen c, rejected r):  -log sigmoid(s(c) - s(r))          [+ center (s(c) + s(r))^2]
    point  (output o, label y):     rating_weight * BCE(sigmoid(s(o)), y)

Held-out figures (`measure`): pair accuracy (s(c) > s(r); a tie counts half), the mean
pair loss, calibration (expected calibration error of sigmoid(s(c) - s(r)) as the
probability that c is preferred, over 10 bins, each pair also counted the other way round
so both outcomes occur), and for points the loss and the Brier score. A length-only
baseline (the longer reply wins, or the shorter, whichever the training pairs favour) is
measured on the same held-out pairs: a reward model that does not beat it has learned
length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from rlvr.feedback.rm import forward_scores
from rlvr.feedback.rm_data import EncPair, EncPoint, Example


def pair_loss(s_chosen: torch.Tensor, s_rejected: torch.Tensor, center: float = 0.0) -> torch.Tensor:
    """Bradley-Terry negative log-likelihood per pair, [P]; `center` adds TRL's
    center_rewards penalty, center * (s(c) + s(r))^2, which pulls each pair's mean score
    to 0 without touching their difference."""
    loss = -F.logsigmoid(s_chosen - s_rejected)
    if center:
        loss = loss + center * (s_chosen + s_rejected) ** 2
    return loss


def point_loss(s: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of sigmoid(score) against a 0..1 label, per output, [N]."""
    return F.binary_cross_entropy_with_logits(s, label, reduction="none")


def calibration_error(margins: Sequence[float], bins: int = 10) -> float:
    """Expected calibration error of p = sigmoid(margin) as P(chosen preferred); each pair
    is also counted reversed (1 - p, outcome 0), so the bins see both outcomes."""
    probs = [(1 / (1 + math.exp(-m)), 1.0) for m in margins] + [(1 / (1 + math.exp(m)), 0.0) for m in margins]
    if not probs:
        return float("nan")
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        cell = [(p, y) for p, y in probs if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        if cell:
            conf = sum(p for p, _ in cell) / len(cell)
            acc = sum(y for _, y in cell) / len(cell)
            total += len(cell) / len(probs) * abs(conf - acc)
    return total


def length_baseline(train: Sequence[Example], held: Sequence[EncPair]) -> float:
    """Held-out pair accuracy of 'the longer reply wins' (or the shorter, whichever wins
    more of the training pairs); a tie in length counts half."""

    def wins(pairs: Sequence[EncPair], longer: bool) -> float:
        def one(p: EncPair) -> float:
            d = len(p.chosen) - len(p.rejected)
            return 0.5 if d == 0 else float((d > 0) == longer)

        return sum(one(p) for p in pairs) / len(pairs)

    train_pairs = [x for x in train if isinstance(x, EncPair)]
    longer = wins(train_pairs, True) >= 0.5 if train_pairs else True
    return wins(held, longer) if held else float("nan")


@torch.no_grad()
def measure(
    rm: PreTrainedModel, pairs: Sequence[EncPair], points: Sequence[EncPoint], pad: int, batch: int = 8
) -> dict[str, float]:
    """The held-out figures (see the module docstring); keys absent when there is no such data."""
    was = rm.training
    rm.eval()
    out: dict[str, float] = {}
    margins: list[float] = []
    for k in range(0, len(pairs), batch):
        chunk = pairs[k : k + batch]
        s = forward_scores(rm, [p.chosen for p in chunk] + [p.rejected for p in chunk], pad)
        margins += (s[: len(chunk)] - s[len(chunk) :]).tolist()
    if margins:
        m = torch.tensor(margins)
        out["pair_accuracy"] = float(((m > 0).float() + 0.5 * (m == 0).float()).mean())
        out["pair_loss"] = float(-F.logsigmoid(m).mean())
        out["calibration_error"] = calibration_error(margins)
        out["pairs"] = float(len(margins))
    scores: list[float] = []
    for k in range(0, len(points), batch):
        scores += forward_scores(rm, [p.ids for p in points[k : k + batch]], pad).tolist()
    if scores:
        s, y = torch.tensor(scores), torch.tensor([p.label for p in points])
        out["point_loss"] = float(point_loss(s, y).mean())
        out["point_brier"] = float(((torch.sigmoid(s) - y) ** 2).mean())
        out["points"] = float(len(scores))
    rm.train(was)
    return out


def held_out_loss(figures: dict[str, float], rating_weight: float) -> float | None:
    """What early stopping watches: the pair loss plus the weighted point loss."""
    parts = [figures.get("pair_loss"), rating_weight * figures["point_loss"] if "point_loss" in figures else None]
    kept = [p for p in parts if p is not None]
    return sum(kept) if kept else None
