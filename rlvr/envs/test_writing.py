"""Test writing: the model writes tests for a function, rewarded by the mutants they catch.

A task gives a function's specification and signature (its code only when
`metadata.show_code` says so) and ships the function (`reference`) with its mutants:

    {"id": "tw/is_prime", "domain": "test_writing", "entry_point": "is_prime",
     "prompt": "...", "reference": "def is_prime(n): ...",
     "tests": {"format": "mutants", "mutants": [
         {"id": "compare_boundary@3:7", "family": "train", "source": "def is_prime(n): ..."},
         {"id": "...", "family": "hidden", "source": "..."}]}}

The reply's code is read by rlvr.rewards.test_guards (its asserts and `test_*` functions,
the setup around them, the rule-breaking uses as hack findings). Then one sandbox run
per program (the reference twice, each mutant; several at once): the program is the
run's loaded code and each test, after the setup, one script, run in a secret order by
test processes forked from the loaded program, one script after another
(`test_isolation: shared`; a script that crashes or hangs is followed by a fresh fork),
verdicts decided outside. The reward is rlvr.rewards.mutation_score's on the `train`
family: -0.5 when a test fails on the reference in either run, else the share of
mutants caught plus a tenth of the share of tests that catch one no earlier test did.
The `hidden` family (other operators) is run too and logged as `kill_share_hidden`,
never paid: a policy tuned to the training operators shows there.

A task may show code in its prompt (`metadata.shown_code`: a buggy version, for tests
that reveal its bug, rlvr.tasks.generators.testwritingrepairgen; or a repository's
function, rlvr.repos.test_writing): a reply that defines a copy of it is a hack finding
(`copies_shown_code`, rlvr.rewards.shown_code).

Per test `TEST_LIMIT_S`, per run `RUN_LIMIT_S`: tests still waiting at the run's end time
out, on the reference too, so a slow suite costs its reward.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.rewards.extract import extract_code
from rlvr.rewards.mutation_score import MutationScore, Outcome, score
from rlvr.rewards.shown_code import copied_code
from rlvr.rewards.test_guards import TestReply, read_tests
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestStatus

TEST_LIMIT_S = 1.0
RUN_LIMIT_S = 30.0
REFERENCE_RUNS = 2
PARALLEL_RUNS = 4  # a reply's sandbox runs in flight at once
ISOLATION = "shared"  # how the (program, test) scripts share test processes (rlvr.sandbox.executor.Limits)
FAMILIES = ("train", "hidden")
_VERDICT = {
    TestStatus.PASSED: "pass",
    TestStatus.FAILED: "fail",
    TestStatus.ERROR: "fail",
    TestStatus.TIMEOUT: "timeout",
}


def task_mutants(task: Task, family: str) -> list[dict[str, str]]:
    return [m for m in task.tests.get("mutants") or [] if m.get("family", "train") == family]


@register_env("test_writing")
class TestWritingEnv:
    __test__ = False  # not a pytest test class
    components = ("kill_share", "kill_share_hidden")

    def __init__(self, settings: EnvSettings, isolation: str = ISOLATION, parallel: int = PARALLEL_RUNS) -> None:
        self.settings = settings
        self.isolation = isolation
        self.parallel = parallel
        self.task: Task | None = None

    @classmethod
    def check_task(cls, task: Task) -> None:
        where = f"task {task.id}"
        if task.tests.get("format") != "mutants":
            raise ValueError(f"{where}: field 'tests.format': test_writing tasks need 'mutants'")
        if not task.entry_point:
            raise ValueError(f"{where}: field 'entry_point': the function the tests must call")
        if not (task.reference or "").strip():
            raise ValueError(f"{where}: field 'reference': the function the tests run against")
        mutants = task.tests.get("mutants")
        if not isinstance(mutants, list) or not mutants:
            raise ValueError(f"{where}: field 'tests.mutants': a non-empty list of mutants")
        for i, m in enumerate(mutants):
            if not isinstance(m, dict) or not isinstance(m.get("source"), str) or not isinstance(m.get("id"), str):
                raise ValueError(f"{where}: field 'tests.mutants[{i}]': an object with 'id' and 'source' strings")
            if m.get("family", "train") not in FAMILIES:
                raise ValueError(f"{where}: field 'tests.mutants[{i}].family': one of {', '.join(FAMILIES)}")
        if not task_mutants(task, "train"):
            raise ValueError(f"{where}: field 'tests.mutants': no mutant of the 'train' family to pay for")

    @classmethod
    def reference_reply(cls, task: Task) -> str | None:
        """The task's own tests as a reply, if it has them: the fewest that catch every
        mutant (`metadata.covering_tests`) where the task lists them, else all of its gold
        tests (`metadata.reference_tests`)."""
        tests = task.metadata.get("covering_tests") or task.metadata.get("reference_tests")
        return f"```python\n{tests.strip()}\n```" if isinstance(tests, str) and tests.strip() else None

    async def reset(self, task: Task) -> list[dict[str, str]]:
        self.check_task(task)
        self.task = task
        return opening_messages(task, self.settings)

    async def step(self, reply: str) -> StepResult:
        if self.task is None:
            raise RuntimeError("step() before reset()")
        task = self.task
        entry = str(task.entry_point)
        code = extract_code(reply)
        read = read_tests(code, entry)
        shown = task.metadata.get("shown_code")
        if isinstance(shown, str) and shown.strip():  # a task that shows a (buggy) version of the function
            read.findings.extend(copied_code(code, shown))
        findings = [f.to_dict() for f in read.findings]
        base: dict[str, Any] = {"findings": findings} if findings else {}
        if read.ignored:
            base["ignored_tests"] = [f"line {line}: {why}" for line, why in read.ignored]
        if read.error or not read.tests:
            why = read.error or f"no test calls {entry} and asserts on it"
            details = base | {"reason": "no_tests", "why": why, "solved": False}
            return StepResult([_say(why)], RewardBreakdown(0.0, {"completion": 0.0}, details), done=True)
        results = await asyncio.to_thread(self._run, task, read)
        result = merged(results)
        if any(r.status is RunStatus.SANDBOX_ERROR for r in results):
            details = base | {"reason": "sandbox_error", "status": result.status.value, "solved": False}
            return StepResult([], RewardBreakdown(0.0, {"completion": 0.0}, details), done=True, execution=result)
        train, hidden = self._scores(task, read, results)
        # solved (pass@1): tests that pass on the function and catch every paid mutant
        solved = train.reason == "scored" and len(train.killed) == train.mutants
        details = base | train.details() | {"hidden": hidden.details(), "solved": solved}
        components = {"completion": train.reward}
        if train.reason == "scored":
            components |= {"kill_share": train.kill_share, "kill_share_hidden": hidden.kill_share}
        feedback = _feedback(train, read, results[:REFERENCE_RUNS])
        return StepResult(
            [_say(feedback)] if feedback else [],
            RewardBreakdown(train.reward, components, details),
            done=not feedback,
            execution=result,
        )

    # ---- the run ------------------------------------------------------------------------
    def programs(self, task: Task) -> list[tuple[str, str]]:
        """(label, source) of every program the tests run against, in probe order."""
        ref = [(f"reference {r}", str(task.reference)) for r in range(REFERENCE_RUNS)]
        return ref + [(f"{m.get('family', 'train')}:{m['id']}", m["source"]) for m in task.tests["mutants"]]

    def _run(self, task: Task, read: TestReply) -> list[ExecutionResult]:
        """One sandbox run per program (the reference twice, then each mutant, in parallel):
        the program is the run's loaded code and each test, after the reply's setup, one
        of its scripts. No run holds another program, so no test can compare programs
        (reading the harness's frames, or state kept between scripts)."""
        prelude = task.tests.get("prelude")
        head = f"{prelude.rstrip()}\n\n" if isinstance(prelude, str) and prelude.strip() else ""
        tests = {"format": "script", "tests": [f"{read.setup}\n\n{t.source}\n" for t in read.tests]}
        limits = dataclasses.replace(
            self.settings.limits, test_isolation=self.isolation, test_timeout_s=TEST_LIMIT_S, timeout_s=RUN_LIMIT_S
        )
        warm = warm_imports(read.modules)
        programs = [f"{head}{source.rstrip()}\n{warm}" for _, source in self.programs(task)]
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            return list(pool.map(lambda code: self.settings.execute(code, tests, limits=limits), programs))

    def _scores(
        self, task: Task, read: TestReply, results: list[ExecutionResult]
    ) -> tuple[MutationScore, MutationScore]:
        n = len(read.tests)
        rows = []
        for r in results:
            got = [Outcome(_VERDICT.get(t.status, "fail"), t.duration_s) for t in r.tests[:n]]
            if r.status in (RunStatus.COMPILE_ERROR, RunStatus.RUNTIME_ERROR) and not got:
                got = [Outcome("fail")] * n  # the program itself did not load: every test fails on it
            rows.append(got + [Outcome("timeout", TEST_LIMIT_S)] * (n - len(got)))  # never reported
        labels = [label for label, _ in self.programs(task)]
        refs, by_label = rows[:REFERENCE_RUNS], dict(zip(labels, rows, strict=True))
        out = []
        for family in FAMILIES:
            mutants = {m["id"]: by_label[f"{family}:{m['id']}"] for m in task_mutants(task, family)}
            out.append(score(refs, mutants, TEST_LIMIT_S))
        return out[0], out[1]


WARMED = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "hypothesis"}
"""Modules warmed at load (the standard library and the test libraries): a heavier one
(torch, pandas) keeps paying for its import inside a test's limit, as it always did."""


