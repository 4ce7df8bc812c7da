"""Feedback records, the store, the examples a reward model learns from, and the pure
parts of reward-model training (losses, calibration, the length baseline, the schedule),
against hand-worked cases."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
import torch

from rlvr.feedback.examples import group_of, held_out_groups, split, to_examples
from rlvr.feedback.records import FeedbackError, iter_lines, parse_record, read_file
from rlvr.feedback.runs import run_records
from rlvr.feedback.store import FeedbackStore, open_store

BASE = {"prompt": "Write add(a, b).", "output": "def add(a, b): return a + b", "source": "review", "who": "r1"}
T = "2026-11-30T14:02:00Z"


def rec(**kw: object) -> dict[str, object]:
    return {**BASE, "time": T, **kw}


# ---- records ----------------------------------------------------------------------------


def test_each_kind_parses_with_its_label() -> None:
    assert parse_record(rec(kind="rating", rating=4, scale=[1, 5])).label() == 0.75  # (4-1)/(5-1)
    assert parse_record(rec(kind="rating", rating=2)).label() == 0.25  # default scale [1, 5]
    assert parse_record(rec(kind="thumbs", thumbs="up")).label() == 1.0
    assert parse_record(rec(kind="thumbs", thumbs="down")).label() == 0.0
    assert parse_record(rec(kind="accepted")).label() == 1.0
    assert parse_record(rec(kind="rejected")).label() == 0.0
    assert parse_record(rec(kind="preference", output_b="x", preferred="b")).label() is None
    assert parse_record(rec(kind="edited", edited="def add(a, b):\n    return a + b")).label() is None


def test_time_is_utc_and_prompt_string_is_a_user_message() -> None:
    r = parse_record(rec(kind="accepted", time="2026-11-30T15:02:00+01:00"))
    assert r.time == datetime(2026, 11, 30, 14, 2, tzinfo=UTC)
    assert r.prompt == (("user", "Write add(a, b)."),)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"kind": "like"}, "'kind' must be one of"),
        ({"kind": "rating", "rating": 6}, "outside its scale [1, 5]"),
        ({"kind": "rating", "rating": 3, "scale": [5, 1]}, "low must be below high"),
        ({"kind": "rating", "rating": True}, "'rating' must be a finite number"),
        ({"kind": "rating"}, "needs 'rating'"),
        ({"kind": "thumbs", "thumbs": "sideways"}, "'thumbs' must be 'up' or 'down'"),
        ({"kind": "preference", "output_b": "x", "preferred": "c"}, "'preferred' must be"),
        ({"kind": "preference", "output_b": "x", "preffered": "a"}, "unknown key(s) preffered"),
        ({"kind": "accepted", "edited": "x"}, "unknown key(s) edited for a 'accepted' record"),
        ({"kind": "edited", "edited": BASE["output"]}, "record it as accepted"),
        ({"kind": "accepted", "time": "2026-11-30T14:02:00"}, "has no timezone"),
        ({"kind": "accepted", "time": "yesterday"}, "is not ISO 8601"),
        ({"kind": "accepted", "prompt": ""}, "'prompt' is empty"),
        (
            {"kind": "accepted", "prompt": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
            "ends with an assistant message",
        ),
        ({"kind": "accepted", "prompt": [{"role": "human", "content": "a"}]}, "role must be one of"),
        ({"kind": "accepted", "schema": 2}, "schema 2 is not one"),
        ({"kind": "accepted", "output": 3}, "'output' must be a string"),
        ({"kind": "accepted", "meta": [1]}, "'meta' must be an object"),
    ],
)
def test_bad_records_name_their_problem(change: dict[str, object], problem: str) -> None:
    with pytest.raises(FeedbackError) as e:
        parse_record(rec(**change))
    assert problem in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_common_keys_are_named() -> None:
    with pytest.raises(FeedbackError, match="missing source, who"):
        parse_record({"kind": "accepted", "prompt": "p", "output": "o", "time": T})


def test_id_is_a_content_hash_unless_given() -> None:
    a = parse_record(rec(kind="accepted"))
    b = parse_record(rec(kind="accepted"))
    c = parse_record(rec(kind="rejected"))
    assert a.id == b.id != c.id
    assert parse_record(rec(kind="accepted", id="mine-1")).id == "mine-1"
    # what to_json writes reads back as the same record
    assert parse_record(json.loads(json.dumps(a.to_json()))) == a


def test_a_bad_line_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "fb.jsonl"
    f.write_text(json.dumps(rec(kind="accepted")) + "\n\n" + '{"kind": "accepted",\n')
    with pytest.raises(FeedbackError, match=r"fb.jsonl:3: not JSON"):
        read_file(f)
    with pytest.raises(FeedbackError, match=r"x:1: 'kind'"):
        list(iter_lines([json.dumps({"kind": 1})], "x"))
    (tmp_path / "fb.json").write_text("")
    with pytest.raises(FeedbackError, match="JSON lines"):
        read_file(tmp_path / "fb.json")


# ---- the store --------------------------------------------------------------------------


def test_store_appends_once_and_reads_back(tmp_path: Path) -> None:
    records = [
        parse_record(rec(kind="rating", rating=5, task_id="t1", meta={"app": "x"})),
        parse_record(rec(kind="preference", output_b="pass", preferred="a")),
        parse_record(rec(kind="edited", edited="def add(a, b):\n    return a + b")),
    ]
    store = FeedbackStore(str(tmp_path / "st"))
    first = store.append(records)
    assert (first.added, first.duplicates) == (3, 0)
    again = store.append([*records, records[0]])
    assert (again.added, again.duplicates, again.part) == (0, 4, None)
    more = store.append([parse_record(rec(kind="thumbs", thumbs="up"))])
    assert more.added == 1 and more.part is not None and more.part.endswith("part-000002.parquet")
    back = open_store(str(tmp_path / "st")).records()
    assert back[:3] == records  # every field survives the round trip
    con = store.connect()
    assert con.sql("SELECT kind, label FROM feedback ORDER BY kind").fetchall() == [
        ("edited", None),
        ("preference", None),
        ("rating", 1.0),
        ("thumbs", 1.0),
    ]


def test_opening_a_missing_store_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(FeedbackError, match="no feedback store there"):
        open_store(str(tmp_path / "none"))


# ---- examples and the split -------------------------------------------------------------


def test_records_become_pairs_and_points() -> None:
    recs = [
        parse_record(rec(kind="preference", output_b="B", preferred="b", task_id="t1")),
        parse_record(rec(kind="preference", output_b="B", preferred="tie", task_id="t1")),
        parse_record(rec(kind="edited", edited="E", task_id="t2")),
        parse_record(rec(kind="rating", rating=3, task_id="t3")),
        parse_record(rec(kind="rejected")),
    ]
    pairs, points, skipped = to_examples(recs, "task")
    assert [(p.chosen, p.rejected, p.group) for p in pairs] == [
        ("B", BASE["output"], "task:t1"),
        ("E", BASE["output"], "task:t2"),  # the edit over the original
    ]
    assert (points[0].label, points[0].group) == (0.5, "task:t3")
    assert points[1].label == 0.0 and points[1].group.startswith("prompt:")  # no task: by its prompt
    assert skipped == {"ties": 1}


def test_split_keeps_groups_whole_and_is_stable() -> None:
    names = [f"task:t{i}" for i in range(200)]
    held = held_out_groups(names, 0.1)
    assert 10 <= len(held) <= 30  # about a tenth, by hash
    assert held_out_groups([*names, "task:new"], 0.1) - {"task:new"} == held  # adding does not move others
    assert held_out_groups(["a", "b"], 0.01) and len(held_out_groups(["a", "b"], 0.99)) == 1  # some, never all
    assert held_out_groups(["a"], 0.5) == set() and held_out_groups(names, 0.0) == set()
    r1 = parse_record(rec(kind="accepted", task_id="t1", conversation="c9"))
    assert group_of(r1, "conversation") == "conversation:c9" and group_of(r1, "family").startswith("prompt:")
    pairs, _, _ = to_examples([parse_record(rec(kind="edited", edited=f"E{i}", task_id=f"t{i % 3}")) for i in range(9)])
    train, test = split(pairs, {"task:t1"})
    assert {p.group for p in test} == {"task:t1"} and len(test) == 3 and len(train) == 6


def test_run_rows_become_preference_records() -> None:
    row = {
        "prompt": [{"role": "user", "content": "Q"}],
        "chosen": [{"role": "assistant", "content": "good"}],
        "rejected": [{"role": "assistant", "content": "bad"}],
        "step": 3,
        "group_id": "g1",
        "chosen_sample": 0,
        "rejected_sample": 2,
        "task_id": "t1",
        "margin": 1.0,
        "domain": "python",
    }
    multi = {**row, "chosen": [*row["chosen"], {"role": "assistant", "content": "more"}]}  # type: ignore[list-item]
    when = datetime(2026, 12, 1, tzinfo=UTC)
    from collections import Counter

    skipped: Counter[str] = Counter()
    out = run_records([row, multi], "quick", when, skipped)
    assert len(out) == 1 and skipped == {"multi-turn episodes": 1}
    r = out[0]
    assert (r.kind, r.output, r.output_b, r.preferred, r.source, r.who) == (
        "preference",
        "good",
        "bad",
        "a",
        "run:quick",
        "reward",
    )
    assert run_records([row], "quick", datetime(2027, 1, 1, tzinfo=UTC))[0].id == r.id  # its place, not the time


# ---- training's pure parts --------------------------------------------------------------


def test_pair_and_point_losses_hand_worked() -> None:
    from rlvr.feedback.rm_metrics import pair_loss, point_loss

    # -log sigmoid(2 - 0) = log(1 + e^-2) = 0.126928
    assert pair_loss(torch.tensor([2.0]), torch.tensor([0.0])).item() == pytest.approx(0.126928, abs=1e-6)
    # centering adds c (2 + 0)^2 = 0.1 * 4 = 0.4
    assert pair_loss(torch.tensor([2.0]), torch.tensor([0.0]), 0.1).item() == pytest.approx(0.526928, abs=1e-6)
    # BCE(sigmoid(0), 0.75) = -(0.75 log .5 + .25 log .5) = log 2
    assert point_loss(torch.tensor([0.0]), torch.tensor([0.75])).item() == pytest.approx(math.log(2), abs=1e-6)


def test_calibration_error_hand_worked() -> None:
    from rlvr.feedback.rm_metrics import calibration_error

    # margin 0: p = 0.5 both ways, outcomes 1 and 0: the bin's confidence 0.5 = its accuracy
    assert calibration_error([0.0, 0.0]) == pytest.approx(0.0)
    # margin log 3: p = 0.75 (outcome 1) and 0.25 (outcome 0): |0.75 - 1| and |0.25 - 0|, half each
    assert calibration_error([math.log(3)]) == pytest.approx(0.25)
    assert math.isnan(calibration_error([]))


def test_length_baseline_picks_the_training_direction() -> None:
    from rlvr.feedback.rm_data import EncPair, EncPoint
    from rlvr.feedback.rm_metrics import length_baseline

    longer = [EncPair([1, 2, 3], [1]), EncPair([1, 2], [1]), EncPair([1], [1, 2])]  # longer wins 2 of 3
    held = [EncPair([1, 2], [1]), EncPair([1], [1, 2]), EncPair([1], [2])]  # 1 + 0 + 0.5
    assert length_baseline([*longer, EncPoint([1], 1.0)], held) == pytest.approx(0.5)
    shorter = [EncPair([1], [1, 2]), EncPair([1], [1, 2, 3])]
    assert length_baseline(shorter, held) == pytest.approx(0.5)  # 0 + 1 + 0.5
    assert length_baseline(shorter, [EncPair([1], [1, 2])]) == 1.0


def test_lr_factor() -> None:
    from rlvr.feedback.rm_train import lr_factor

    assert [lr_factor(s, 10, 2, "constant") for s in (0, 1, 2, 9)] == [0.5, 1.0, 1.0, 1.0]
    assert lr_factor(2, 10, 2, "linear") == 1.0 and lr_factor(6, 10, 2, "linear") == 0.5
    assert lr_factor(6, 10, 2, "cosine") == pytest.approx(0.5)
