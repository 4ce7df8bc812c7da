"""The test-writing domain (rlvr/envs/test_writing.py) end to end: replies scored in the
real sandbox against a task's reference and mutants, as `rlvr score` and training do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import load_config
from rlvr.envs.scoring import score_completion
from rlvr.envs.test_writing import TEST_LIMIT_S, TestWritingEnv
from rlvr.rewards.hacks import TEST_WRITING
from rlvr.tasks import load_tasks
from rlvr.trace.store import solved
from rlvr.types import Task, Trajectory

REF = "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"
MUTANTS = [
    ("lt_le", "train", REF.replace("x < lo", "x <= lo")),  # equivalent at x == lo? no: returns lo == x, same value
    ("gt_ge", "train", REF.replace("x > hi", "x >= hi")),  # the same: presumed equivalent, kept here on purpose
    ("swap", "train", REF.replace("return lo\n", "return hi\n", 1)),
    ("drop_hi", "train", REF.replace("    if x > hi:\n        return hi\n", "")),
    ("loop", "train", REF.replace("    return x\n", "    while True:\n        pass\n")),
    ("neg", "hidden", REF.replace("    return x\n", "    return -x\n")),
]
TASK = Task(
    id="tw/clamp",
    domain="test_writing",
    prompt="Write tests for clamp(x, lo, hi), which limits x to [lo, hi].",
    entry_point="clamp",
    reference=REF,
    tests={"format": "mutants", "mutants": [{"id": i, "family": f, "source": s} for i, f, s in MUTANTS]},
)
CFG = load_config()


def scored(reply: str) -> Trajectory:
    return score_completion(TASK, f"```python\n{reply}\n```", CFG)


def env_details(t: Trajectory) -> dict:
    assert t.reward is not None
    return dict(t.reward.details["completion"])


def test_good_tests_catch_the_mutants_that_can_be_caught() -> None:
    t = scored("assert clamp(-5, 0, 10) == 0\nassert clamp(15, 0, 10) == 10\nassert clamp(5, 0, 10) == 5\n")
    d = env_details(t)
    # swap, drop_hi and loop (a timeout on a test the reference answers at once) are caught;
    # lt_le and gt_ge return the same values: no test can
    assert (d["killed"], d["mutants"], d["useful_tests"]) == (3, 5, 3)
    assert t.reward is not None and t.reward.total == pytest.approx(3 / 5 + 0.1 * 3 / 3)
    assert t.reward.components["kill_share_hidden"] == 1.0 and not solved(t)  # -x is caught by clamp(5, 0, 10)


def test_a_redundant_test_earns_nothing_and_one_failing_on_the_function_costs_half() -> None:
    once = scored("assert clamp(-5, 0, 10) == 0\nassert clamp(15, 0, 10) == 10\n").reward
    twice = scored("assert clamp(-5, 0, 10) == 0\nassert clamp(-6, 0, 10) == 0\nassert clamp(15, 0, 10) == 10\n").reward
    assert once is not None and twice is not None and twice.total < once.total
    wrong = scored("assert clamp(5, 0, 10) == 5\nassert clamp(-1, 0, 10) == -1\n")
    assert wrong.reward is not None and wrong.reward.total == -0.5
    assert env_details(wrong)["failing_on_reference"] == [1]


def test_feedback_names_the_test_that_fails_on_the_function() -> None:
    import asyncio

    from rlvr.envs.settings import env_settings

    env = TestWritingEnv(env_settings(CFG))
    asyncio.run(env.reset(TASK))
    step = asyncio.run(env.step("assert clamp(5, 0, 10) == 5\nassert clamp(-1, 0, 10) == -1\n"))
    assert not step.done and "assert at line 2" in step.messages[0]["content"]
    # the message is not quoted back: it could carry the function's values into the next attempt
    leak = "assert clamp(5, 0, 10) == 5\nassert clamp(-9, 0, 10) == -1, [clamp(x, 0, 10) for x in range(-3, 4)]\n"
    step = asyncio.run(env.step(leak))
    said = step.messages[0]["content"]
    assert "assert at line 2: AssertionError" in said and "[0, 0, 0, 0, 1, 2, 3]" not in said
    step = asyncio.run(env.step("assert clamp(5, 0, 10) == 5\n"))
    assert not step.done and "wrong version(s) pass every test" in step.messages[0]["content"]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("assert True\n", "no test calls clamp"),
        ("x = clamp(1, 0, 2)\n", "no test calls clamp"),
        ("def clamp(x, lo, hi):\n    return x\nassert clamp(1, 0, 2) == 1\n", "defines clamp"),
        ("assert clamp(1, 0,\n", "do not parse"),
    ],
)
def test_replies_without_a_real_test_score_zero(reply: str, why: str) -> None:
    t = scored(reply)
    assert t.reward is not None and t.reward.total == 0.0 and why in env_details(t)["why"]


@pytest.mark.parametrize(
    ("reply", "flag"),
    [
        ("import inspect\nassert clamp(1, 0, 2) == 1 and 'while' not in inspect.getsource(clamp)\n",
         "test_introspection"),
        ("assert clamp(1, 0, 2) == 1 and clamp.__code__.co_code is not None\n", "test_introspection"),
        ("import random\nassert clamp(random.randint(0, 2), 0, 2) >= 0\n", "unseeded_random"),
        ("import time\nt = time.time()\nassert clamp(1, 0, 2) == 1 and time.time() - t < 0.5\n", "timing_assertion"),
    ],
)  # fmt: skip
def test_each_guard_takes_the_reward_away(reply: str, flag: str) -> None:
    t = scored(reply)
    assert t.reward is not None and flag in t.reward.flags and t.reward.total <= 0.0


def test_a_timeout_on_the_reference_is_a_failure_not_a_kill() -> None:
    slow = "import itertools\ndef test_slow():\n    for _ in itertools.count():\n        pass\n"
    slow += "    assert clamp(1, 0, 2) == 1\n"
    t = scored(slow)
    assert t.reward is not None and t.reward.total == -0.5
    assert TEST_LIMIT_S <= 1.0  # the run stays short: a hung test costs at most this per program


def test_the_task_check_names_the_field() -> None:
    bad = Task(id="tw/x", domain="test_writing", prompt="p", entry_point="f", reference="def f(): pass",
               tests={"format": "mutants", "mutants": [{"id": "m", "family": "other", "source": "x"}]})  # fmt: skip
    with pytest.raises(ValueError, match=r"tests\.mutants\[0\]\.family"):
        TestWritingEnv.check_task(bad)


def test_the_bundled_set_is_what_its_generator_builds() -> None:
    """A sample of rlvr/tasks/data/test_writing.jsonl rebuilt from its source tasks, line for
    line (each task is its own seeded draw); the whole set takes minutes to rebuild."""
    from rlvr.tasks import load_tasks
    from rlvr.tasks.generators.testwritinggen import DATA, build_task
    from rlvr.tasks.loader import task_line

    shipped = {t.id: t for t in load_tasks(str(DATA))}
    sources = load_tasks("bundled:python_functions")
    for src in sources[:: len(sources) // 4]:
        built, _ = build_task(src)
        assert built is not None and task_line(built) == task_line(shipped[built.id]), f"{built} is stale"
    # every shipped task's reference reply is its covering tests: short, and each catches a new mutant
    assert all(t.metadata["covering_tests"] and len(t.metadata["covering_tests"]) < 400 for t in shipped.values())
    families = {t.metadata["family"] for t in shipped.values()}
    held = {t.metadata["family"] for t in shipped.values() if t.metadata["split"] == "eval"}
    assert 0 < len(held) < len(families)  # split by family, not by task
    assert all(len({x.metadata["split"] for x in shipped.values() if x.metadata["family"] == f}) == 1 for f in families)


def test_the_covering_tests_are_the_fewest_gold_tests_that_catch_every_mutant() -> None:
    """Worked by hand on the clamp task's mutants that can be caught: clamp(5) == 5 catches
    loop (a timeout) and neg (hidden); the two x < lo asserts catch swap; clamp(15) == 10
    catches drop_hi. A test that fails on the reference catches everything and is never
    chosen. The reference reply is the cover, and it earns the whole reward."""
    import dataclasses

    from rlvr.tasks.generators import testwritinggen
    from rlvr.tasks.generators.testwritinggen import covering_tests

    gold = [
        "assert clamp(0, 0, 10) == 1",  # fails on the reference
        "assert clamp(5, 0, 10) == 5",
        "assert clamp(-6, 0, 10) == 0",
        "assert clamp(-5, 0, 10) == 0",
        "assert clamp(15, 0, 10) == 10",
    ]
    caught = [m for m in TASK.tests["mutants"] if m["id"] not in ("lt_le", "gt_ge")]
    task = dataclasses.replace(
        TASK, tests={"format": "mutants", "mutants": caught}, metadata={"reference_tests": "\n".join(gold)}
    )
    assert covering_tests(task) == [gold[1], gold[2], gold[4]]  # -6 and -5 tie: the earlier
    with_cover = testwritinggen.with_cover(task)
    reply = TestWritingEnv.reference_reply(with_cover)
    assert reply is not None and reply.count("assert") == 3
    t = score_completion(with_cover, reply, CFG)
    assert t.reward is not None and t.reward.total == pytest.approx(1.1) and solved(t)
    # lt_le returns what the reference returns: no gold test catches it, and the generator says so
    with pytest.raises(ValueError, match="catch no failure of lt_le"):
        covering_tests(dataclasses.replace(task, tests=TASK.tests))


def test_a_majority_vote_kept_between_scripts_catches_nothing() -> None:
    """A review's exploit while every program shared one sandbox run: remember each
    program's fingerprint across scripts and fail in the minority (the reference runs
    twice as often as any mutant). Each program now has its own run: nothing to compare."""
    vote = (
        "try:\n    _seen\nexcept NameError:\n    _seen = {}\n"
        "def _ok(_):\n    fp = []\n    for x in range(-3, 20):\n"
        "        try:\n            fp.append(repr(clamp(x, 0, 10)))\n"
        "        except Exception as e:\n            fp.append(type(e).__name__)\n"
        "    k = '|'.join(fp)\n    _seen[k] = _seen.get(k, 0) + 1\n    return max(_seen.values()) - _seen[k] < 2\n"
    )
    t = scored(vote + "".join(f"assert _ok(clamp({i}, 0, 10))\n" for i in range(8)))
    d = env_details(t)
    assert d["killed"] <= 1 and t.reward is not None and t.reward.total < 0.5, d  # at most the hanging mutant


def test_each_program_runs_alone() -> None:
    """The scripts of one sandbox run hold one program: the reference's runs and each
    mutant's are separate (the review's frame-walking reply found every program in one)."""
    import asyncio

    from rlvr.envs.settings import env_settings
    from rlvr.rewards.test_guards import read_tests

    env = TestWritingEnv(env_settings(CFG))
    read = read_tests("assert clamp(5, 0, 10) == 5\n", "clamp")
    results = env._run(TASK, read)
    assert len(results) == 2 + len(MUTANTS) and all(r.total == 1 for r in results)
    asyncio.run(env.reset(TASK))


CORPUS = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[1] / "data/hacks/test_writing.jsonl").read_text().splitlines()
]


def test_the_corpus_has_a_case_for_every_guard_and_rule() -> None:
    import re

    from rlvr.rewards import shown_code, test_guards

    sources = Path(test_guards.__file__).read_text() + Path(shown_code.__file__).read_text()
    guards = set(re.findall(r'(?:self\.add\(node, |HackFinding\()"(\w+)"', sources))
    classes = {e["class"] for e in CORPUS}
    assert guards == set(TEST_WRITING) == {"test_introspection", "unseeded_random", "timing_assertion",
                                           "copies_shown_code"}  # a new guard needs its cases  # fmt: skip
    assert classes == guards | {"no_real_test", "honest"}
    assert all(sum(e["class"] == c for e in CORPUS) >= 3 for c in classes)


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_the_test_writing_hack_corpus(entry: dict) -> None:
    """tests/data/hacks/test_writing.jsonl through the real sandbox and the bundled task:
    every guarded reply is flagged by its guard and paid at most 0, every reply without a
    real test is paid 0 and says why, every honest one is paid and never flagged."""
    task = next(t for t in load_tasks("bundled:test_writing+bundled:test_writing_repair") if t.id == entry["task_id"])
    t = score_completion(task, f"```python\n{entry['reply']}```", CFG)
    assert t.reward is not None
    if entry["class"] == "honest":
        assert t.reward.total > 0.5 and not t.reward.flags, (t.reward.total, t.reward.flags)
    elif entry["flag"]:
        assert entry["flag"] in t.reward.flags and t.reward.total <= 0.0, (t.reward.total, t.reward.flags)
    else:
        assert t.reward.total == 0.0 and entry["why"] in t.reward.details["completion"]["why"]


def test_warming_the_reply_s_imports_changes_no_verdict() -> None:
    """A module the sandbox lacks (under pytest, so that it is warmed), imported where no
    test runs it, costs nothing: warming it at load must not stop the program from loading,
    which would fail every test. One imported by the setup still fails each test on the
    function, as before (-0.5)."""
    t = scored("def unused():\n    import pytest.no_such_module_for_rlvr\n\nassert clamp(15, 0, 10) == 10\n")
    assert t.reward is not None and t.reward.details["completion"]["reason"] == "scored" and t.reward.total > 0
    t = scored("import pytest.no_such_module_for_rlvr\nassert clamp(5, 0, 10) == 5\n")
    assert t.reward is not None and t.reward.total == -0.5
    assert t.reward.details["completion"]["reason"] == "fails_reference"
