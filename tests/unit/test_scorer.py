"""Efficiency sub-scores by hand, and the scorer: components, terms, gates, domains, GDPO,
hack policy, metrics per component and per domain."""

import pytest

from rlvr.config import RewardConfig, TermConfig
from rlvr.rewards.efficiency import duplicated_share, efficiency_reward, redundancy_score, unreachable_statements
from rlvr.rewards.scorer import Scorer
from rlvr.trace.store import summarize_step
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestResult, TestStatus, Trajectory, Turn

REF = "def f(x):\n    return x * 2\n"
TASK = Task(
    id="py/f",
    domain="python",
    prompt="double",
    tests={"format": "assert", "tests": ["assert f(3) == 6", "assert f(7) == 14"]},
    reference=REF,
)
MATH = Task(id="m/1", domain="math", prompt="1+1?", tests={"format": "answer", "answer": "2"})


def run(passed: int, total: int = 2, cpu: float = 0.01, mem: float = 20.0) -> ExecutionResult:
    tests = [TestResult(f"t{i}", TestStatus.PASSED if i < passed else TestStatus.FAILED) for i in range(total)]
    return ExecutionResult(RunStatus.OK, tests, cpu_time_s=cpu, peak_memory_mb=mem)


def traj(reply: str, result: ExecutionResult | None, task: Task = TASK, tokens: int = 10) -> Trajectory:
    value = (result.passed / result.total) if result else 0.0
    return Trajectory(
        task_id=task.id,
        domain=task.domain,
        group_id="g",
        turns=[Turn("user", task.prompt), Turn("assistant", reply, trainable=True)],
        completion_ids=[1] * tokens,
        execution=result,
        reward=RewardBreakdown(value, {"completion": value}),
    )


def scorer(**kw: object) -> Scorer:
    calls: list[str] = []

    def execute(code: str, tests: dict) -> ExecutionResult:
        calls.append(code)
        return run(2, cpu=0.01, mem=20.0)

    s = Scorer(RewardConfig(**kw), max_new_tokens=100, execute=execute)
    s.calls = calls  # type: ignore[attr-defined]
    return s


# ---- efficiency by hand -------------------------------------------------------------------


def test_unreachable_and_duplicates() -> None:
    assert unreachable_statements("def f():\n    return 1\n    x = 2\n    y = 3\n") == 2
    assert unreachable_statements("if False:\n    a = 1\nwhile 0:\n    b = 2\n") == 2
    assert unreachable_statements("def f(x):\n    if x:\n        return 1\n    return 2\n") == 0
    # 4 non-trivial lines, one repeats another -> 1/4
    code = "total = total + 1\ntotal = total + 1\nprint(total)\nresult = 42\n"
    assert duplicated_share(code) == pytest.approx(0.25)
    assert duplicated_share("pass\npass\nreturn\n") == 0.0  # trivial lines do not count


def test_redundancy_length_ratio() -> None:
    # reference 2 lines; 8 lines -> ratio 4 -> length score 1 - (4-2)/4 = 0.5
    long = "def f(x):\n" + "".join(f"    a{i} = {i}\n" for i in range(6)) + "    return x * 2\n"
    score, details = redundancy_score(long, REF)
    assert details["length_ratio"] == 4.0
    assert score == pytest.approx((1.0 + 1.0 + 0.5) / 3)


def test_efficiency_time_and_memory_against_reference() -> None:
    # floor 0.02: time (0.01+0.02)/(0.13+0.02) = 0.2; memory (20+8)/(48+8) = 0.5
    r = efficiency_reward(REF, run(2, cpu=0.13, mem=48.0), reference=REF, reference_result=run(2, cpu=0.01, mem=20.0))
    assert r.details["scores"] == {"redundancy": 1.0, "time": 0.2, "memory": 0.5}
    assert r.value == pytest.approx((1.0 + 0.2 + 0.5) / 3)
    faster = efficiency_reward(REF, run(2, cpu=0.001, mem=10.0), reference=REF, reference_result=run(2))
    assert faster.value == 1.0  # never above 1
    alone = efficiency_reward(REF, run(2), reference=None, reference_result=None)
    assert set(alone.details["scores"]) == {"redundancy"}


