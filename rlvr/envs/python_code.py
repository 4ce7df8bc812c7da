"""Code writing: the model writes code, the task's tests run in the sandbox.

The reply's code (the first fenced block of the task's language or untagged, or the
whole reply if there is none) runs against the task's tests; the reward is the
completion reward. When tests fail the step also returns feedback — which tests failed
and how, compiler errors, the trimmed error output — so that with `rollout.max_turns` > 1
the model can read it and try again.

Tests that a program doing nothing already passes (a function returning None where
None is the expected answer, an empty program where the expected output is empty) are
no credit to earn: a partial pass scores `(passed - baseline) / (total - baseline)`,
clipped at 0, so an empty reply or a stub earns 0, and each of those tests a reply fails
costs as much as a test it had to make pass. The do-nothing baseline
(`noop_program`) runs once per task and process, and only when a reply passes some but
not all tests; a full pass is 1.0 as before.

Held-out tests (`tests.held_out`, rlvr.sandbox.spec) run with the visible ones and are
scored apart: completion = (1 - w) * visible share + w * held-out share, with w =
`reward.held_out_weight`. Feedback counts and quotes the visible tests only, and the
episode ends when they all pass (the model has nothing it could act on); the step's
details record both shares, for the `hack/overfit_visible` flag and `heldout_gap` metric.
With `reward.hidden_tests`, a task's held-out tests are drawn fresh each step from its
reference (`metadata.hidden_tests`) and they make the completion: 1 when every one of them
and every visible test passes, else 0 (`reward.hidden_credit: all`, the default), or the
drawn tests' share passed (`share`). The visible tests earn nothing by themselves, but a
reply that fails one is wrong however many drawn tests it passes. A run that runs out of
time on held-out tests only (each test has `sandbox.test_timeout_s`) is scored with those
tests failed; `reward.timeout_penalty` is for running out of time on a visible one.

Domains: `python` (functions, stdin programs), `repair` and `data` (Python, below), and
`cpp` / `javascript` (programs tested through stdin/stdout; C++17 compiled by g++ in the
same jail, JavaScript run by node).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Sequence

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards import completion_reward
from rlvr.rewards.extract import extract_code
from rlvr.sandbox.spec import SpecError, held_out_texts, is_held_out, parse_suite
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Tally, Task, TestStatus


@register_env("python")
class PythonFunctionEnv:
    language = "python"
    formats: tuple[str, ...] = ("assert", "call", "stdio", "script")
    components = ("tests_visible", "tests_held_out")  # with held-out tests: each share

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None

    @classmethod
    def check_task(cls, task: Task) -> None:
        """The tests are a suite this language's sandbox can run (nothing runs here)."""
        if task.tests.get("format") not in cls.formats:
            got = task.tests.get("format")
            raise ValueError(
                f"task {task.id}: field 'tests.format': {cls.language} tests need one of "
                f"{', '.join(cls.formats)}, got {got!r}"
            )
        try:
            parse_suite(task.tests)
        except SpecError as e:
            raise ValueError(f"task {task.id}: field 'tests': {e}") from None
        prelude = task.tests.get("prelude")
        if prelude is not None and not isinstance(prelude, str):
            raise ValueError(f"task {task.id}: field 'tests.prelude': code as a string, got {type(prelude).__name__}")
        if prelude and cls.language == "python":
            try:
                compile(prelude, "prelude", "exec")
            except (SyntaxError, ValueError) as e:
                raise ValueError(f"task {task.id}: field 'tests.prelude': not valid Python: {e}") from None

    @classmethod
    def reference_reply(cls, task: Task) -> str | None:
        """The reference program in a fenced block tagged with its language (the form the
        prompts ask for and `extract_code` reads first); None without one."""
        ref = (task.reference or "").strip("\n")
        return f"```{cls.language}\n{ref}\n```" if ref.strip() else None

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        code = with_prelude(self.task, extract_code(reply, self.language))
        result = await asyncio.to_thread(self.settings.execute, code, self.task.tests, self.language)
        value = completion_reward(result, self.settings.timeout_penalty)
        visible, held = result.partition()
        details: dict[str, object] = {"passed": result.passed, "total": result.total, "status": result.status.value}
        if held.total:
            details |= {
                "visible_passed": visible.passed,
                "visible_total": visible.total,
                "held_out_passed": held.passed,
                "held_out_total": held.total,
            }
        slow = held.total > 0 and slow_on_held_out_only(result)
        if slow:  # timed-out held-out tests are failed tests, not a hang (see slow_on_held_out_only)
            details["held_out_timeouts"] = sum(t.status is TestStatus.TIMEOUT for t in result.tests)
        if (slow or result.status not in (RunStatus.TIMEOUT, RunStatus.SANDBOX_ERROR)) and result.total > 0:
            drawn = bool(self.task.metadata.get("hidden_tests"))
            partial = 0 < result.passed < result.total
            if partial and not (drawn and self.settings.hidden_credit == "all"):  # "all" needs no baseline
                base = await asyncio.to_thread(self._baseline)
            else:
                base = (0, 0)
            if any(base):
                details["baseline_passed"] = sum(base)
            if drawn:
                # drawn tests (reward.hidden_tests) make the completion, the visible ones only
                # gate it: special-casing the visible tests earns nothing (rlvr.rewards.hidden_tests)
                value = drawn_credit(held, base[1], self.settings.hidden_credit, visible)
            else:
                value = blended_share(visible, held, base, self.settings.held_out_weight)
        components = {"completion": value}
        if held.total:  # logged as reward/tests_visible, reward/tests_held_out
            components |= {"tests_visible": visible.share, "tests_held_out": held.share}
        reward = RewardBreakdown(total=value, components=components, details=details)
        # the episode ends when the tests the model can see pass: failing held-out tests
        # are never reported back (that would hand the model their inputs one by one)
        solved = visible.total > 0 and visible.passed == visible.total
        feedback = []
        if not solved:  # what the error output shows of held-out inputs is scrubbed
            hidden = held_out_texts(self.task.tests) if held.total else []
            feedback = [{"role": "user", "content": test_feedback(result, self.settings.feedback_chars, hidden)}]
        return StepResult(messages=feedback, reward=reward, done=solved, execution=result)

    def _baseline(self) -> tuple[int, int]:
        """How many visible and held-out tests the do-nothing program passes (once per
        task and process: concurrent episodes of one task wait for the first run)."""
        assert self.task is not None
        blob = json.dumps(self.task.tests, sort_keys=True, default=str)
        key = (self.language, self.task.entry_point or "", hashlib.sha256(blob.encode()).hexdigest())
        with _BASELINE_LOCK:
            slot = _BASELINES.setdefault(key, _Slot())
        with slot.lock:
            if slot.value is None:
                noop = with_prelude(self.task, noop_program(self.task, self.language))
                result = self.settings.execute(noop, self.task.tests, self.language)
                if result.status is RunStatus.SANDBOX_ERROR:
                    return (0, 0)  # not cached: the next episode tries again
                if result.status is RunStatus.TIMEOUT:
                    slot.value = (0, 0)
                else:
                    visible, held = result.partition()
                    slot.value = (visible.passed, held.passed)
            return slot.value


