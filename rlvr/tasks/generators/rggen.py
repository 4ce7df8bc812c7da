"""Generator of the bundled reasoning-gym tasks (`data/reasoning_gym.jsonl`) for the
`reasoning` domain.

Eighteen of reasoning-gym's procedural datasets, eight entries each, drawn with a fixed
seed from the pinned package version; each entry is stored whole, so the dataset's own
scorer judges the reply (see `rlvr.envs.reasoning`). When the file is written every
stored answer is checked to score 1.0 and a wrong answer less. `python -m
rlvr.tasks.generators.rggen` rewrites the file byte for byte, on any day.

Entries are drawn as the run-time catalogue draws them (rlvr.tasks.reasoning_catalogue):
`time_intervals`, which reads the clock, is built with today pinned to `CLOCK_DATE` (the
day the file was first written), so the stored entries, and the test that regenerates
them, do not depend on the calendar; `family_relationships` answers some questions with
the converse relation (upstream open-thought/reasoning-gym#535, open), stored corrected
with the original kept in the entry's metadata (`upstream_answer`).

Difficulty (ours, by dataset): 1 = one-step arithmetic or string work; 2 = a small
algorithm or lookup; 3 = several steps or careful formatting.
"""

from __future__ import annotations

from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.tasks.reasoning_catalogue import (  # noqa: F401  (CLOCK_DATE, pinned_today, in_law_corrected: read by tests)
    CLOCK_DATE,
    entries,
    in_law_corrected,
    pinned_today,
    task_of,
)
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


def build(per_dataset: int = 8, seed: int = 17) -> list[Task]:
    return [
        task_of(name, i, entry, domain="reasoning", id_prefix="reasoning", difficulty=difficulty)
        for name, difficulty in DATASETS.items()
        for i, entry in enumerate(entries(name, per_dataset, seed))
    ]


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
