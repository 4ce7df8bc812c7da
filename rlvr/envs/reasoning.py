"""Procedural reasoning tasks from the `reasoning-gym` package, judged by its own scorers.

A task carries the generator's entry (question, answer, metadata) in its tests, so that
the dataset's `score_answer` decides whether the reply's final answer is right. Credit is
exact: 1 when the scorer gives the answer full marks, else 0. reasoning-gym's partial
credit is not paid: its default scorer gives `len(answer) / len(reply)` to any reply that
contains the answer, so listing every option, echoing the input or padding the answer
earns more than committing to a wrong one; others give a share of letters matched by
position, 0.01-0.1 for any well-formed answer, or a weekday's 0.1 for naming any weekday.
The raw score is kept in the details. A right answer that hedges (several declared
answers, or candidates such as "a or b" of which one is right: `rlvr.rewards.commitment`)
earns 0, with the reason in the details; so does one holding more numbers than the
expected answer (`12:10:52:12:11:52` for a duration: the dataset's parser reads three
fields and drops the rest), or one with a character that matches only after the
scorer's case folding (a Kelvin sign for a k: `lookalike`). The final answer is taken like the math
domain's: the `<answer>` tag, the last `\\boxed{}`, the text after "answer is", else the
last line. A scorer that raises on a malformed answer scores 0, with the error in the
details. Single turn.

Task tests: `{"format": "reasoning_gym", "dataset": NAME, "entry": {...}}`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.commitment import bound, extra_numbers, hedge, lookalike
from rlvr.rewards.extract import extract_final_answer
from rlvr.types import RewardBreakdown, Task


@functools.cache
def scorer(dataset: str) -> Callable[[str, dict[str, Any]], float]:
    """The dataset's scorer, and where its full marks are looser than its prompt, the
    stricter check beside it (both must give full marks; below full marks the dataset's
    own score stands, unpaid)."""
    import reasoning_gym  # slow to import (~1.5 s): only when a task of this domain runs

    fn: Callable[[str, dict[str, Any]], float] = reasoning_gym.get_score_answer_fn(dataset)
    strict = STRICTER.get(dataset)
    if strict is None:
        return fn

    def stricter(answer: str, entry: dict[str, Any]) -> float:
        score = float(fn(answer, entry))  # its partial credit stays in the details as it was
        return min(score, strict(answer, entry)) if score == 1.0 else score

    return stricter


_SIGNIFICANT = re.compile(r"(\d+) significant digits")


def decimal_to_the_asked_precision(answer: str, entry: dict[str, Any]) -> float:
    """decimal_arithmetic asks for 12 significant digits, but its scorer accepts anything
    within 10^-3: full marks only within one unit of the asked digits' last place (of the
    expected answer's last digit where the question names no count). The expected answer
    drops trailing zeros (21.577 for 21.5770000000), so its own last digit is no unit:
    21.5779 is wrong in the fourth decimal."""
    try:
        got, want = Decimal(answer.strip()), Decimal(str(entry["answer"]).strip())
    except (InvalidOperation, ValueError):
        return 0.0
    if not got.is_finite() or not want.is_finite():
        return 0.0
    place = int(want.as_tuple().exponent)
    asked = _SIGNIFICANT.search(str(entry.get("question", "")))
    if asked and want:
        place = min(place, want.adjusted() - int(asked.group(1)) + 1)
    return 1.0 if abs(got - want) <= Decimal(1).scaleb(place) else 0.0


_FRACTION = re.compile(r"-?\s*\\[dt]?frac\s*\{\s*-?\d+\s*\}\s*\{\s*-?\d+\s*\}|-?\d+(?:\s*/\s*-?\d+)?")


def one_fraction(answer: str, entry: dict[str, Any]) -> float:
    """fraction_simplification's scorer reads a leading `\\frac{a}{b}` and ignores what
    follows it (`\\frac{85}{107}\\%`, `\\dfrac{13}{33}\\pi` are other numbers): full marks
    only for an answer that is one fraction (or integer) and nothing else."""
    return 1.0 if _FRACTION.fullmatch(answer.strip(" \t\n$.")) else 0.0


_SECONDS_FRACTION = re.compile(r":\d{1,2}\.(\d+)")


def seconds_as_asked(answer: str, entry: dict[str, Any]) -> float:
    """time_intervals' scorer reads a fraction of a second as a count of milliseconds
    (`06.0387` as 6.387 s, `51.1000` as 52 s): full marks only where the answer's fraction
    of a second has as many digits as the expected answer's (none where it has none)."""
    got = [len(g) for g in _SECONDS_FRACTION.findall(answer)]
    want = [len(g) for g in _SECONDS_FRACTION.findall(str(entry.get("answer", "")))]
    return 1.0 if got == want else 0.0


STRICTER: dict[str, Callable[[str, dict[str, Any]], float]] = {
    "decimal_arithmetic": decimal_to_the_asked_precision,
    "fraction_simplification": one_fraction,
    "time_intervals": seconds_as_asked,
}
"""Datasets whose scorer gives full marks more loosely than its prompt asks."""


@register_env("reasoning")
class ReasoningGymEnv:
    components: tuple[str, ...] = ()  # only the verdict ('completion')

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    @staticmethod
    def check_task(task: Task) -> None:
        t = task.tests
        if t.get("format") != "reasoning_gym" or not isinstance(t.get("entry"), dict) or "dataset" not in t:
            raise ValueError(
                f"task {task.id}: field 'tests': need {{'format': 'reasoning_gym', 'dataset': NAME, 'entry': {{...}}}}"
            )
        if "answer" not in t["entry"]:
            raise ValueError(f"task {task.id}: field 'tests.entry' has no 'answer'")

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        answer = extract_final_answer(reply)
        details: dict[str, Any] = {"answer": answer[:200], "dataset": self.task.tests["dataset"]}
        score = scorer(str(self.task.tests["dataset"]))
        entry = self.task.tests["entry"]
        raw, error = judge(score, answer, entry)
        if error:
            details["scorer_error"] = error
        if raw != 0.0 and raw != 1.0:
            details["raw_score"] = raw  # partial credit the dataset would give: not paid
        value = 1.0 if raw == 1.0 else 0.0
        if value:
            expected = str(entry["answer"])
            reason = hedge(reply, answer, expected, lambda c: judge(score, c, entry)[0] == 1.0)
            reason = reason or extra_numbers(answer, expected) or lookalike(answer, expected) or bound(answer, expected)
            if reason:
                value, details["hedged"] = 0.0, reason
        return StepResult([], RewardBreakdown(value, {"completion": value}, details), done=True)


def judge(score: Callable[[str, dict[str, Any]], float], answer: str, entry: dict[str, Any]) -> tuple[float, str]:
    """The dataset's score for `answer` (0 for an empty answer), and the error of a scorer
    that raised on it ("" otherwise). Full marks are exactly 1.0: spell_backward's score,
    a sum of 1/n per letter matched by position, can round to 1.0000000000000002 for a
    reply that repeats the answer (its full-match penalty tests `== 1.0`), which is not
    full marks."""
    if not answer.strip():
        return 0.0, ""
    try:
        return float(score(answer, entry)), ""
    except Exception as e:  # a scorer that cannot read a malformed answer
        return 0.0, f"{type(e).__name__}: {e}"[:200]
