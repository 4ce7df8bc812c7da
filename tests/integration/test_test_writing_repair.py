"""The bug-revealing test-writing tasks (rlvr/tasks/data/test_writing_repair.jsonl, built
from code_repair by rlvr/tasks/generators/testwritingrepairgen.py), scored in the real
sandbox as `rlvr score` and training do."""

from __future__ import annotations

import pytest

from rlvr.config import load_config
from rlvr.envs.scoring import score_completion
from rlvr.envs.test_writing import TestWritingEnv
from rlvr.tasks import load_tasks
from rlvr.tasks.loader import task_line

CFG = load_config()
SHIPPED = {t.id: t for t in load_tasks("bundled:test_writing_repair")}


def scored(task_id: str, reply: str) -> tuple[float, dict, dict]:
    t = score_completion(SHIPPED[task_id], f"```python\n{reply}```", CFG)
    assert t.reward is not None
    return t.reward.total, t.reward.flags, t.reward.details["completion"]


def test_the_bundled_set_is_what_its_generator_builds() -> None:
    """A sample rebuilt line for line from code_repair, python_functions and the bundled
    test-writing set; every code_repair task made one, held out where test_writing is."""
    from rlvr.tasks.generators.testwritingrepairgen import build_task

    repairs = load_tasks("bundled:code_repair")
    functions = {t.entry_point: t for t in load_tasks("bundled:python_functions")}
    written = {t.metadata["source_task"]: t for t in load_tasks("bundled:test_writing")}
    assert len(SHIPPED) == len(repairs)
    for repair in repairs[:: len(repairs) // 5]:
        function = functions[repair.entry_point]
        built, why = build_task(repair, function, written[function.id])
        assert built is not None and task_line(built) == task_line(SHIPPED[built.id]), f"{repair.id}: {why}"
    for task in SHIPPED.values():
        twin = written[task.metadata["source_task"]]
        assert task.metadata["split"] == twin.metadata["split"] and task.metadata["family"] == twin.metadata["family"]
        paid = [m for m in task.tests["mutants"] if m["family"] == "train"]
        assert len(paid) == 1 and paid[0]["source"] == task.metadata["shown_code"]
        assert task.metadata["shown_code"].strip() in task.prompt
        TestWritingEnv.check_task(task)


@pytest.mark.parametrize("task_id", ["twr/is_prime", "twr/factorial", "twr/times_2", "twr/gcd", "twr/fibonacci"])
def test_the_reference_reply_reveals_the_bug(task_id: str) -> None:
    """The covering tests pass on the function, fail on the bug and catch every hidden mutant."""
    task = SHIPPED[task_id]
    reply = TestWritingEnv.reference_reply(task)
    assert reply is not None
    total, flags, details = scored(task_id, reply.removeprefix("```python\n").removesuffix("```") + "\n")
    assert details["solved"] and total >= 1.0 and not flags
    assert details["hidden"]["killed"] == details["hidden"]["mutants"]


def test_a_test_the_bug_also_passes_earns_nothing() -> None:
    """is_prime's bug (`i * i < n`) answers 7 right: a true assert that does not tell the
    two apart is paid 0 and is not a solve; 4 is told apart (4 is no prime, and 2 * 2 < 4
    is false, so the loop never runs)."""
    total, _, details = scored("twr/is_prime", "assert is_prime(7) == True\n")
    assert total == 0.0 and not details["solved"]
    total, _, details = scored("twr/is_prime", "assert is_prime(7) == True\nassert is_prime(4) == False\n")
    assert total == pytest.approx(1.05) and details["solved"]  # one of two tests useful: +0.1 x 1/2


def test_comparing_with_a_copy_of_the_bug_is_a_finding_and_paid_nothing() -> None:
    """`factorial(5) != old(5)` with `old` the code shown passes on the function and fails
    on the bug, without knowing that 5! is 120: it would be paid in full."""
    copy = SHIPPED["twr/factorial"].metadata["shown_code"].replace("def factorial(", "def old(")
    total, flags, _ = scored("twr/factorial", copy + "\nassert factorial(5) != old(5)\n")
    assert "copies_shown_code" in flags and total <= 0.0
    total, flags, details = scored("twr/factorial", "assert factorial(5) == 120\n")
    assert details["solved"] and not flags and total >= 1.0
