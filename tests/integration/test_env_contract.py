"""One contract over every domain rlvr registers (tests/unit holds no sandbox, so it is
here): each has a bundled task set; its tasks pass the environment's own check and a
task with its tests removed does not; the reference reply earns full credit and an
empty one nothing, each in a fresh episode; an episode starts from the task's prompt and
reports no component the environment does not declare. A new domain is covered by
registering it and naming its bundled set in SETS."""

from __future__ import annotations

import dataclasses
import json

import pytest

import rlvr.envs  # noqa: F401  (every built-in environment registers itself)
from rlvr.envs.base import ENVS, EnvSettings, check_task, make_env, run_sync
from rlvr.tasks import load_tasks
from rlvr.types import Task

SETS = {
    "python": "bundled:python_functions",
    "repair": "bundled:code_repair",
    "data": "bundled:data_analysis",
    "cpp": "bundled:programs_cpp",
    "javascript": "bundled:programs_javascript",
    "math": "bundled:math_word",
    "reasoning": "bundled:reasoning_gym",
    "json": "bundled:json_extract",
    "trading": "bundled:trading",
    "itops": "bundled:itops",
    "repository": "bundled:repository",
    "test_writing": "bundled:test_writing",
}
# the domains rlvr.envs registers; repo_agent (rlvr.repos.agent, a plugin that needs a built
# repository) runs the same contract in tests/integration/test_repo_agent.py
BUILTIN = sorted(d for d, cls in ENVS.items() if getattr(cls, "__module__", "").startswith("rlvr.envs."))
PER_DOMAIN = 2  # tasks per domain


def test_every_builtin_domain_has_a_set_here() -> None:
    assert sorted(SETS) == BUILTIN


def full_credit_reply(task: Task) -> str:
    """The task's reference (test writing: its gold tests), or where a set ships none, a reply built from its tests:
    the expected answer (math), the expected object (json), a program that prints each
    case's expected output, held-out cases included (data)."""
    t = task.tests
    if t.get("format") == "mutants":  # test writing: the gold tests, which catch every mutant
        return f"```python\n{task.metadata['reference_tests']}\n```"
    if task.reference:
        return task.reference
    if t.get("format") == "answer":
        return f"So the answer is \\boxed{{{t['answer']}}}."
    if t.get("format") == "json":
        return f"<answer>{json.dumps(t['expected'])}</answer>"
    if t.get("format") == "stdio":
        table = {c["stdin"]: c["stdout"] for c in [*t["cases"], *t.get("held_out", [])]}
        return f"```python\nimport sys\nprint({table!r}[sys.stdin.read()], end='')\n```"
    raise AssertionError(f"{task.id}: no reference, and no way to build a full-credit reply here")


def _tasks(domain: str) -> list[Task]:
    tasks = [t for t in load_tasks(SETS[domain]) if t.domain == domain]
    assert tasks, f"{SETS[domain]} has no task of domain {domain}"
    return tasks[:PER_DOMAIN]


def _episode(task: Task, reply: str) -> tuple[list[dict[str, str]], float, set[str]]:
    env = make_env(task.domain, EnvSettings())
    opening = run_sync(env.reset(task))
    result = run_sync(env.step(reply))
    assert result.reward is not None, f"{task.id}: a step that ends the episode gives a reward"
    return opening, result.reward.total, set(result.reward.components)


@pytest.mark.parametrize("domain", BUILTIN)
def test_domain_contract(domain: str) -> None:
    cls = ENVS[domain]
    assert isinstance(cls.components, tuple)
    for task in _tasks(domain):
        check_task(task)
        with pytest.raises(ValueError, match=task.id):
            cls.check_task(dataclasses.replace(task, tests={}))
        opening, full, comps = _episode(task, full_credit_reply(task))
        assert opening and task.prompt in opening[-1]["content"], f"{task.id}: the episode opens with the task"
        if domain == "test_writing":  # full credit, and a tenth more at most for tests that each catch a new mutant
            assert 1.0 <= full <= 1.1, f"{task.id}: the gold tests earn full credit, got {full}"
        else:
            assert full == pytest.approx(1.0), f"{task.id}: the reference earns full credit, got {full}"
        assert comps - {"completion"} <= set(cls.components), f"{task.id}: undeclared components {comps}"
        _, empty, _ = _episode(task, "")
        assert empty <= 0.0, f"{task.id}: an empty reply earns nothing, got {empty}"
