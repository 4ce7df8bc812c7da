"""Generated tests as a verifier: pick one of a group's candidate solutions by the tests
the policy itself wrote for the same function (CodeT's dual agreement, Chen et al. 2022).

    tests    = pooled_tests(test_replies, entry)        # every readable, unflagged test, once
    passes   = pass_matrix(task, solutions, tests, settings)   # the sandbox: solution x test
    pick     = consensus_pick(passes)                   # None: no test passed anywhere

Solutions that pass the same set of tests agree with each other and with those tests; a
set's score is how many solutions share it times how many tests it holds, and the pick is
the first solution of the best set. Neither side is trusted alone: a wrong test that many
wrong solutions pass scores only as high as the agreement behind it.

A test reply is read by the test-writing domain's reader (rlvr.rewards.test_guards): a
reply with a hack finding (introspection, unseeded randomness, a clock) gives no tests,
and each test is run as that domain runs it, after the reply's setup, one script each,
against one solution loaded once per sandbox run."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

from rlvr.envs.base import EnvSettings
from rlvr.envs.python_code import with_prelude
from rlvr.envs.test_writing import ISOLATION, PARALLEL_RUNS, RUN_LIMIT_S, TEST_LIMIT_S
from rlvr.rewards.extract import extract_code
from rlvr.rewards.test_guards import read_tests
from rlvr.types import Task, TestStatus

MAX_TESTS = 64  # tests pooled per task at most (in reply order): bounds a solution's sandbox run


def pooled_tests(replies: list[str], entry: str, limit: int = MAX_TESTS) -> list[str]:
    """The scripts of every test in `replies` (each its reply's setup, then the test),
    each once, in order, at most `limit`; a reply that cannot be read or carries a hack
    finding gives none."""
    out: list[str] = []
    for reply in replies:
        read = read_tests(extract_code(reply), entry)
        if read.error or read.findings:
            continue
        for t in read.tests:
            script = f"{read.setup}\n\n{t.source}\n".lstrip("\n")
            if script not in out:
                out.append(script)
    return out[:limit]


def solution_code(task: Task, reply: str) -> str:
    """A solution reply's program as the Python environment runs it."""
    return with_prelude(task, extract_code(reply)).rstrip() + "\n"


def pass_matrix(task: Task, solutions: list[str], tests: list[str], settings: EnvSettings) -> list[list[bool]]:
    """Per solution (a program), per test script: whether it passed. One sandbox run per
    solution, several at once; a solution that does not load fails every test."""
    if not tests:
        return [[] for _ in solutions]
    spec = {"format": "script", "tests": tests}
    limits = dataclasses.replace(
        settings.limits, test_isolation=ISOLATION, test_timeout_s=TEST_LIMIT_S, timeout_s=RUN_LIMIT_S
    )
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        results = list(pool.map(lambda code: settings.execute(code, spec, limits=limits), solutions))
    rows = []
    for r in results:
        got = [t.status is TestStatus.PASSED for t in r.tests[: len(tests)]]
        rows.append(got + [False] * (len(tests) - len(got)))
    return rows


def consensus_pick(passes: list[list[bool]]) -> int | None:
    """The index of the solution CodeT's dual agreement picks from `passes` (solution x
    test): solutions grouped by the tests they pass, each group scored members x tests,
    the first member of the best group (ties: the group whose first member comes first).
    None when no solution passes any test: the tests say nothing."""
    groups: dict[tuple[bool, ...], list[int]] = {}
    for i, row in enumerate(passes):
        groups.setdefault(tuple(row), []).append(i)
    scored = [(len(members) * sum(key), -members[0]) for key, members in groups.items()]
    if not scored or max(scored)[0] == 0:
        return None
    return -max(scored)[1]
