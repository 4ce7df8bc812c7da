"""Feedback turned into a reward model's training data: the records of stores and files,
split by group into training and held-out examples (rlvr.feedback.examples), tokenized
(pairs as chosen/rejected token ids, rated outputs as ids and a 0..1 label), and the
order of the training batches."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from transformers import PreTrainedTokenizerBase

from rlvr.config.rm import RmConfig
from rlvr.feedback.examples import Pair, Point, held_out_groups, split, to_examples
from rlvr.feedback.records import FeedbackError, FeedbackRecord, read_file
from rlvr.feedback.rm import encode
from rlvr.feedback.store import open_store


@dataclass(frozen=True)
class EncPair:
    chosen: list[int]
    rejected: list[int]


@dataclass(frozen=True)
class EncPoint:
    ids: list[int]
    label: float


Example = EncPair | EncPoint


@dataclass
class RmData:
    train: list[Example]
    held_pairs: list[EncPair]
    held_points: list[EncPoint]
    groups: tuple[int, int]  # (training groups, held-out groups)
    skipped: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        n_pairs = sum(isinstance(x, EncPair) for x in self.train)
        text = (
            f"{n_pairs} pairs and {len(self.train) - n_pairs} rated outputs to train on "
            f"({self.groups[0]} groups); held out: {len(self.held_pairs)} pairs, "
            f"{len(self.held_points)} rated outputs ({self.groups[1]} groups)"
        )
        if self.skipped:
            text += "; left out: " + ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return text


def load_feedback(sources: Sequence[str]) -> list[FeedbackRecord]:
    """Every record of the named stores and .jsonl files, each id once (first seen)."""
    if not sources:
        raise FeedbackError("rm.feedback is empty: name a feedback store or a .jsonl file")
    out: dict[str, FeedbackRecord] = {}
    for src in sources:
        records = read_file(src) if src.endswith(".jsonl") else open_store(src).records()
        for r in records:
            out.setdefault(r.id, r)
    return list(out.values())


def prepare(records: Sequence[FeedbackRecord], rm_cfg: RmConfig, tok: PreTrainedTokenizerBase) -> RmData:
    pairs, points, skipped = to_examples(records, rm_cfg.split_by)
    if not pairs and not points:
        raise FeedbackError(f"no pairs or rated outputs in {len(records)} feedback records")
    groups = {p.group for p in pairs} | {p.group for p in points}
    held = held_out_groups(groups, rm_cfg.held_out)
    train_pairs, held_pairs = split(pairs, held)
    train_points, held_points = split(points, held)
    n = rm_cfg.max_length

    def enc_pairs(ps: list[Pair]) -> list[EncPair]:
        out = []
        for p in ps:
            c, r = encode(tok, p.prompt, p.chosen, n), encode(tok, p.prompt, p.rejected, n)
            if c is None or r is None:
                skipped[f"over max_length ({n} tokens)"] += 1
            else:
                out.append(EncPair(c, r))
        return out

    def enc_points(ps: list[Point]) -> list[EncPoint]:
        out = []
        for p in ps:
            ids = encode(tok, p.prompt, p.output, n)
            if ids is None:
                skipped[f"over max_length ({n} tokens)"] += 1
            else:
                out.append(EncPoint(ids, p.label))
        return out

    train: list[Example] = [*enc_pairs(train_pairs), *enc_points(train_points)]
    if not train:
        raise FeedbackError("no training examples left after the held-out split and max_length")
    return RmData(train, enc_pairs(held_pairs), enc_points(held_points), (len(groups) - len(held), len(held)), skipped)


def batches(n: int, batch_size: int, epochs: int, seed: int) -> list[list[int]]:
    """The training examples' indices, batch by batch: each epoch a new order drawn from
    the seed (the last batch of an epoch may be short)."""
    rng = random.Random(seed)
    out = []
    for _ in range(epochs):
        order = list(range(n))
        rng.shuffle(order)
        out += [order[k : k + batch_size] for k in range(0, n, batch_size)]
    return out