def warm_imports(modules: list[str]) -> str:
    """Code appended to every program that imports the reply's modules once, as the
    program loads, binding no name and ignoring any failure. The tests' processes are
    forked from the loaded program, so the first test that imports pytest no longer pays
    for it inside its 1 s limit: on a loaded machine that import alone ran past it on the
    reference, and an honest suite was paid -0.5. Verdicts are unchanged: the reply's
    setup still runs before each test (a failing import still fails it); a module imported
    inside one test function is now loaded for the others too."""
    modules = [m for m in modules if m.split(".")[0] in WARMED]
    if not modules:
        return ""
    return (
        f"\nfor __rlvr_module in {modules!r}:\n"
        "    try:\n        __import__(__rlvr_module)\n    except BaseException:\n        pass\n"
        "del __rlvr_module\n"
    )


def merged(results: list[ExecutionResult]) -> ExecutionResult:
    """The runs of one reply as one result for the trace: the first reference run's tests
    and output, every run's resource use, every run's protocol violations."""
    first = results[0]
    return dataclasses.replace(
        first,
        wall_time_s=max(r.wall_time_s for r in results),
        cpu_time_s=sum(r.cpu_time_s for r in results),
        peak_memory_mb=max(r.peak_memory_mb for r in results),
        violations=[v for r in results for v in r.violations],
    )


