"""Which examples each optimizer step trains on: the whole schedule, fixed by the seed.

Each epoch is a new order drawn from (seed, epoch). The order is cut into windows of
`WINDOW` batches; inside a window the examples are sorted by length before being cut
into batches, so a batch holds examples of similar length (little padding) while which
examples meet in a window stays random; the batches are then shuffled again. The last
batch of an epoch may be smaller. A resumed run recomputes the same schedule and starts
at its step, so the order never depends on where a run was interrupted.
"""

from __future__ import annotations

import random

WINDOW = 16  # batches per length-sorting window


def schedule(lengths: list[int], batch_size: int, *, seed: int, epochs: int, max_steps: int | None) -> list[list[int]]:
    """Every optimizer step's example indices, in order (see the module's docstring)."""
    if not lengths:
        return []
    steps: list[list[int]] = []
    for epoch in range(epochs):
        steps += _epoch(lengths, batch_size, random.Random(f"sft:{seed}:{epoch}"))
        if max_steps is not None and len(steps) >= max_steps:
            break
    return steps[:max_steps] if max_steps is not None else steps


def _epoch(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    order = list(range(len(lengths)))
    rng.shuffle(order)
    span = batch_size * WINDOW
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        window = sorted(order[start : start + span], key=lambda i: (lengths[i], i))
        batches += [window[i : i + batch_size] for i in range(0, len(window), batch_size)]
    rng.shuffle(batches)
    return batches
