"""A run's own groups as feedback: each preference row of a trace store (a pair of
replies to one prompt whose rewards differ, the higher one never hack-flagged:
rlvr.trace.export.group_pairs) becomes a `preference` record from source `run:<name>`,
given by `reward`. The rows reach this module as plain dicts (the CLI reads the store),
so feedback does not import the trace package.

Only single-reply episodes become records: a record judges one output, and two
multi-turn episodes share no prompt past their first turn. The others are counted.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from rlvr.feedback.records import FeedbackRecord, parse_record


def run_records(
    rows: Iterable[Mapping[str, Any]], run: str, when: datetime, skipped: Counter[str] | None = None
) -> list[FeedbackRecord]:
    """Preference records from a run's preference rows. `when` is the import's time (a
    trace has none per pair); the id is the pair's place in the run (run, step, group,
    samples), so importing the same run again adds nothing."""
    skipped = skipped if skipped is not None else Counter()
    out = []
    for row in rows:
        chosen, rejected = row["chosen"], row["rejected"]
        if len(chosen) != 1 or len(rejected) != 1:
            skipped["multi-turn episodes"] += 1
            continue
        place = f"{run}\x1f{row['step']}\x1f{row['group_id']}\x1f{row['chosen_sample']}\x1f{row['rejected_sample']}"
        obj = {
            "id": "run-" + hashlib.sha256(place.encode()).hexdigest()[:24],
            "kind": "preference",
            "prompt": [{"role": m["role"], "content": m["content"]} for m in row["prompt"]],
            "output": chosen[0]["content"],
            "output_b": rejected[0]["content"],
            "preferred": "a",
            "source": f"run:{run}",
            "time": when.isoformat(),
            "who": "reward",
            "task_id": row["task_id"],
            "meta": {
                "step": row["step"],
                "group_id": row["group_id"],
                "margin": row["margin"],
                "domain": row["domain"],
            },
        }
        if not obj["output"].strip() or not obj["output_b"].strip() or obj["output"] == obj["output_b"]:
            skipped["empty or identical replies"] += 1
            continue
        out.append(parse_record(obj))
    return out
