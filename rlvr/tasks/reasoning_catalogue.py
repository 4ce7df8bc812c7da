"""reasoning-gym's catalogue as task sources generated at run time: `reasoning_gym:SPEC`,
one domain per dataset (`reasoning/<dataset>`, run by the `reasoning` environment).

    reasoning_gym:all               every usable dataset, 8 entries each, seed 17
    reasoning_gym:gcd,lcm:20        two datasets, 20 entries each
    reasoning_gym:all:4:3           4 entries each, drawn with seed 3

Entries are drawn offline from the installed package with a fixed seed, so a source names
the same tasks on every machine and every day: `time_intervals`, the one dataset that
reads the clock, is built with its notion of today pinned to `CLOCK_DATE`. Each entry is
kept whole in the task's tests, so the dataset's own scorer judges the reply (with the
environment's exact credit, rlvr.envs.reasoning), and its answer, when the dataset stores
one, is the task's reference. Datasets whose replies are checked by a verifier with no
stored answer (`boxnet`, `graph_color`, ...) have tasks without a reference.

`EXCLUDED` names every dataset left out and why; `usable()` is the rest (96 of the 106
in reasoning-gym 0.1.25). The task check (rlvr.tasks.check) quarantines what remains
broken task by task (an `ab` task whose answer is empty; `polynomial_equations` tasks
whose scorer pays an answer sprayed beside the right one). This module imports neither the environments nor the sandbox
(the layering test holds it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from collections.abc import Iterator
from typing import Any, Self

from rlvr.types import Task

PREFIX = "reasoning_gym:"
DEFAULT_SIZE = 8
DEFAULT_SEED = 17
CLOCK_DATE = dt.date(2026, 11, 30)
"""The day the clock-reading dataset (`time_intervals`) is built on."""
SUFFIX = "\n\nThink briefly, then give only the final answer inside <answer></answer> tags."

EXCLUDED: dict[str, str] = {
    "arc_agi": "its scorer compares with tuples in the entry, which a task (JSON) keeps as lists: answers score 0.05",
    "rearc": "its scorer compares with tuples in the entry, which a task (JSON) keeps as lists: answers score 0.05",
    "knights_knaves": "its scorer finds the right roles inside a longer answer: a wrong answer beside the right one "
    "earns full marks (the task check's spray probe, on all 8 tasks drawn)",
    "composite": "a mixture of other datasets that must be configured; the datasets themselves are listed",
    "game_of_life_halting": "its scorer gives full marks to any answer ('no idea' scores 1.0)",
    "isomorphic_strings": "its entries depend on the interpreter's hash seed (set order): not the same tasks twice",
    "knight_swap": "its entries depend on the interpreter's hash seed (set order): not the same tasks twice",
    "polynomial_multiplication": "its entries depend on the interpreter's hash seed: not the same tasks twice",
    "ransom_note": "its entries depend on the interpreter's hash seed (set order): not the same tasks twice",
    "word_ladder": "its entries depend on the interpreter's hash seed (set order): not the same tasks twice",
}
"""Datasets of the catalogue left out, each with why (checked in
tests/integration/test_reasoning_catalogue.py against the installed package)."""

DIFFICULTY: dict[str, int] = {
    **dict.fromkeys(
        ["basic_arithmetic", "chain_sum", "spell_backward", "letter_counting", "leg_counting", "coin_flip"], 1
    ),
    **dict.fromkeys(
        [
            "fraction_simplification",
            "base_conversion",
            "family_relationships",
            "time_intervals",
            "syllogism",
            "decimal_arithmetic",
            "arc_1d",
            "arc_agi",
            "rearc",
            "sudoku",
            "zebra_puzzles",
            "sokoban",
            "tsumego",
            "cryptarithm",
            "futoshiki",
            "knights_knaves",
            "rubiks_cube",
            "rush_hour",
            "boxnet",
            "codeio",
            "intermediate_integration",
        ],
        3,
    ),
}
"""Our difficulty by dataset (1 one step, 2 a small algorithm or lookup, 3 several steps
or a search); datasets not named are 2."""


def catalogue() -> list[str]:
    """Every dataset name reasoning-gym registers, sorted."""
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS)


def usable() -> list[str]:
    """The catalogue less `EXCLUDED`."""
    return [n for n in catalogue() if n not in EXCLUDED]


@contextlib.contextmanager
def pinned_today(day: dt.date) -> Iterator[None]:
    """Inside reasoning-gym's time_intervals module (the one dataset that reads the
    clock), today is `day`: `date.today()` answers it, and dateutil's parser, which fills
    a bare time of day with today's date from `datetime.now()`, fills it with `day`.
    Everything else keeps the real clock."""
    from unittest import mock

    from dateutil import parser as real_parser
    from reasoning_gym.arithmetic import time_intervals

    class _PinnedDate(dt.date):
        @classmethod
        def today(cls) -> Self:
            return cls.fromordinal(day.toordinal())

    class _PinnedParser:
        @staticmethod
        def parse(timestr: str, **kwargs: Any) -> dt.datetime:
            kwargs.setdefault("default", dt.datetime.combine(day, dt.time()))
            return real_parser.parse(timestr, **kwargs)

    with (
        mock.patch.object(time_intervals, "date", _PinnedDate),
        mock.patch.object(time_intervals, "parser", _PinnedParser),
    ):
        yield


PARENT_IN_LAW = ("mother-in-law", "father-in-law")


def in_law_corrected(entry: dict[str, Any]) -> dict[str, Any]:
    """A family_relationships entry whose answer is B's relation to A where the question
    asks A's to B (B a parent of A's spouse; upstream open-thought/reasoning-gym#535),
    with the answer A's: daughter-in-law or son-in-law by A's gender, the original kept
    as metadata.upstream_answer. Other entries are returned as they are."""
    from reasoning_gym.graphs.family_relationships import FamilyRelationshipsConfig

    meta = entry.get("metadata", {})
    if entry.get("answer") not in PARENT_IN_LAW or meta.get("relationship") != entry["answer"]:
        return entry
    names = FamilyRelationshipsConfig()
    person = meta.get("person1")
    if person in names.female_names and person not in names.male_names:
        right = "daughter-in-law"
    elif person in names.male_names and person not in names.female_names:
        right = "son-in-law"
    else:
        raise ValueError(f"family_relationships: the gender of '{person}' is not known; cannot correct the answer")
    meta = {**meta, "relationship": right, "upstream_answer": entry["answer"]}
    return {**entry, "answer": right, "metadata": meta}


def entries(name: str, size: int, seed: int) -> list[dict[str, Any]]:
    """`size` entries of one dataset drawn with `seed`, as plain JSON data (tuples become
    lists), the family_relationships answers corrected."""
    import reasoning_gym

    # entries are drawn lazily: iterate inside; some generators print progress (bf's dots)
    with pinned_today(CLOCK_DATE), contextlib.redirect_stdout(io.StringIO()):
        drawn = list(reasoning_gym.create_dataset(name, size=size, seed=seed))
    out = [json.loads(json.dumps(e, default=str)) for e in drawn]
    return [in_law_corrected(e) for e in out] if name == "family_relationships" else out


def task_of(
    name: str, i: int, entry: dict[str, Any], *, domain: str, id_prefix: str, difficulty: int | None = None
) -> Task:
    """One reasoning task: the entry's question with the answer-format suffix, the entry
    whole in its tests, its answer (when stored) as the reference; difficulty by
    `DIFFICULTY` unless given."""
    answer = entry.get("answer")
    return Task(
        id=f"{id_prefix}/{name}/{i}",
        domain=domain,
        prompt=str(entry["question"]) + SUFFIX,
        tests={"format": "reasoning_gym", "dataset": name, "entry": entry},
        reference=f"<answer>{answer}</answer>" if answer is not None else None,
        difficulty=DIFFICULTY.get(name, 2) if difficulty is None else difficulty,
    )


def parse_spec(spec: str) -> tuple[list[str], int, int]:
    """(datasets, entries per dataset, seed) of `reasoning_gym:`'s SPEC; ValueError
    naming the problem."""
    parts = spec.split(":")
    if len(parts) > 3 or not parts[0].strip():
        raise ValueError(f"'{PREFIX}{spec}': expected {PREFIX}NAMES[:SIZE[:SEED]] (NAMES: all or a,b,...)")
    names = usable() if parts[0].strip() == "all" else [n.strip() for n in parts[0].split(",") if n.strip()]
    known = set(catalogue())
    for n in names:
        if n in EXCLUDED:
            raise ValueError(f"'{PREFIX}{spec}': dataset '{n}' is left out: {EXCLUDED[n]}")
        if n not in known:
            raise ValueError(
                f"'{PREFIX}{spec}': no reasoning-gym dataset '{n}' ({len(known)} in the installed package)"
            )
    try:
        size = int(parts[1]) if len(parts) > 1 else DEFAULT_SIZE
        seed = int(parts[2]) if len(parts) > 2 else DEFAULT_SEED
    except ValueError:
        raise ValueError(f"'{PREFIX}{spec}': SIZE and SEED must be integers") from None
    if not 1 <= size <= 10_000:
        raise ValueError(f"'{PREFIX}{spec}': SIZE {size} is not within 1..10000")
    return names, size, seed


def catalogue_records(source: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(location, task record) of every task of a `reasoning_gym:` source."""
    names, size, seed = parse_spec(source[len(PREFIX) :])
    for name in names:
        for i, entry in enumerate(entries(name, size, seed)):
            task = task_of(name, i, entry, domain=f"reasoning/{name}", id_prefix=f"rg{seed}")
            yield f"{source}:{name}#{i}", task.to_dict()
