"""Generator of the bundled reasoning-gym tasks (`data/reasoning_gym.jsonl`) for the
`reasoning` domain.

Eighteen of reasoning-gym's procedural datasets, eight entries each, drawn with a fixed
seed from the pinned package version; each entry is stored whole, so the dataset's own
scorer judges the reply (see `rlvr.envs.reasoning`). When the file is written every
stored answer is checked to score 1.0 and a wrong answer less. `python -m
rlvr.tasks.generators.rggen` rewrites the file byte for byte, on any day.

One dataset reads the clock: `time_intervals` builds its time-of-day entries on
`date.today()` (and dateutil's `datetime.now()`), so they would change every calendar
day. Generation runs with that module's notion of today pinned to `CLOCK_DATE` (the day the file was first written), so
the stored entries, and the test that regenerates them, do not depend on the calendar.

One dataset answers some questions wrongly: `family_relationships` asks "what is A to
B?" and, where B is the parent of A's spouse, answers B's relation to A (mother-in-law,
father-in-law) instead of A's to B (upstream open-thought/reasoning-gym#535, open). Such
entries are stored with the converse, daughter-in-law or son-in-law by A's gender (read
from the dataset's own name lists), and the original kept in the entry's metadata
(`upstream_answer`); the dataset's scorer then judges against the corrected answer.

Difficulty (ours, by dataset): 1 = one-step arithmetic or string work; 2 = a small
algorithm or lookup; 3 = several steps or careful formatting.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any, Self

from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "reasoning_gym.jsonl"
DATASETS = {
    "basic_arithmetic": 1,
    "chain_sum": 1,
    "spell_backward": 1,
    "letter_counting": 1,
    "leg_counting": 1,
    "gcd": 2,
    "lcm": 2,
    "simple_equations": 2,
    "count_bits": 2,
    "calendar_arithmetic": 2,
    "word_sorting": 2,
    "caesar_cipher": 2,
    "fraction_simplification": 3,
    "base_conversion": 3,
    "family_relationships": 3,
    "time_intervals": 3,
    "syllogism": 3,
    "decimal_arithmetic": 3,
}
# The day the time_intervals entries are built on (see the module docstring).
CLOCK_DATE = dt.date(2026, 11, 30)
SUFFIX = "\n\nThink briefly, then give only the final answer inside <answer></answer> tags."


@contextlib.contextmanager
def pinned_today(day: dt.date) -> Iterator[None]:
    """Inside reasoning-gym's time_intervals module (the one dataset of ours that reads the
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


def build(per_dataset: int = 8, seed: int = 17) -> list[Task]:
    import reasoning_gym

    tasks = []
    for name, difficulty in DATASETS.items():
        with pinned_today(CLOCK_DATE):  # entries are drawn lazily: iterate inside
            entries = list(reasoning_gym.create_dataset(name, size=per_dataset, seed=seed))
        for i, entry in enumerate(entries):
            entry = json.loads(json.dumps(entry))  # tuples -> lists: what the file will hold
            if name == "family_relationships":
                entry = in_law_corrected(entry)
            tasks.append(
                Task(
                    id=f"reasoning/{name}/{i}",
                    domain="reasoning",
                    prompt=str(entry["question"]) + SUFFIX,
                    tests={"format": "reasoning_gym", "dataset": name, "entry": entry},
                    reference=f"<answer>{entry['answer']}</answer>",
                    difficulty=difficulty,
                )
            )
    return tasks


PARENT_IN_LAW = ("mother-in-law", "father-in-law")


def in_law_corrected(entry: dict[str, Any]) -> dict[str, Any]:
    """A family_relationships entry whose answer is B's relation to A where the question
    asks A's to B (B a parent of A's spouse), with the answer A's: daughter-in-law or
    son-in-law by A's gender. Other entries are returned as they are."""
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


def verify(tasks: list[Task]) -> None:
    """Each stored answer scores 1.0 through the environment; a wrong one scores less."""
    import rlvr.envs.reasoning  # noqa: F401  (registers the domain)
    from rlvr.envs.base import check_reply

    for t in tasks:
        for reply, want_full in ((str(t.reference), True), ("<answer>no idea</answer>", False)):
            r = check_reply(t, reply)
            assert r.reward is not None
            if (r.reward.total == 1.0) != want_full:
                raise AssertionError(f"{t.id}: {reply!r} scores {r.reward.total}")


def main() -> None:
    tasks = build()
    verify(tasks)
    write_tasks(tasks, DATA)
    print(f"reasoning_gym: {len(tasks)} tasks")


if __name__ == "__main__":
    main()
