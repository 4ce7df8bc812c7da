"""Real benchmark data through the sandbox: HumanEval's 164 canonical solutions pass,
and each fails with its body replaced by `return None`."""

from rlvr.sandbox import Limits, execute_many
from rlvr.tasks.humaneval import humaneval_tests, load_humaneval

LIMITS = Limits(timeout_s=10.0, memory_mb=512)


def test_humaneval_canonical_pass_and_stubs_fail() -> None:
    problems = load_humaneval()
    assert len(problems) == 164
    suites = [humaneval_tests(p["test"], p["entry_point"]) for p in problems]
    assert sum(s["format"] == "assert" for s in suites) >= 150
    good = execute_many(
        [(p["prompt"] + p["canonical_solution"], s) for p, s in zip(problems, suites, strict=True)], LIMITS, workers=4
    )
    failing = [
        (p["task_id"], r.status.value, [t.message for t in r.tests if t.status.value != "PASSED"][:2])
        for p, r in zip(problems, good, strict=True)
        if r.total == 0 or r.passed != r.total
    ]
    assert failing == []
    stubs = execute_many(
        [(p["prompt"] + "    return None\n", s) for p, s in zip(problems, suites, strict=True)], LIMITS, workers=4
    )
    passing = [p["task_id"] for p, r in zip(problems, stubs, strict=True) if r.passed == r.total]
    assert passing == []


def test_bundled_humaneval_tasks_score_a_reply_that_writes_the_function_alone() -> None:
    """`bundled:humaneval`: a reply holding only the function (no imports, no helpers)
    is scored as HumanEval runs it, the prompt's code before it (`tests.prelude`)."""
    import asyncio

    from rlvr.envs import EnvSettings, make_env
    from rlvr.envs.base import check_task
    from rlvr.tasks import load_tasks

    tasks = load_tasks("bundled:humaneval", check=check_task)
    assert len(tasks) == 164 and {t.domain for t in tasks} == {"python"}
    by_id = {p["task_id"]: p for p in load_humaneval()}
    settings = EnvSettings(limits=LIMITS)

    def function_only(task_id: str) -> str:
        p = by_id[task_id]
        start = p["prompt"].rfind(f"def {p['entry_point']}(")
        return "```python\n" + p["prompt"][start:] + p["canonical_solution"] + "```"

    async def score(task, reply: str) -> float:  # type: ignore[no-untyped-def]
        env = make_env(task.domain, settings)
        await env.reset(task)
        return (await env.step(reply)).reward.total

    async def all_scores() -> list[float]:
        sem = asyncio.Semaphore(4)

        async def one(t):  # type: ignore[no-untyped-def]
            async with sem:
                return await score(t, function_only(t.id))

        return list(await asyncio.gather(*(one(t) for t in tasks)))

    scores = asyncio.run(all_scores())
    assert [t.id for t, s in zip(tasks, scores, strict=True) if s < 1.0] == []
    with_prelude = [t for t in tasks if "prelude" in t.tests]
    assert len(with_prelude) >= 20  # typing imports and helper functions
    assert "from typing import List" in next(t for t in with_prelude if t.id == "HumanEval/0").tests["prelude"]
