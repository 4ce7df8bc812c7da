"""The Python environment judged in the sandbox: rewards and the feedback that names the failing tests."""

from __future__ import annotations

from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import run_sync
from tests.unit.test_envs import TASK


def test_python_env_rewards() -> None:
    settings = EnvSettings(system_prompt="sys")
    env = make_env("python", settings)
    msgs = run_sync(env.reset(TASK))
    assert [m["role"] for m in msgs] == ["system", "user"]
    good = run_sync(env.step("```python\ndef add_2(x):\n    return x + 2\n```"))
    assert good.done and good.reward is not None and good.reward.total == 1.0
    half = make_env("python", settings)
    run_sync(half.reset(TASK))
    r = run_sync(half.step("```python\ndef add_2(x):\n    return 2\n```"))
    assert r.reward is not None and r.reward.total == 0.5
    assert r.execution is not None and r.execution.tests[0].status.value == "FAILED"


def test_python_env_feedback_names_the_failing_tests() -> None:
    env = make_env("python", EnvSettings())
    run_sync(env.reset(TASK))
    r = run_sync(env.step("```python\ndef add_2(x):\n    return 2\n```"))
    assert not r.done and len(r.messages) == 1 and r.messages[0]["role"] == "user"
    text = r.messages[0]["content"]
    assert "1 of 2 tests passed" in text and "assert add_2(1) == 3" in text and "Fix the code" in text
    assert "assert add_2(0) == 2" not in text  # passing tests are not listed
    crash = run_sync(env.step("```python\nraise RuntimeError('boom at load')\n```"))
    assert "boom at load" in crash.messages[0]["content"]
    assert len(crash.messages[0]["content"]) <= 1500