# ---- the scorer ---------------------------------------------------------------------------


def test_default_terms_give_completion_and_log_the_rest() -> None:
    t = traj("```python\ndef f(x):\n    return x * 2\n```", run(1))
    b = scorer().score(TASK, t)
    assert b.total == 0.5
    assert b.components["completion"] == 0.5
    assert {"security", "length"} <= set(b.components)  # computed and logged, not weighted
    assert b.flags == []


def test_weights_gates_and_reference_cached() -> None:
    terms = [
        TermConfig(name="completion"),
        TermConfig(name="security", weight=0.5),
        TermConfig(name="efficiency", weight=0.2, gate="all_tests_pass"),
    ]
    s = scorer(terms=terms)
    good = s.score(TASK, traj("def f(x):\n    return x * 2\n", run(2)))
    # completion 1 + security 0 + efficiency 1 * 0.2
    assert good.total == pytest.approx(1.2)
    bad = s.score(TASK, traj("import os\nos.system('ls')\ndef f(x):\n    return 0\n", run(0)))
    # completion 0 + security -1.0 * 0.5; efficiency gated out; then f returning a constant
    # is a strong finding: capped at 0 (it is below) less reward.hack_penalty 0.5
    assert bad.total == pytest.approx(-1.0) and bad.flags == ["constant_answer"]
    assert bad.details["gated_out"] == ["efficiency"]
    assert len(s.calls) == 1  # the reference ran once for both


def test_clip_and_domain_restricted_terms() -> None:
    terms = [TermConfig(name="completion", weight=3.0), TermConfig(name="math", domains=["math"])]
    s = scorer(terms=terms, clip=(-1.0, 2.0))
    assert s.score(TASK, traj("def f(x): return x*2", run(2))).total == 2.0  # 3.0 clipped
    m = traj("so \\boxed{2}", None, task=MATH)
    m.reward = RewardBreakdown(1.0, {"completion": 1.0})
    b = s.score(MATH, m)
    assert b.components["math"] == 1.0
    assert b.total == 2.0  # 3 * 1 + 1, clipped


def test_hack_caps_reward_at_zero_or_only_flags() -> None:
    code = "import sys\nsys.exit(0)\ndef f(x):\n    return x * 2\n"
    zeroed = scorer().score(TASK, traj(code, run(2)))
    # a strong finding in the code: capped at 0, less reward.hack_penalty (0.5), so that it
    # earns less than an honest wrong answer (0)
    assert zeroed.flags == ["early_exit"] and zeroed.total == -0.5
    assert zeroed.details["hack_action"] == "reward 1.000 capped at 0 less 0.5 (strong: early_exit)"
    assert zeroed.details["hacks"][0]["line"] == 2
    capped = scorer(hack_penalty=0.0).score(TASK, traj(code, run(2)))
    assert capped.total == 0.0 and capped.details["hack_action"] == "reward 1.000 capped at 0 (strong: early_exit)"
    flagged = scorer(on_hack="flag").score(TASK, traj(code, run(2)))
    assert flagged.flags == ["early_exit"] and flagged.total == 1.0
    ignored = scorer(hack_ignore=["early_exit"]).score(TASK, traj(code, run(2)))
    assert ignored.flags == [] and ignored.total == 1.0
    timeout = ExecutionResult(RunStatus.TIMEOUT, [TestResult("t", TestStatus.TIMEOUT)])
    t = traj(code, timeout)
    t.reward = RewardBreakdown(-0.5, {"completion": -0.5})
    assert scorer(hack_penalty=0.0).score(TASK, t).total == -0.5  # a negative reward is not raised to 0
    assert scorer().score(TASK, t).total == -1.0  # and the penalty comes on top


