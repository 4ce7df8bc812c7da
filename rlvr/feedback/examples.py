"""From feedback records to what a reward model learns from: pairs (a preferred output
and a worse one for the same prompt, for the Bradley-Terry loss) and points (one
output with a 0..1 label, for the pointwise loss), and the held-out split.

    preference  a/b        -> a pair (tie: left out, counted)
    edited                 -> a pair: the edited text over the original
    rating, thumbs,
    accepted, rejected     -> a point with the record's label (rating: its place on its scale)

The split is by group, never by pair: every example of one task (or family, or
conversation: `split_by`) is on the same side, chosen by a hash of the group's name, so
a reward model is measured on prompts it never saw and the split does not move when
records are added. A record without the named key is grouped by its prompt's text.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rlvr.feedback.records import FeedbackError, FeedbackRecord, Message

SPLIT_KEYS = ("task", "family", "conversation", "prompt")


@dataclass(frozen=True)
class Pair:
    prompt: tuple[Message, ...]
    chosen: str
    rejected: str
    group: str
    record: str  # the record's id


@dataclass(frozen=True)
class Point:
    prompt: tuple[Message, ...]
    output: str
    label: float  # 0..1
    group: str
    record: str


def group_of(rec: FeedbackRecord, split_by: str) -> str:
    """The name a record is split by: its task, family or conversation, else its prompt."""
    if split_by not in SPLIT_KEYS:
        raise FeedbackError(f"split_by must be one of {', '.join(SPLIT_KEYS)}, got {split_by!r}")
    key = {"task": rec.task_id, "family": rec.family, "conversation": rec.conversation}.get(split_by)
    if key:
        return f"{split_by}:{key}"
    text = "\x1e".join(f"{r}\x1f{c}" for r, c in rec.prompt)
    return "prompt:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def to_examples(
    records: Iterable[FeedbackRecord], split_by: str = "task"
) -> tuple[list[Pair], list[Point], Counter[str]]:
    """(pairs, points, what was left out and why)."""
    pairs: list[Pair] = []
    points: list[Point] = []
    skipped: Counter[str] = Counter()
    for r in records:
        g = group_of(r, split_by)
        if r.kind == "preference":
            if r.preferred == "tie":
                skipped["ties"] += 1
                continue
            assert r.output_b is not None
            good, bad = (r.output, r.output_b) if r.preferred == "a" else (r.output_b, r.output)
            if good == bad:
                skipped["preferences between identical outputs"] += 1
                continue
            pairs.append(Pair(r.prompt, good, bad, g, r.id))
        elif r.kind == "edited":
            assert r.edited is not None
            pairs.append(Pair(r.prompt, r.edited, r.output, g, r.id))
        else:
            label = r.label()
            assert label is not None
            points.append(Point(r.prompt, r.output, label, g, r.id))
    return pairs, points, skipped


T = TypeVar("T", Pair, Point)


def held_out_groups(groups: Iterable[str], share: float) -> set[str]:
    """The groups kept out: each by a hash of its name below `share`; at least one when
    share > 0 and there are two or more groups, never all of them."""
    names = sorted(set(groups))
    if share <= 0 or len(names) < 2:
        return set()
    rank = {g: int(hashlib.sha256(g.encode()).hexdigest()[:12], 16) / 16**12 for g in names}
    out = {g for g in names if rank[g] < share}
    if not out:
        out = {min(names, key=lambda g: rank[g])}
    if len(out) == len(names):
        out.discard(max(names, key=lambda g: rank[g]))
    return out


def split(items: Sequence[T], held: set[str]) -> tuple[list[T], list[T]]:
    """(training, held-out) by the items' groups."""
    return [x for x in items if x.group not in held], [x for x in items if x.group in held]
