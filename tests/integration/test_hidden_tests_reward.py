"""Hidden tests drawn from the reference, in the reward (`reward.hidden_tests`): against
the real sandbox, a reply that special-cases the visible tests on top of a half-right
attempt earns exactly what the attempt earns, the reference earns 1, and a short training
run draws them every step (the same tests for the same seed and step)."""

from __future__ import annotations

from rlvr.config import RunConfig, load_config
from rlvr.envs.scoring import score_completion
from rlvr.rewards.hidden_tests import hidden_tests, with_hidden_tests
from rlvr.tasks import load_tasks
from rlvr.types import Task

ATTEMPT = "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n    return a\n"
SPECIAL = (
    "def fibonacci(n):\n"
    "    known = {0: 0, 1: 1, 2: 1, 3: 2, 7: 13, 10: 55, 20: 6765}\n"
    "    if n in known:\n        return known[n]\n"
    "    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n    return a\n"
)


def _fib() -> Task:
    return next(t for t in load_tasks("bundled:python_functions") if t.id == "py/fibonacci")


def _completion(task: Task, code: str) -> float:
    r = score_completion(task, f"```python\n{code}```", RunConfig()).reward
    assert r is not None
    return float(r.components["completion"])


def test_special_cases_on_top_of_an_attempt_earn_nothing_beyond_the_attempt() -> None:
    task = _fib()
    drawn = with_hidden_tests(task, 20, seed=0, step=0)
    assert drawn.metadata["hidden_tests"] == 20 and drawn.tests["held_out"] != task.tests["held_out"]
    assert drawn.tests["tests"] == task.tests["tests"] and drawn.prompt == task.prompt  # the policy sees the same
    attempt, special = _completion(drawn, ATTEMPT), _completion(drawn, SPECIAL)
    assert special == attempt < 1.0  # the visible tests pay nothing: only the drawn ones count
    assert _completion(drawn, str(task.reference)) == 1.0
    # with the task's own held-out tests, the special cases pay (what this closes)
    assert _completion(task, SPECIAL) > _completion(task, ATTEMPT)


def test_the_same_seed_and_step_draw_the_same_tests() -> None:
    task = _fib()
    assert hidden_tests(task, seed=3, step=5) == hidden_tests(task, seed=3, step=5)
    assert hidden_tests(task, seed=3, step=5) != hidden_tests(task, seed=3, step=6)
    assert with_hidden_tests(task, 0, seed=3, step=5) is task


def test_a_training_run_draws_hidden_tests_each_step(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rlvr.train.loop import train

    cfg = load_config(
        None,
        [
            "model.name_or_path=tiny-random", "tasks.source=bundled:python_functions", "train.steps=2",
            "train.prompts_per_step=2", "algo.group_size=2", "generation.max_new_tokens=8",
            "eval.before_training=false", "eval.after_training=false", "reward.hidden_tests=20",
            f"output_dir={tmp_path}", "name=hidden",
        ],
    )  # fmt: skip
    train(cfg, quiet=True)
    from rlvr.trace.query import query

    run = str(tmp_path / "hidden" / "traces")
    _, rows = query(run, "SELECT step, count(*), count(DISTINCT name) FROM tests WHERE held_out GROUP BY step")
    # each step: its trajectories ran 20 drawn tests each (a float-valued task, drawn
    # nothing, would keep its own 3: the bundled set has 5 of 308)
    assert sorted(r[0] for r in rows) == [1, 2] and all(r[2] == 20 and r[1] >= 40 for r in rows), rows
