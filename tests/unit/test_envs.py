import pytest

from rlvr.envs import ENVS, EnvSettings, extract_code, make_env
from rlvr.types import Task

TASK = Task(
    id="py/add_2",
    domain="python",
    prompt="Write `add_2(x)`.",
    tests={"format": "assert", "tests": ["assert add_2(1) == 3", "assert add_2(0) == 2"]},
    entry_point="add_2",
)


def test_extract_code() -> None:
    assert extract_code("Here:\n```python\ndef f():\n    pass\n```\nDone") == "def f():\n    pass\n"
    assert extract_code("```python\ndef f(): pass") == "def f(): pass"  # unclosed block
    assert extract_code("```\nx = 1\n```") == "x = 1\n"
    assert extract_code("def f(): pass") == "def f(): pass"


def test_python_env_rewards() -> None:
    settings = EnvSettings(system_prompt="sys")
    env = make_env("python", settings)
    msgs = env.reset(TASK)
    assert [m["role"] for m in msgs] == ["system", "user"]
    good = env.step("```python\ndef add_2(x):\n    return x + 2\n```")
    assert good.done and good.reward is not None and good.reward.total == 1.0
    half = make_env("python", settings)
    half.reset(TASK)
    r = half.step("```python\ndef add_2(x):\n    return 2\n```")
    assert r.reward is not None and r.reward.total == 0.5
    assert r.execution is not None and r.execution.tests[0].status.value == "FAILED"


def test_unknown_domain_lists_registered() -> None:
    with pytest.raises(KeyError, match="registered: python"):
        make_env("cobol", EnvSettings())
    assert "python" in ENVS