def _say(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _feedback(train: MutationScore, read: TestReply, reference_runs: list[ExecutionResult]) -> str:
    """What a second attempt can act on: the tests that fail on the function itself (by
    name and exception type only: a message could carry the function's values back, to
    be copied into the next attempt's asserts), or how many wrong versions of it every
    test passes. Empty when every mutant is caught."""
    if train.reason == "fails_reference":
        lines = ["These tests fail on the correct function (fix or remove them):"]
        for j in train.failing_on_reference[:5]:
            bad = [
                r.tests[j] for r in reference_runs if j < len(r.tests) and r.tests[j].status is not TestStatus.PASSED
            ]
            kind = _exception_type(bad[0].message) if bad and bad[0].status is not TestStatus.TIMEOUT else "timed out"
            flaky = " (in one of two runs: it is not deterministic)" if len(bad) == 1 else ""
            lines.append(f"- {read.tests[j].name}: {kind}{flaky}")
        return "\n".join(lines)
    missed = train.mutants - len(train.killed)
    if missed <= 0:
        return ""
    return (
        f"Your tests pass on the correct function and catch {len(train.killed)} of {train.mutants} wrong versions "
        f"of it; {missed} wrong version(s) pass every test. Add tests for the cases they would get wrong "
        "(boundaries, empty and extreme inputs)."
    )


def _exception_type(message: str) -> str:
    """The exception's type name from a test's failure message ('AssertionError: ...')."""
    head = message.strip().splitlines()[-1] if message.strip() else ""
    name = head.split(":", 1)[0].strip()
    return name if name.isidentifier() else "failed"