class _Slot:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value: tuple[int, int] | None = None


_BASELINES: dict[tuple[str, str, str], _Slot] = {}
_BASELINE_LOCK = threading.Lock()


def with_prelude(task: Task, code: str) -> str:
    """The reply's code after the task's `tests.prelude` (imports and helper functions the
    prompt shows before the function to write, as HumanEval's problems do)."""
    prelude = task.tests.get("prelude")
    return f"{prelude.rstrip()}\n\n{code}" if isinstance(prelude, str) and prelude.strip() else code


def noop_program(task: Task, language: str) -> str:
    """A program that does nothing: the entry point as a stub returning None, else an
    empty program (an empty `main` in C++)."""
    if language == "cpp":
        return "int main() { return 0; }\n"
    if language == "python" and task.entry_point:
        return f"def {task.entry_point}(*args, **kwargs):\n    return None\n"
    return ""


def slow_on_held_out_only(result: ExecutionResult) -> bool:
    """A run that timed out only on held-out tests: every visible test has its verdict and
    none of them ran out of time. Such a run is scored as any other, its timed-out
    held-out tests failed: a drawn input at the reference's reach (a 20,000-step
    trajectory, a 4,097-deep nesting) that an honest but slower program does not finish
    costs that test, not the hang penalty (`reward.timeout_penalty`), which stays for a
    program that runs out of time on the inputs it was shown."""
    if result.status is not RunStatus.TIMEOUT:
        return False
    visible = [t for t in result.tests if not is_held_out(t.name)]
    return bool(visible) and all(t.status is not TestStatus.TIMEOUT for t in visible)


