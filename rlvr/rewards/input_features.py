"""What each drawn input exercises, as the hidden tests' greedy cover reads it
(`rlvr.rewards.selection`, `rlvr.rewards.hidden_tests`): its answer, an edit or a
reordering of an example that changes the answer, lengths and magnitudes past the
examples, the reference's alternates it kills, and its shapes (`rlvr.tasks.shapes`).
Pure functions of their arguments."""

from __future__ import annotations

from typing import Any

from rlvr.tasks.shape_features import shapes

HELD = -2  # the origin of a task's own held-out input in the candidate pool


def features(
    cands: list[tuple[tuple[Any, ...], int, Any]],
    examples: list[tuple[Any, ...]],
    answers: dict[str, str],
    killed: list[frozenset[int]],
) -> list[frozenset[Any]]:
    """What each candidate (args, origin, the reference's value) exercises, as
    `rlvr.rewards.selection` reads it: its answer; `flip` (an edit of example k with
    another answer); `reorder` (example k's elements in another order, another answer);
    `length` of each sequence argument up to one past the examples' longest; `beyond`
    (an integer outside its argument's examples) and `scale` (how many digits past
    them, in steps of four, all past 16 in one); `kill` of alternate j; `shape` (rlvr.tasks.shapes: a square,
    a run of ten, crossed brackets, checksum twins, ...); `held` (one of the task's own
    held-out inputs, origin HELD)."""
    width = len(examples[0]) if examples else 0
    longest = {
        i: max(len(e[i]) for e in examples)
        for i in range(width)
        if all(isinstance(e[i], str | list | tuple) for e in examples)
    }
    ints = {
        i: (min(e[i] for e in examples), max(e[i] for e in examples))
        for i in range(width)
        if all(type(e[i]) is int for e in examples)
    }
    bags = [_bag(e) for e in examples]
    out = []
    for (args, origin, value), its_kills in zip(cands, killed, strict=True):
        answer = repr(value)
        f: set[Any] = {("answer", answer)}
        if 0 <= origin < len(examples) and answers.get(repr(examples[origin]), answer) != answer:
            f.add(("flip", origin))
        bag = _bag(args)
        for k, e in enumerate(examples):
            if bag == bags[k] and args != e and answers.get(repr(e), answer) != answer:
                f.add(("reorder", k))
        for i, top in longest.items():
            if i < len(args) and isinstance(args[i], str | list | tuple):
                f.add(("length", i, min(len(args[i]), top + 1)))
        for i, (lo, hi) in ints.items():
            if i < len(args) and type(args[i]) is int and not lo <= args[i] <= hi:
                f.add(("beyond", i, "below" if args[i] < lo else "above"))
                digits, most = len(str(abs(args[i]))), len(str(max(abs(lo), abs(hi))))
                if digits > most:  # orders of magnitude past the examples, in steps of four digits
                    f.add(("scale", i, min((digits - most - 1) // 4, 4)))  # one step past 16 digits
        f.update(("kill", j) for j in its_kills)
        f.update(shapes(args, examples))
        if origin == HELD:
            f.add(("held", repr(args)))
        out.append(frozenset(f))
    return out


def _bag(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments with each sequence's elements sorted (by repr): equal bags, other order."""
    return tuple(tuple(sorted(map(repr, a))) if isinstance(a, str | list | tuple) else repr(a) for a in args)
