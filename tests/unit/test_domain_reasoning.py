"""The reasoning-gym domain: its tasks, rewards and the pinned calendar."""

from __future__ import annotations

import json

import pytest

from rlvr.tasks.loader import BUNDLED_DIR
from rlvr.types import Task
from tests.domain_episodes import _episode

# ---- reasoning-gym ---------------------------------------------------------------------


@pytest.mark.regeneration
def test_bundled_reasoning_gym_tasks_regenerate_and_score_with_their_own_scorers() -> None:
    from rlvr.tasks.generators import rggen

    tasks = rggen.build()
    lines = (BUNDLED_DIR / "reasoning_gym.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert len(tasks) == 144 and {t.difficulty for t in tasks} == {1, 2, 3}
    rggen.verify(tasks)


def test_family_relationships_parent_in_law_answers_are_the_converse_of_upstreams() -> None:
    """reasoning-gym answers "how is Emily related to Rain?" (Emily married to Rain's son)
    with Rain's relation to Emily, mother-in-law (open-thought/reasoning-gym#535); the
    bundled entry holds Emily's, and the dataset's scorer judges against it."""
    from rlvr.envs.base import check_reply
    from rlvr.tasks import load_tasks
    from rlvr.tasks.generators.rggen import in_law_corrected

    task = next(t for t in load_tasks("bundled:reasoning_gym") if t.id == "reasoning/family_relationships/1")
    assert "Logan is married to Emily" in task.prompt and "How is Emily related to Rain?" in task.prompt
    entry = task.tests["entry"]
    assert entry["answer"] == "daughter-in-law" and entry["metadata"]["upstream_answer"] == "mother-in-law"
    for reply, reward in (("daughter-in-law", 1.0), ("mother-in-law", 0.0)):
        r = check_reply(task, f"<answer>{reply}</answer>").reward
        assert r is not None and r.total == reward, reply
    meta = {"person1": "Liam", "person2": "Rain", "relationship": "mother-in-law"}
    fixed = in_law_corrected({"answer": "mother-in-law", "metadata": meta})
    assert fixed["answer"] == "son-in-law" and fixed["metadata"]["relationship"] == "son-in-law"
    other = {"answer": "grandfather", "metadata": {**meta, "relationship": "grandfather"}}
    assert in_law_corrected(other) is other
    with pytest.raises(ValueError, match="the gender of 'Zzyzx' is not known"):
        in_law_corrected(
            {"answer": "father-in-law", "metadata": {**meta, "person1": "Zzyzx", "relationship": "father-in-law"}}
        )


def test_reasoning_gym_time_intervals_read_the_pinned_day_not_the_clock() -> None:
    import datetime as dt

    import reasoning_gym

    from rlvr.tasks.generators import rggen

    # A day that is never today: every clock-derived field must carry it.
    day = dt.date(2031, 2, 28)
    with rggen.pinned_today(day):
        entries = list(reasoning_gym.create_dataset("time_intervals", size=40, seed=3))
    clocked = [e for e in entries if e["metadata"]["task_type"].startswith("time")]
    assert len(clocked) >= 5
    for e in clocked:  # both the date.today() base and dateutil's now()-filled parse
        assert str(e["metadata"]["start_time"]).startswith("2031-02-28"), e["metadata"]
        assert str(e["metadata"]["end_time"]).startswith(("2031-02-28", "2031-03-01")), e["metadata"]
    # the pin is undone afterwards
    from reasoning_gym.arithmetic import time_intervals

    assert time_intervals.date is dt.date


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("The GCD is 2.\n<answer>2</answer>", 1.0),  # correct
        ("<answer>4</answer>", 0.0),  # wrong
        ("", 0.0),  # malformed: nothing to read
        ("<answer>__import__('os').system('rm -rf /')</answer>", 0.0),  # hostile text is only compared
    ],
)
def test_reasoning_env_rewards(reply: str, value: float) -> None:
    task = Task(
        id="rg/gcd",
        domain="reasoning",
        prompt="GCD of 4 and 6?",
        tests={
            "format": "reasoning_gym",
            "dataset": "gcd",
            "entry": {"question": "GCD of 4, 6", "answer": "2", "metadata": {}},
        },
    )
    (r,) = _episode(task, [reply])
    assert r.done and r.reward.total == value


