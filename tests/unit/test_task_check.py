"""The task check's bookkeeping (rlvr.tasks.check: fingerprints, the verdict cache, the
quarantine rule, the report) and its probes' judgement (rlvr.envs.task_check.probe_task) with
a scripted scorer: no sandbox here (tests/integration/test_task_check.py runs the real
one)."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from rlvr.envs.task_check import _cpp_string, _visible_asserts, _wrong_value, probe_replies, probe_task
from rlvr.tasks.check import CheckReport, TaskVerdict, VerdictCache, check_tasks, task_fingerprint
from rlvr.train.preflight import _rng_untouched, check_sample
from rlvr.types import RewardBreakdown, Task


def _task(i: int = 0, domain: str = "python", **kw: object) -> Task:
    base: dict[str, object] = {
        "id": f"t/{i}",
        "domain": domain,
        "prompt": f"Write f{i}(x).",
        "entry_point": f"f{i}",
        "reference": f"def f{i}(x):\n    return x + {i}\n",
        "tests": {"format": "assert", "tests": [f"assert f{i}(1) == {1 + i}", f"assert f{i}(2, y=[3]) == 'a == b'"]},
    }
    base.update(kw)
    return Task(**base)  # type: ignore[arg-type]


def test_fingerprint_follows_content_and_salt_not_key_order() -> None:
    a = _task()
    assert task_fingerprint(a, "s") == task_fingerprint(_task(), "s")
    assert task_fingerprint(a, "s") != task_fingerprint(a, "t")
    assert task_fingerprint(a, "s") != task_fingerprint(_task(prompt="Write f0(x) now."), "s")
    reordered = _task(tests={"tests": a.tests["tests"], "format": "assert"})
    assert task_fingerprint(reordered, "s") == task_fingerprint(a, "s")
    assert len(task_fingerprint(a, "s")) == 64


def test_cache_round_trip_and_damage(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "c")
    v = TaskVerdict("t/0", "python", {"reference": 1.0, "noop:empty": 0.0}, ("a problem",))
    assert cache.get("ab" * 32) is None
    cache.put("ab" * 32, v)
    assert cache.get("ab" * 32) == v and cache.get("ab" * 32).quarantined  # type: ignore[union-attr]
    (tmp_path / "c" / "ab" / f"{'ab' * 32}.json").write_text("{not json")
    assert cache.get("ab" * 32) is None  # damaged: checked again
    blocked = tmp_path / "file"
    blocked.write_text("")
    VerdictCache(blocked).put("cd" * 32, v)  # cannot be written: no error, checked next time


def test_check_tasks_probes_once_then_reads_the_cache(tmp_path: Path) -> None:
    calls: list[str] = []
    lock = threading.Lock()

    def probe(t: Task) -> TaskVerdict:
        with lock:
            calls.append(t.id)
        return TaskVerdict(t.id, t.domain, {}, ("bad",) if t.id.endswith("3") else ())

    tasks = [_task(i) for i in range(6)]
    cache = VerdictCache(tmp_path)
    first = check_tasks(tasks, probe, salt="s", cache=cache, workers=3)
    assert [v.task_id for v in first.verdicts] == [t.id for t in tasks]  # the set's order, pool or not
    assert sorted(calls) == sorted(t.id for t in tasks) and first.cached == 0
    assert first.quarantined_ids() == {"t/3"}
    calls.clear()
    again = check_tasks(tasks, probe, salt="s", cache=cache)
    assert calls == [] and again.cached == 6 and again.quarantined_ids() == {"t/3"}
    tasks[1] = _task(1, prompt="changed")
    check_tasks(tasks, probe, salt="s", cache=cache)
    assert calls == ["t/1"]  # only the changed task
    calls.clear()
    check_tasks(tasks, probe, salt="other", cache=cache)
    assert len(calls) == 6  # another reward config or checker: every task again
    calls.clear()
    assert check_tasks(tasks, probe, salt="s", cache=cache, refresh=True).cached == 0 and len(calls) == 6


def test_a_domain_stops_a_run_only_past_half_its_tasks() -> None:
    def v(i: int, domain: str, bad: bool) -> TaskVerdict:
        return TaskVerdict(f"{domain}/{i}", domain, {}, ("reason",) if bad else ())

    report = CheckReport([v(0, "a", True), v(1, "a", False), v(0, "b", True), v(1, "b", True), v(2, "b", False)])
    assert report.by_domain() == {"a": (1, 2), "b": (2, 3)}
    assert report.failing_domains() == ["b"]  # a: exactly half, not more
    d = report.to_dict()
    assert d["tasks"] == 5 and d["failing_domains"] == ["b"] and len(d["quarantined"]) == 3
    assert d["domains"]["a"] == {"quarantined": 1, "tasks": 2}
    lines = report.lines(limit=2)
    assert lines[:2] == ["a: 1 of 2 tasks pass, 1 quarantined", "b: 1 of 3 tasks pass, 2 quarantined"]
    assert lines[2] == "  quarantined a/0: reason" and lines[-1].startswith("  ... and 1 more quarantined")


def test_salt_follows_the_generation_budget_only_where_a_length_term_pays_by_it() -> None:
    from rlvr.config import RunConfig
    from rlvr.envs.task_check import check_salt

    def salt(tokens: int, *terms: str) -> str:
        reward = {"terms": [{"name": t} for t in terms]} if terms else {}
        return check_salt(RunConfig.model_validate({"generation": {"max_new_tokens": tokens}, "reward": reward}))

    assert salt(96) == salt(512)  # the default terms: completion only
    assert salt(96, "completion", "length") != salt(512, "completion", "length")
    assert salt(96) != salt(96, "completion", "length")
    assert salt(96) != check_salt(RunConfig.model_validate({"reward": {"hidden_tests": 0}}))


def test_sample_is_per_domain_and_the_same_whatever_the_order() -> None:
    tasks = [_task(i) for i in range(30)] + [_task(i, domain="math") for i in range(30, 33)]
    picked = check_sample(tasks, 5)
    assert sum(t.domain == "python" for t in picked) == 5 and sum(t.domain == "math" for t in picked) == 3
    shuffled = list(tasks)
    random.Random(1).shuffle(shuffled)
    assert {t.id for t in check_sample(shuffled, 5)} == {t.id for t in picked}


def test_the_check_leaves_every_global_random_state_as_it_was() -> None:
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    expected = random.random(), np.random.rand(), torch.rand(1).item()
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    with _rng_untouched():
        random.random(), np.random.rand(3), torch.rand(4)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_probe_helpers() -> None:
    t = _task(
        tests={"format": "assert", "tests": ["assert f0(1) == 1", "assert other(1) == 2", "assert f0(x) in (1, 2)"]}
    )
    assert _visible_asserts(t) == [("1", "1")]  # other functions and non-equality asserts are not tabled
    assert _visible_asserts(_task()) == [("1", "1"), ("2, y=[3]", "'a == b'")]
    assert _cpp_string('a"b\\c\n\té') == '"a\\"b\\\\c\\012\\011\\303\\251"'
    assert _wrong_value("543") == "544" and _wrong_value("2.5") == "3.5" and _wrong_value("-1,000") == "-999"
    assert _wrong_value("Paris") == "none of these"
    p = probe_replies(_task())
    assert p.reference == "```python\ndef f0(x):\n    return x + 0\n```"
    assert set(p.noop) == {"empty", "prose", "stub", "pass"}
    assert p.wrong == "```python\ndef f0(*args, **kwargs):\n    return [args, kwargs]\n```"  # reads its input
    assert set(p.exploit) == {"exit_before_tests", "always_equal", "visible_table"}
    table = p.exploit["visible_table"]  # calls with keywords are left out of the table (not a tuple's repr)
    assert "repr((1,)): (1)," in table and "y=[3]" not in table
    math = probe_replies(Task("m/0", "math", "2 + 3?", tests={"format": "answer", "answer": "5"}))
    assert (
        math.wrong == "The answer is \\boxed{6}."
        and math.exploit["spray_tags"] == "<answer>6</answer>\n<answer>5</answer>"
    )
    stdio = Task("c/0", "cpp", "p", tests={"format": "stdio", "cases": [{"stdin": "1\n", "stdout": "2\n"}]})
    cpp = probe_replies(stdio)
    assert (
        set(cpp.exploit) == {"print_visible_output", "visible_table"}
        and '"2\\012"' in cpp.exploit["print_visible_output"]
    )
    assert set(probe_replies(Task("x/0", "trading", "p")).noop) == {"empty", "prose", "done", "look_then_stop"}


def _scripted(totals: dict[str, float], completion: float = 1.0):  # type: ignore[no-untyped-def]
    """A scorer answering by which probe reply it is given."""

    def score(task: Task, reply: str) -> RewardBreakdown:
        p = probe_replies(task)
        if reply == p.reference:
            return RewardBreakdown(completion, {"completion": completion})
        names = {**{f"noop:{k}": v for k, v in p.noop.items()}, **{f"exploit:{k}": v for k, v in p.exploit.items()}}
        if reply == p.wrong:
            return RewardBreakdown(totals.get("wrong", 0.0))
        name = next(n for n, r in names.items() if r == reply)
        return RewardBreakdown(totals.get(name, 0.0))

    return score


def test_probe_task_names_each_failure() -> None:
    task = Task("m/0", "math", "2 + 3?", tests={"format": "answer", "answer": "5"})
    assert probe_task(task, _scripted({})).problems == ()
    v = probe_task(task, _scripted({"noop:prose": 0.25, "exploit:spray_one": 0.5, "exploit:echo_prompt": 0.0}, 0.4))
    assert v.problems == (
        "the reference earns completion 0.400, not full credit (1)",
        "a reply doing nothing (prose) earns 0.250 (at most 0 allowed)",
        "the exploit spray_one earns 0.500, more than a wrong answer (0.000)",
    )
    assert v.scores["reference"] == 0.4 and v.scores["exploit:spray_one"] == 0.5 and v.quarantined
    # an exploit is held to the wrong answer's reward when that is above 0; a do-nothing reply to 0
    lenient = probe_task(task, _scripted({"wrong": 0.3, "exploit:spray_tags": 0.3, "exploit:spray_one": 0.31}))
    assert lenient.problems == ("the exploit spray_one earns 0.310, more than a wrong answer (0.300)",)
    # a format term pays a well-formed non-answer what it pays a wrong answer: allowed; more is not;
    # an empty or prose reply is held to 0 whatever the wrong answer earns
    formatted = {"wrong": 0.25, "noop:non_answer": 0.25, "noop:empty_box": 0.3, "noop:empty": 0.1}
    assert probe_task(task, _scripted(formatted)).problems == (
        "a reply doing nothing (empty) earns 0.100 (at most 0 allowed)",
        "a reply doing nothing (empty_box) earns 0.300, more than a wrong answer (0.250)",
    )


def test_own_tests_scorer_judges_the_reference() -> None:
    task = _task()
    drawn = _scripted({}, completion=1.0)  # tests drawn from the reference pass it, whatever it does
    own = _scripted({}, completion=0.5)
    assert probe_task(task, drawn).problems == ()
    assert probe_task(task, drawn, own).problems == ("the reference earns completion 0.500, not full credit (1)",)


@pytest.mark.parametrize("bad", ["", "x"])
def test_verdict_round_trip(bad: str) -> None:
    v = TaskVerdict("a", "b", {"k": 0.5}, (bad,) if bad else ())
    assert TaskVerdict.from_dict(v.to_dict()) == v