def blended_share(visible: Tally, held: Tally, baseline: tuple[int, int], held_out_weight: float) -> float:
    """(1 - w) * the visible share + w * the held-out share, each counted beyond what the
    do-nothing program passes (`baseline`: visible, held-out); without held-out tests, the
    visible share alone."""
    share = beyond_baseline(visible, baseline[0])
    if not held.total:
        return share
    w = held_out_weight if visible.total else 1.0
    return (1 - w) * share + w * beyond_baseline(held, baseline[1])


def drawn_credit(held: Tally, baseline: int, credit: str, visible: Tally) -> float:
    """The completion from a reply's drawn tests: with credit 'all', 1 when they and the
    `visible` tests all pass and 0 otherwise (the drawn inputs may miss the one case an
    example shows); with 'share', the drawn tests' share passed beyond the do-nothing
    program's."""
    if credit == "all":
        full = held.total and held.passed == held.total and visible.passed == visible.total
        return 1.0 if full else 0.0
    return beyond_baseline(held, baseline)


def beyond_baseline(tally: Tally, baseline: int) -> float:
    """The share of tests passed beyond those the do-nothing program passes, at least 0."""
    if tally.total <= baseline:
        return 1.0 if tally.passed == tally.total else 0.0
    return max(0.0, (tally.passed - baseline) / (tally.total - baseline))


HIDDEN_MARK = "[held-out input]"


def scrub(text: str, hidden: Sequence[str]) -> str:
    """`text` with every occurrence of each of `hidden` (longest first) replaced by
    HIDDEN_MARK."""
    for secret in hidden:
        if secret and secret in text:
            text = text.replace(secret, HIDDEN_MARK)
    return text


def test_feedback(result: ExecutionResult, max_chars: int = 1500, hidden: Sequence[str] = ()) -> str:
    """What the model is told after a failed attempt: the run status, each failing visible
    test with its message, and the end of the error output, within `max_chars`. Held-out
    tests are neither counted nor named, and what the error output shows of their inputs
    (`hidden`: `rlvr.sandbox.spec.held_out_texts`, e.g. a program printing its arguments
    to stderr) is replaced by HIDDEN_MARK: they are drawn afresh each step, but within an
    episode a later attempt could otherwise read them."""
    visible, _ = result.partition()
    lines = [f"Your code did not pass: {visible.passed} of {visible.total} tests passed ({result.status.value})."]
    failing = [t for t in result.tests if t.status is not TestStatus.PASSED and not is_held_out(t.name)]
    if result.status is RunStatus.COMPILE_ERROR:
        lines.append("The code did not compile, so no test ran.")
        failing = []
    for t in failing[:8]:
        lines.append(f"- {t.status.value}: {t.name}" + (f" -> {t.message.strip()[:300]}" if t.message else ""))
    if len(failing) > 8:
        lines.append(f"- ... and {len(failing) - 8} more")
    err = scrub((result.error or result.stderr).strip(), hidden)
    if err:
        lines.append("Error output (end):\n" + err[-max(max_chars // 2, 200) :])
    lines.append("Fix the code and answer with the corrected version.")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 20] + "\n[... trimmed]"


@register_env("repair")
class CodeRepairEnv(PythonFunctionEnv):
    """Code repair: the prompt shows buggy code and its failing tests; the reply's fixed
    code is judged by the same tests, with the same feedback on failure."""


@register_env("data")
class DataAnalysisEnv(PythonFunctionEnv):
    """Data analysis: the table arrives on stdin, the program prints the answer, which
    the sandbox's numeric checker compares (numbers within 1e-6, words exactly)."""


@register_env("cpp")
class CppProgramEnv(PythonFunctionEnv):
    """C++ programs: compiled with g++ -std=c++17 -O2 in the jail, then run once per stdin
    case; a compiler error fails every test and is quoted back as feedback."""

    language = "cpp"
    formats = ("stdio",)


@register_env("javascript")
class JavaScriptProgramEnv(PythonFunctionEnv):
    """JavaScript programs run by node once per stdin case."""

    language = "javascript"
    formats = ("stdio",)
