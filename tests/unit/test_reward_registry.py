"""The reward-term registry: a contract every registered term keeps, and a term added the
way a plugin adds one (computed, weighed, logged, and its name valid in reward.terms)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from rlvr.config import ConfigError, RewardConfig, RunConfig
from rlvr.envs.settings import check_reward
from rlvr.rewards.base import RewardComponent
from rlvr.rewards.registry import GROUP_REWARDS, REWARDS, TermContext, register_reward, reward_names
from rlvr.rewards.scorer import Scorer, is_code_task
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestResult, TestStatus, Trajectory, Turn

PY = Task(
    id="py/1",
    domain="python",
    prompt="Write f(x) returning twice x.",
    tests={"format": "assert", "cases": ["assert f(2) == 4"]},
    reference="def f(x):\n    return 2 * x\n",
)
MATH = Task(id="m/1", domain="math", prompt="1+1?", tests={"format": "answer", "answer": "2"})
JSON = Task(id="j/1", domain="json", prompt="Give {a: 1}", tests={"format": "json", "schema": {"type": "object"}})


def episode(task: Task, reply: str, *, ids: int = 3, passed: bool = True) -> Trajectory:
    t = Trajectory(task_id=task.id, domain=task.domain, group_id="g", turns=[Turn("assistant", reply)])
    t.completion_ids = list(range(ids))
    if is_code_task(task):
        verdict = TestStatus.PASSED if passed else TestStatus.FAILED
        t.execution = ExecutionResult(RunStatus.OK, tests=[TestResult("t0", verdict)], cpu_time_s=0.01)
    t.reward = RewardBreakdown(1.0 if passed else 0.0)
    return t


CASES = [
    (PY, "```python\ndef f(x):\n    return 2 * x\n```"),
    (PY, ""),
    (MATH, "The answer is \\boxed{2}."),
    (JSON, '{"a": 1}'),
]


def context(wanted: frozenset[str]) -> TermContext:
    return TermContext(RewardConfig(), 64, wanted, lambda task: None)


@pytest.mark.parametrize("name", sorted(set(reward_names()) - {"completion"} - set(GROUP_REWARDS)))
def test_every_registered_term_returns_a_finite_component(name: str) -> None:
    """The contract: on every sample episode it applies to, a term gives a finite value
    in [-1, 1] with a details dict, and applying it twice gives the same value."""
    term = REWARDS[name]
    assert term.doc, f"{name}: the first paragraph of its docstring documents it"
    ctx = context(frozenset({name}))
    applied = 0
    for task, reply in CASES:
        traj = episode(task, reply)
        if not term.applies(task, traj, ctx):
            continue
        applied += 1
        a, b = term.compute(task, traj, ctx), term.compute(task, traj, ctx)
        assert isinstance(a, RewardComponent) and isinstance(a.details, dict)
        assert math.isfinite(a.value) and -1.0 <= a.value <= 1.0, (name, task.id, a)
        assert a.value == b.value
    assert applied, f"{name} applies to none of the sample episodes: add one it does"


def test_the_built_in_names_and_their_order() -> None:
    assert reward_names()[:6] == ["completion", "format", "length", "security", "efficiency", "math"]


def test_names_are_checked_and_taken_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_reward("format")(lambda task, traj, ctx: 0.0)
    with pytest.raises(ValueError, match="already registered"):
        register_reward("completion")(lambda task, traj, ctx: 0.0)
    with pytest.raises(ValueError, match="not an identifier"):
        register_reward("two words")(lambda task, traj, ctx: 0.0)


@pytest.fixture
def docstring_term() -> Iterator[str]:
    """A term as a plugin writes it: 1 when the code has a docstring, Python tasks only,
    computed only when a term weighs it."""

    @register_reward("has_docstring", applies=lambda task, traj, ctx: is_code_task(task), always=False)
    def has_docstring(task: Task, traj: Trajectory, ctx: TermContext) -> float:
        """1.0 when the reply's code carries a docstring."""
        return 1.0 if '"""' in traj.completion_text else 0.0

    try:
        yield "has_docstring"
    finally:
        REWARDS.pop("has_docstring")


def test_a_plugin_term_is_computed_weighed_and_its_name_valid(docstring_term: str) -> None:
    cfg = RunConfig(reward=RewardConfig(terms=[{"name": "completion"}, {"name": docstring_term, "weight": 0.5}]))
    check_reward(cfg)  # the name is valid once registered
    scorer = Scorer(cfg.reward, max_new_tokens=64)
    with_doc = episode(PY, '```python\ndef f(x):\n    """Twice x."""\n    return 2 * x\n```')
    without = episode(PY, "```python\ndef f(x):\n    return 2 * x\n```")
    scorer.score_group([PY, PY], [with_doc, without])
    assert with_doc.reward is not None and without.reward is not None
    assert with_doc.reward.components[docstring_term] == 1.0 and without.reward.components[docstring_term] == 0.0
    assert with_doc.reward.total == pytest.approx(without.reward.total + 0.5)
    # not applicable to a math reply, and not computed where no term weighs it
    m = episode(MATH, "\\boxed{2}")
    Scorer(cfg.reward, max_new_tokens=64).score_group([MATH], [m])
    assert m.reward is not None and docstring_term not in m.reward.components
    plain = episode(PY, '"""doc"""')
    Scorer(RewardConfig(), max_new_tokens=64).score_group([PY], [plain])
    assert plain.reward is not None and docstring_term not in plain.reward.components


def test_an_unknown_term_lists_the_registered_ones(docstring_term: str) -> None:
    with pytest.raises(ConfigError, match=r"reward\.terms\[1\]\.name: no component 'speed'; valid: .*has_docstring"):
        check_reward(RunConfig(reward=RewardConfig(terms=[{"name": "completion"}, {"name": "speed"}])))


def test_the_length_term_reads_the_last_reply_of_a_multi_turn_episode() -> None:
    """Each turn has its own token limit: 64 here. An episode of two 40-token replies and a
    200-token tool answer is not overlong; a last reply of 64 tokens is."""
    task = Task(id="t", domain="python", prompt="p")
    turns = [Turn("user", "p"), Turn("assistant", "a", token_ids=[1] * 40, trainable=True), Turn("user", "tool")]
    long_episode = Trajectory(task_id="t", domain="python", group_id="g", completion_ids=[1] * 280)
    long_episode.turns = [*turns, Turn("assistant", "b", token_ids=[1] * 40, trainable=True)]
    term = REWARDS["length"].fn
    ctx = TermContext(RewardConfig(overlong_cache=16), 64, frozenset({"length"}), lambda task: None)
    assert term(task, long_episode, ctx).value == 0.0  # 40 tokens: before the ramp (48..64)
    long_episode.turns[-1] = Turn("assistant", "b", token_ids=[1] * 56, trainable=True)
    assert term(task, long_episode, ctx).value == pytest.approx(-0.5)  # (56 - 48) / 16
