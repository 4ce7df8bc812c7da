"""No-op baselines (issue 17 part 4): on every task of every bundled set, an empty reply
and a reply that does nothing earn at most 0 under the default reward config, judged by
`score_completion` exactly as training judges; what held at the start is a constraint
(breaking it costs), not credit; and the bundled correct behaviour still earns 1.

Every task of every set is scored, the code sets too (their sandbox runs go through a
small thread pool: about half a minute for all of them on two cores); of bundled:repos,
the tasks of toolz, the one project the test session builds (`toolz_repo`), since a
fresh machine has none built."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import replace

import pytest

import rlvr.repos.agent  # noqa: F401  registers repo_agent, a plugin's domain (bundled:repos), in any test order
from rlvr.config import RewardConfig, RunConfig
from rlvr.envs.python_code import noop_program
from rlvr.envs.scoring import score_completion
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks
from rlvr.types import Task

SETS = sorted(p.stem for p in BUNDLED_DIR.glob("*.jsonl"))
CODE_DOMAINS = ("python", "repair", "data", "cpp", "javascript")


def _fence(task: Task, code: str) -> str:
    lang = str(task.metadata.get("language", "python"))
    return f"```{lang}\n{code}```"


def noop_replies(task: Task) -> dict[str, str]:
    """An empty reply and the replies that do nothing in the task's domain."""
    replies = {"empty": "", "prose": "I am not sure how to do this, so I will leave it as it is."}
    d = task.domain
    if d in CODE_DOMAINS:
        lang = str(task.metadata.get("language", "python"))
        replies["stub"] = _fence(task, noop_program(task, lang))
        if lang == "python":
            replies["pass"] = _fence(task, "pass\n")
    elif d == "itops":
        replies["no commands"] = "The system looks fine to me; nothing needs to change."
        replies["read only"] = "```bash\nls /etc\ndf -h\ndpkg -l\nsystemctl status sshd\n```"
        replies["exit"] = "```bash\nexit\n```"
    elif d == "trading":
        replies["done"] = '{"tool": "done"}'
        replies["look then stop"] = '{"tool": "get_account"}\n{"tool": "done"}'
    elif d in ("math", "reasoning"):
        replies["non-answer"] = "<answer>I don't know.</answer>"
        replies["boxed nothing"] = "The answer is \\boxed{}"
    elif d == "json":
        replies["empty object"] = "```json\n{}\n```"
        replies["refusal"] = "<answer>I cannot extract this.</answer>"
    elif d == "repository":
        replies["empty diff"] = "```diff\n```"
    return replies


def _violations(task: Task, cfg: RunConfig) -> list[tuple[str, str, float]]:
    out = []
    for name, reply in noop_replies(task).items():
        total = score_completion(task, reply, cfg).reward.total  # type: ignore[union-attr]
        if total > 0:
            out.append((task.id, name, total))
    return out


def _violations_of(tasks: list[Task]) -> list[tuple[str, str, float]]:
    """One worker's share: a thread pool overlaps the sandbox's runs with the drawing."""
    cfg = RunConfig()
    with ThreadPoolExecutor(4) as pool:
        return [v for vs in pool.map(lambda t: _violations(t, cfg), tasks) for v in vs]


@pytest.mark.parametrize("name", SETS)
def test_doing_nothing_earns_at_most_zero_on_every_bundled_task(name: str, request: pytest.FixtureRequest) -> None:
    tasks = load_tasks(f"bundled:{name}")
    if name == "repos":  # the repositories must be built: toolz's tasks, on the session's own build of it
        cache, repo = request.getfixturevalue("toolz_repo")
        tasks = [replace(t, tests={**t.tests, "cache": str(cache)}) for t in tasks if t.tests["repo"] == repo.slug]
        assert len(tasks) >= 40
    # the hidden tests' drawing holds the GIL: two processes (spawned: this one runs threads)
    # share the bigger sets, each drawing what a training run would draw for its tasks
    if len(tasks) >= 100:
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as procs:
            found = [v for vs in procs.map(_violations_of, [tasks[0::2], tasks[1::2]]) for v in vs]
    else:
        found = _violations_of(tasks)
    assert not found, f"{len(found)} no-op replies earn reward on {name}: {found[:10]}"


def _correct_reply(task: Task) -> str | None:
    if task.reference:
        return task.reference
    if task.domain == "math":
        return f"<answer>{task.tests['answer']}</answer>"
    if task.domain == "json":
        return "```json\n" + json.dumps(task.tests["expected"]) + "\n```"
    return None


@pytest.mark.parametrize("name", ["itops", "trading", "math_word", "json_extract", "reasoning_gym", "repository"])
def test_correct_behaviour_still_earns_full_reward(name: str) -> None:
    cfg = RunConfig()
    tasks = load_tasks(f"bundled:{name}")
    with ThreadPoolExecutor(4) as pool:
        totals = list(pool.map(lambda t: score_completion(t, str(_correct_reply(t)), cfg).reward.total, tasks))  # type: ignore[union-attr]
    short = [(t.id, v) for t, v in zip(tasks, totals, strict=True) if v != 1.0]
    assert not short, short[:10]


def _itops(kind: str) -> Task:
    return next(t for t in load_tasks("bundled:itops") if t.id == f"itops/{kind}/0")


