import pytest

from rlvr.envs import ENVS, EnvSettings, extract_code, make_env
from rlvr.envs.base import run_sync
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


def test_unknown_domain_lists_registered() -> None:
    with pytest.raises(KeyError, match="no environment for domain 'cobol'; registered: ") as err:
        make_env("cobol", EnvSettings())
    listed = str(err.value).split("registered: ")[1].rstrip("\"'").split(", ")
    bundled = [
        "cpp",
        "data",
        "itops",
        "javascript",
        "json",
        "math",
        "python",
        "reasoning",
        "repair",
        "repository",
        "trading",
    ]
    assert set(bundled) <= set(listed) and listed == sorted(listed)  # other tests' plugins may add more
    assert "python" in ENVS


MATH_TASK = Task(id="m/1", domain="math", prompt="3/4 of 1?", tests={"format": "answer", "answer": "3/4"})
JSON_TASK = Task(
    id="j/1",
    domain="json",
    prompt="Extract.",
    tests={
        "format": "json",
        "schema": {"type": "object", "required": ["name", "age"]},
        "expected": {"name": "Ana Rossi", "age": 31},
    },
)


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("3 of 4 parts, so \\boxed{\\frac{3}{4}}", 1.0),  # LaTeX
        ("<answer>0.75</answer>", 1.0),  # decimal
        ("The answer is 3/4.", 1.0),
        ("\\boxed{4/3}", 0.0),  # wrong
        ("", 0.0),  # malformed: nothing to parse
        ("\\boxed{__import__('os').system('x')}", 0.0),  # hostile text is only parsed
    ],
)
def test_math_env(reply: str, value: float) -> None:
    env = make_env("math", EnvSettings())
    run_sync(env.reset(MATH_TASK))
    r = run_sync(env.step(reply))
    assert r.done and r.reward is not None and r.reward.total == value


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('<answer>{"name": "Ana Rossi", "age": 31}</answer>', 1.0),
        ('```json\n{"name": " Ana Rossi ", "age": 31}\n```', 1.0),  # code block; spaces trimmed
        ('{"name": "Ana Rossi", "age": "31"}', 0.5),  # age has the wrong type
        ('{"name": "Ana"}', 0.0),
        ("[1, 2]", 0.0),  # not an object
        ("name: Ana", 0.0),  # not JSON
    ],
)
def test_json_env(reply: str, value: float) -> None:
    env = make_env("json", EnvSettings())
    run_sync(env.reset(JSON_TASK))
    r = run_sync(env.step(reply))
    assert r.done and r.reward is not None and r.reward.total == value


def test_answer_envs_reject_tasks_of_the_wrong_shape() -> None:
    with pytest.raises(ValueError, match="math tasks need"):
        run_sync(make_env("math", EnvSettings()).reset(JSON_TASK))
    with pytest.raises(ValueError, match="json tasks need"):
        run_sync(make_env("json", EnvSettings()).reset(MATH_TASK))


def test_task_system_prompt_overrides_the_run_default() -> None:
    task = Task(
        id="m/2", domain="math", prompt="1+1", tests={"format": "answer", "answer": "2"}, metadata={"system": "M"}
    )
    msgs = run_sync(make_env("math", EnvSettings(system_prompt="S")).reset(task))
    assert msgs[0] == {"role": "system", "content": "M"}