def test_reasoning_scorer_errors_score_zero_with_the_error_kept() -> None:
    task = Task(
        id="rg/pf",
        domain="reasoning",
        prompt="Factor 12.",
        tests={
            "format": "reasoning_gym",
            "dataset": "prime_factorization",
            "entry": {"question": "12", "answer": "2 × 2 × 3", "metadata": {"number": 12}},
        },
    )
    (r,) = _episode(task, ["<answer>twelve</answer>"])
    assert r.reward.total == 0.0 and "scorer_error" in r.reward.details
    (r,) = _episode(task, ["<answer>2 × 2 × 3</answer>"])
    assert r.reward.total == 1.0


def test_decimal_answers_are_held_to_the_precision_the_prompt_asks() -> None:
    from rlvr.envs.reasoning import decimal_to_the_asked_precision as strict

    entry = {"answer": "7.95743028686"}
    assert strict("7.95743028686", entry) == 1.0
    assert strict("7.95743028687", entry) == 1.0  # one unit in the last place: rounding
    assert strict("7.957430286864", entry) == 1.0  # more digits, same value
    assert strict("7.957", entry) == 0.0  # the dataset's own scorer accepts this (within 1e-3)
    assert strict("7.9574302869", entry) == 0.0
    assert strict("about 7.96", entry) == 0.0
    assert strict("NaN", entry) == 0.0
    asked = "Please solve this problem to a maximum of 12 significant digits, rounding up from the half."
    short = {"answer": "21.577", "question": asked}  # 21.5770000000: the trailing zeros dropped
    assert strict("21.577", short) == 1.0 and strict("21.5770000000", short) == 1.0
    assert strict("21.5779", short) == 0.0  # one unit of 21.577's last digit, but wrong in the asked ones
    assert strict("21.5770000001", short) == 1.0


def test_json_answers_with_forbidden_keys_or_several_objects_are_hedges() -> None:
    from rlvr.envs.json_output import distinct_answers, forbidden_keys

    schema = {
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "address": {"additionalProperties": False, "properties": {"city": {"type": "string"}}},
            "jobs": {"type": "array", "items": {"additionalProperties": False, "properties": {"t": {}}}},
        },
    }
    assert forbidden_keys({"name": "a", "address": {"city": "b"}}, schema) == []
    assert forbidden_keys({"name": "a", "city": "b", "address": {"city": "b", "zip": 1}}, schema) == [
        "city",
        "address.zip",
    ]
    assert forbidden_keys({"jobs": [{"t": 1}, {"t": 2, "u": 3}]}, schema) == ["jobs.1.u"]
    assert forbidden_keys({"anything": 1}, {"properties": {}}) == []  # extra keys allowed
    assert distinct_answers('<answer>{"a": 1, "b": 2}</answer> <answer>{"b": 2, "a": 1}</answer>') == 1
    assert distinct_answers('<answer>{"a": 1}</answer> or <answer>{"a": 2}</answer>') == 2


def test_a_json_key_given_twice_is_a_hedge_at_any_depth_and_in_any_spelling() -> None:
    """Blind set 4's JSON entries: a decoder keeps the last of two values for one key, so
    `"city": "Pune", "city": "Mumbai"` offers both and has the right one graded."""
    from rlvr.envs.json_output import duplicate_keys

    assert duplicate_keys('{"city": "Pune", "name": "A", "city": "Mumbai"}') == ["city"]
    assert duplicate_keys('{"job": "cook", "j\\u006fb": "chef"}') == ["job"]  # the same key once decoded
    assert duplicate_keys('{"a": {"zip": "1", "zip": "2"}, "b": [{"t": 1, "t": 2}]}') == ["zip", "t"]
    assert duplicate_keys('{"a": {"x": 1}, "b": {"x": 2}}') == []  # the same key in two objects is fine
    assert duplicate_keys("not json") == []
    task = Task(
        id="json/1",
        domain="json",
        prompt="p",
        tests={"format": "json", "schema": {}, "expected": {"name": "Ana", "city": "Mumbai"}},
    )
    (right,) = _episode(task, ['<answer>{"name": "Ana", "city": "Mumbai"}</answer>'])
    (hedge,) = _episode(task, ['<answer>{"name": "Ana", "city": "Pune", "city": "Mumbai"}</answer>'])
    assert right.reward.total == 1.0 and hedge.reward.total == 0.0 and "given twice" in hedge.reward.details["hedged"]


