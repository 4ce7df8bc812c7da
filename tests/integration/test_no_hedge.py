"""No credit for hedging, over every task of every bundled answer dataset (reasoning-gym's
18 datasets, the math word problems): a reply that lists candidates, declares several
answers, echoes the question, pads the answer, or answers with a constant of the
answer's type earns no more than the same reply committing to one wrong answer, while
the committed right answer still earns full credit. The replies are built from each
task's own answer, so every dataset's scorer is exercised with its own answer shapes."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from rlvr.config import RunConfig
from rlvr.envs.scoring import score_completion
from rlvr.tasks import load_tasks
from rlvr.types import Task

CONSTANTS = ("0", "1", "2", "10", "Yes", "No", "True", "Monday", "mother", "1/2", "00:00:00", "None")


def _answer(task: Task) -> str:
    if task.domain == "reasoning":
        return str(task.tests["entry"]["answer"])
    return str(task.tests["answer"])


def _wrong(right: str) -> str:
    """A committed wrong answer of the right answer's type."""
    s = right.strip()
    if re.fullmatch(r"-?\d+", s):
        return str(int(s) + 1)
    if re.fullmatch(r"-?\d+\.\d+", s):
        return str(float(s) + 1.0)
    m = re.fullmatch(r"(-?\d+)/(\d+)", s)
    if m:
        return str(Fraction(int(m.group(1)) + 1, int(m.group(2))))
    return s[::-1] if s[::-1] != s else s + "x"


def _reply(answer: str, domain: str) -> str:
    if domain == "math":
        return f"Working it out.\n\\boxed{{{answer}}}"
    return f"Working it out.\n<answer>{answer}</answer>"


def _hedges(task: Task, right: str, wrong: str) -> dict[str, str]:
    wrap = "\\boxed{{{}}}" if task.domain == "math" else "<answer>{}</answer>"
    question = task.prompt.split("\n\n")[0][:400]
    return {
        "or": _reply(f"{wrong} or {right}", task.domain),
        "or_right_first": _reply(f"{right} or {wrong}", task.domain),
        "comma_list": _reply(f"{wrong}, {right}", task.domain),
        "slash": _reply(f"{wrong} / {right}", task.domain),
        "newline_list": _reply(f"{wrong}\n{right}", task.domain),
        "two_declared": f"First guess: {wrap.format(wrong)}\nFinal: {wrap.format(right)}",
        "two_declared_right_first": f"{wrap.format(right)}\nOr maybe {wrap.format(wrong)}",
        "echo_question": _reply(question, task.domain),
        "question_then_answer": _reply(f"{question} {right}", task.domain),
        "padded": _reply(f"{right} (or possibly {wrong}, {wrong}{wrong})", task.domain),
        "doubled": _reply(f"{right}{right}", task.domain),
    }


def _total(task: Task, reply: str, cfg: RunConfig) -> float:
    r = score_completion(task, reply, cfg).reward
    assert r is not None
    return float(r.total)


def _sets() -> list[str]:
    return ["bundled:reasoning_gym", "bundled:math_word"]


@pytest.mark.parametrize("source", _sets())
def test_no_hedge_earns_more_than_a_committed_wrong_answer(source: str) -> None:
    cfg = RunConfig()
    tasks = load_tasks(source)
    failures: list[str] = []
    checked = 0
    for task in tasks:
        right = _answer(task)
        assert _total(task, _reply(right, task.domain), cfg) == 1.0, f"{task.id}: the right answer {right!r}"
        wrong = _wrong(right)
        w = _total(task, _reply(wrong, task.domain), cfg)
        if w >= 1.0:  # the dataset accepts this "wrong" answer too (a tolerance): nothing to compare
            continue
        for name, reply in _hedges(task, right, wrong).items():
            got = _total(task, reply, cfg)
            checked += 1
            if got > w:
                failures.append(f"{task.id} {name}: {got:.3f} > committed wrong {w:.3f} ({reply[-80:]!r})")
        for const in CONSTANTS:
            if const.strip().lower() == right.strip().lower():
                continue
            got = _total(task, _reply(const, task.domain), cfg)
            if got > w:
                failures.append(f"{task.id} constant {const!r}: {got:.3f} > committed wrong {w:.3f}")
    assert checked > 10 * len(tasks) // 2
    assert not failures, f"{len(failures)} hedges paid:\n" + "\n".join(failures[:40])


def test_a_committed_answer_in_another_notation_keeps_its_credit() -> None:
    """Not hedges: the same answer twice, a box inside the tag, units beside a number."""
    cfg = RunConfig()
    math = next(t for t in load_tasks("bundled:math_word") if re.fullmatch(r"\d+", _answer(t)))
    a = _answer(math)
    for reply in (
        f"\\boxed{{{a}}}",
        f"So we get \\boxed{{{a}}}.\n<answer>{a}</answer>",
        f"<answer>\\boxed{{{a}}}</answer>",
        f"\\boxed{{{a}.0}}",
        f"The total is {a} items, so \\boxed{{{a} \\text{{ items}}}}",
    ):
        assert _total(math, reply, cfg) == 1.0, reply
    frac = next(t for t in load_tasks("bundled:reasoning_gym") if t.tests["dataset"] == "fraction_simplification")
    assert _total(frac, str(frac.reference), cfg) == 1.0