def test_itops_conditions_held_at_the_start_are_constraints() -> None:
    cfg = RunConfig()
    change = _itops("change")  # goal: the new setting live, and the service still enabled (it is at the start)
    r = score_completion(change, "```bash\nsystemctl disable webapp\n```", cfg).reward
    assert r is not None and r.total == -0.5  # a kept condition broken: CONSTRAINT_PENALTY
    assert r.components["constraints"] == -0.5 and r.components["goal"] == 0.0
    assert r.details["completion"]["constraints_broken"] == ["service_enabled"]
    full = score_completion(change, str(change.reference), cfg).reward
    assert full is not None and full.total == 1.0 and full.components["constraints"] == 0.0
    # the goal done but a kept condition broken: less than a clean solution
    broke_reply = str(change.reference).removesuffix("```") + "systemctl disable webapp\n```"
    broke = score_completion(change, broke_reply, cfg)
    assert broke.reward is not None and broke.reward.total == 0.5
    assert "constraints" not in score_completion(_itops("install"), "", cfg).reward.components  # type: ignore[union-attr]


def _trading_task(goal: dict[str, object]) -> Task:
    tests = {
        "format": "trading",
        "account": {"cash": 1000.0, "positions": {"ACME": 10}},
        "quotes": {"ACME": {"bid": 9.9, "ask": 10.0}},
        "rules": {},
        "goal": goal,
    }
    return Task(id="t/held", domain="trading", prompt="Keep at least 500 in cash.", tests=tests)


def test_trading_goal_that_holds_at_the_start_is_a_constraint() -> None:
    cfg = RunConfig()
    task = _trading_task({"type": "cash_at_least", "amount": 500})
    idle = score_completion(task, '{"tool": "done"}', cfg).reward
    assert idle is not None and idle.total == 0.0 and idle.components["constraints"] == 0.0
    spend = '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 60}\n{"tool": "done"}'
    broke = score_completion(task, spend, cfg).reward
    assert broke is not None and broke.total == -0.5 and broke.components["goal"] == 0.0
    reach = _trading_task({"type": "cash_at_least", "amount": 1050})  # not met at the start: credit as before
    sell = '{"tool": "place_order", "symbol": "ACME", "side": "sell", "qty": 10}\n{"tool": "done"}'
    assert score_completion(reach, sell, cfg).reward.total == 1.0  # type: ignore[union-attr]


def test_reasoning_token_credit_for_any_answer_is_not_paid() -> None:
    """Credit is exact: the dataset's token credit for any answer (0.01, 0.05 for a
    well-formed wrong fraction) and its letter-by-position credit are kept in the details
    and not paid; the right answer earns 1."""
    cfg = RunConfig()
    tasks = load_tasks("bundled:reasoning_gym")
    frac = next(t for t in tasks if t.tests["dataset"] == "fraction_simplification")  # 0.01 for any answer
    idle = score_completion(frac, "<answer>I don't know.</answer>", cfg).reward
    assert idle is not None and idle.total == 0.0 and idle.details["completion"]["raw_score"] == 0.01
    wrong = score_completion(frac, "<answer>$\\frac{1}{2}$</answer>", cfg).reward  # well formed, wrong: 0.05 raw
    assert wrong is not None and wrong.total == 0.0 and wrong.details["completion"]["raw_score"] == 0.05
    spell = next(t for t in tasks if t.id == "reasoning/spell_backward/3")  # letters matched by position earn credit
    prose = score_completion(spell, "I am not sure how to do this.", cfg).reward
    assert prose is not None and prose.total == 0.0
    right = score_completion(frac, str(frac.reference), cfg).reward
    assert right is not None and right.total == 1.0


def test_code_tests_a_stub_already_passes_earn_no_credit() -> None:
    cfg = RunConfig(reward=RewardConfig(hidden_tests=0))  # the task's own tests, counted by hand below
    task = next(t for t in load_tasks("bundled:python_functions") if t.id == "py/second_largest")
    drawn = score_completion(task, "```python\ndef second_largest(xs):\n    return None\n```", RunConfig()).reward
    # with drawn tests too (some of them expect None): no completion; the stub reads none of
    # its arguments (constant_answer, strong), so the hack penalty takes it below 0
    assert drawn is not None and drawn.components["completion"] == 0.0 and drawn.total == -0.5
    # three of its seven tests expect None: a stub passes them, and earns nothing for it
    no_penalty = RunConfig(reward=RewardConfig(hidden_tests=0, hack_penalty=0.0))
    stub = score_completion(task, "```python\ndef second_largest(xs):\n    return None\n```", no_penalty).reward
    assert stub is not None and stub.total == 0.0 and stub.details["completion"]["baseline_passed"] == 3
    correct = (
        "```python\ndef second_largest(xs):\n    s = sorted(set(xs))\n    return s[-2] if len(s) > 1 else None\n```"
    )
    full = score_completion(task, correct, cfg).reward
    assert full is not None and full.total == 1.0
    partial = "```python\ndef second_largest(xs):\n    return sorted(xs)[-2] if len(xs) > 1 else None\n```"
    p = score_completion(task, partial, cfg).reward  # right on the four others, wrong on [4, 4] (a None case)
    assert p is not None and p.total == 0.75  # (6 passed - 3 a stub passes) / (7 - 3)