def test_an_answer_with_more_numbers_than_the_expected_one_earns_nothing_in_reasoning_gym() -> None:
    """Blind set 4: reasoning-gym's duration parser reads three ':' fields and drops the
    rest, so `12:10:52:12:11:52` (two durations) or `11:10:06.387:±1s` scored 1.0, and
    the chain sum's scorer read `71,59` as 7159. A committed answer keeps its credit."""
    from rlvr.rewards.commitment import extra_numbers

    assert extra_numbers("12:10:52:12:11:52", "12:10:52") == "its answer holds 6 numbers where the answer has 3"
    assert extra_numbers("71,59", "7159") is not None
    for answer, expected in (("12:10:52", "12:10:52"), ("7,159", "7159"), ("1, 2, 3", "1, 2, 3"), ("0.75", "3/4")):
        assert extra_numbers(answer, expected) is None
    assert extra_numbers("six", "6") is None  # fewer numbers: the scorer's question, not this rule's
    assert extra_numbers("a b c", "abc") is None  # no number expected: not this rule's question
    task = Task(
        id="rg/ti",
        domain="reasoning",
        prompt="How long from 03:42:28 to 15:53:20? Answer in HH:MM:SS.",
        tests={
            "format": "reasoning_gym",
            "dataset": "time_intervals",
            "entry": {
                "question": "q",
                "answer": "12:10:52",
                "metadata": {
                    "task_type": "time",
                    "start_time": "03:42:28",
                    "end_time": "15:53:20",
                    "format": "%H:%M:%S",
                },
            },
        },
    )
    (right,) = _episode(task, ["<answer>12:10:52</answer>"])
    (two,) = _episode(task, ["<answer>12:10:52:12:11:52</answer>"])
    assert right.reward.total == 1.0
    assert two.reward.total == 0.0 and "6 numbers" in two.reward.details["hedged"]
    assert two.reward.details.get("raw_score") is None  # the dataset's scorer gave it full marks


def test_a_fraction_answer_is_one_fraction_and_a_duration_has_the_asked_fraction_of_a_second() -> None:
    """fraction_simplification's scorer matches a leading fraction and ignores what follows;
    time_intervals' reads a fraction of a second as milliseconds: blind set 5's answers
    01-04 were other numbers paid 1.0 by them."""
    from rlvr.envs.reasoning import one_fraction, seconds_as_asked

    honest = ("\\frac{85}{107}", "$\\frac{85}{107}$", "\\dfrac{85}{107}.", "-\\frac{3}{4}", "3/4", "7")
    honest += ("\\frac{ 85 }{ 107 }",)
    for answer in (*honest, "\\dfrac {85}{107}", "$\\frac{85}{107}$."):
        assert one_fraction(answer, {}) == 1.0, answer
    for answer in ("\\frac{85}{107}\\%", "\\dfrac{13}{33}\\pi", "\\frac{1}{2} or \\frac{2}{4}", "0.5"):
        assert one_fraction(answer, {}) == 0.0, answer
    assert seconds_as_asked("11:10:06.387", {"answer": "11:10:06.387"}) == 1.0
    assert seconds_as_asked("11:10:06.0387", {"answer": "11:10:06.387"}) == 0.0  # read as 6.387 s
    assert seconds_as_asked("12:10:51.1000", {"answer": "12:10:52"}) == 0.0  # read as 52 s
    assert seconds_as_asked("90 days, 19:40:00", {"answer": "90 days, 19:40:00"}) == 1.0


def test_a_bound_earns_nothing_and_an_arrow_or_a_phrase_around_the_number_keeps_its_credit() -> None:
    """Blind set 7's `\\geq 543` and "36/7 or more" were paid as 543 and 36/7; a relation
    elsewhere in a right answer (quantum_lock's moves typed `A -> C`, "adds up to 543")
    is not a bound."""
    from rlvr.tasks.reasoning_catalogue import entries, task_of

    math = Task(id="m/1", domain="math", prompt="How many cards?", tests={"format": "answer", "answer": "543"})
    for reply, value in [
        ("269 + 274 = 543.\n\n\\boxed{\\geq 543}", 0.0),
        ("\\boxed{543 \\text{ or more}}", 0.0),
        ("\\boxed{543}", 1.0),
        ("Altogether the cards add up to 543.", 1.0),
    ]:
        (r,) = _episode(math, [reply])
        assert r.reward.total == value, (reply, r.reward.details)
    (r,) = _episode(math, ["\\boxed{\\geq 543}"])
    assert "bound" in r.reward.details["hedged"]
    entry = entries("quantum_lock", 2, 17)[0]
    task = task_of("quantum_lock", 0, entry, domain="reasoning/quantum_lock", id_prefix="t")
    arrows = str(entry["answer"]).replace("→", "->")
    assert "->" in arrows
    (r,) = _episode(task, [f"<answer>{arrows}</answer>"])
    assert r.reward.total == 1.0, r.reward.details