def test_gdpo_group_normalisation() -> None:
    # completion [1, 0], format [1, 1] (constant -> 0 after normalising): totals +-0.707
    terms = [TermConfig(name="completion"), TermConfig(name="format", weight=10.0)]
    s = scorer(terms=terms, normalize="group")
    group = [traj("```python\ndef f(x): return x*2\n```", run(2)), traj("```python\ndef f(x): return x\n```", run(0))]
    s.score_group([TASK, TASK], group)
    totals = [t.reward.total for t in group]  # type: ignore[union-attr]
    assert totals[0] == pytest.approx(0.7071, abs=1e-3) and totals[1] == pytest.approx(-0.7071, abs=1e-3)
    assert group[0].reward.components["completion"] == 1.0  # type: ignore[union-attr]  # raw values logged


def test_length_component_uses_generation_limit() -> None:
    s = scorer(overlong_cache=20, terms=[TermConfig(name="completion"), TermConfig(name="length")])
    # 100 max, cache 20: 90 tokens -> -0.5
    b = s.score(TASK, traj("def f(x): return x*2", run(2), tokens=90))
    assert b.components["length"] == pytest.approx(-0.5) and b.total == pytest.approx(0.5)


def test_metrics_per_component_domain_and_hack() -> None:
    s = scorer()
    a = traj("def f(x): return x*2", run(2))
    b = traj("import sys\nsys.exit(0)", run(2))
    m = traj("\\boxed{2}", None, task=MATH)
    m.reward = RewardBreakdown(1.0, {"completion": 1.0})
    s.score(TASK, a), s.score(TASK, b), s.score(MATH, m)
    out = summarize_step([a, b, m])
    assert out["hack/rate"] == pytest.approx(1 / 3) and out["hack/early_exit"] == pytest.approx(1 / 3)
    assert out["reward/pass_rate"] == 1.0
    # the early exit: capped at 0 less reward.hack_penalty 0.5, so python's mean is (1 - 0.5) / 2
    assert out["domain/python/reward/mean"] == 0.25 and out["domain/math/reward/mean"] == 1.0
    assert out["domain/python/hack/rate"] == 0.5
    assert out["reward/completion"] == 1.0 and "domain/python/reward/security" in out


def test_config_rejects_bad_reward_settings() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="'no such' is not a component name"):
        TermConfig(name="no such")
    with pytest.raises(ValidationError, match="clip low"):
        RewardConfig(clip=(1.0, 0.0))
    with pytest.raises(ValidationError, match="at least one term"):
        RewardConfig(terms=[])
    with pytest.raises(ValidationError, match="JSON Schema"):
        RewardConfig(format={"json_schema": {"type": "nonsense"}})
    with pytest.raises(ValidationError, match="regular expression"):
        RewardConfig(format={"regex": "("})


def test_terms_may_name_an_environments_own_components() -> None:
    """itops computes 'safety' itself: a term may weigh it; a name nothing computes is
    refused when the scorer is built, with the valid names."""
    from rlvr.config import ConfigError, RunConfig
    from rlvr.envs.settings import check_reward

    ops = Task(id="ops/1", domain="itops", prompt="fix it", tests={"format": "itops"})
    t = Trajectory(task_id=ops.id, domain="itops", group_id="g", turns=[Turn("assistant", "rm -rf /")])
    t.reward = RewardBreakdown(0.25, {"completion": 0.25, "goal": 0.75, "safety": -0.5})
    terms = [{"name": "completion"}, {"name": "safety", "weight": 2.0, "domains": ["itops"]}]
    b = Scorer(RewardConfig(terms=terms), max_new_tokens=100).score(ops, t)
    assert b.total == pytest.approx(0.25 + 2.0 * -0.5) and b.components["safety"] == -0.5
    code = traj("def f(x):\n    return x * 2\n", run(2))
    assert Scorer(RewardConfig(terms=terms), max_new_tokens=100).score(TASK, code).total == 1.0  # not itops: no term
    check_reward(RunConfig(reward=RewardConfig(terms=terms)))
    with pytest.raises(
        ConfigError, match=r"reward.terms\[1\].name: no component 'speed'; valid: completion, .*safety \(itops\)"
    ):
        check_reward(RunConfig(reward=RewardConfig(terms=[{"name": "completion"}, {"name": "speed"}])))
