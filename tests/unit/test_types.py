import json

import pytest

from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Task, TestResult, TestStatus, Trajectory, Turn


def _traj() -> Trajectory:
    return Trajectory(
        task_id="py/add_2",
        domain="python",
        group_id="0:py/add_2",
        turns=[Turn("user", "Write add_2"), Turn("assistant", "def add_2(x): return x+2", [5, 6], [-0.1, -0.2], True)],
        prompt_ids=[1, 2, 3],
        completion_ids=[5, 6],
        logprobs=[-0.1, -0.2],
        loss_mask=[1, 1],
        finish_reason="eos",
        execution=ExecutionResult(RunStatus.OK, [TestResult("assert add_2(1) == 3", TestStatus.PASSED)]),
        reward=RewardBreakdown(1.0, {"completion": 1.0}),
        advantage=0.5,
        policy_version=3,
        timings={"generate_s": 1.0},
    )


def test_trajectory_roundtrips_through_json() -> None:
    t = _traj()
    back = Trajectory.from_json(t.to_json())
    assert back == t
    assert back.execution is not None and back.execution.passed == 1
    assert json.loads(t.to_json())["execution"]["status"] == "OK"
    assert back.completion_text == "def add_2(x): return x+2"


def test_task_roundtrip_and_errors() -> None:
    task = Task(id="a", domain="python", prompt="p", tests={"format": "assert", "tests": []}, difficulty=2)
    assert Task.from_dict(task.to_dict()) == task
    with pytest.raises(ValueError, match="unknown field"):
        Task.from_dict({**task.to_dict(), "difficult": 3})
    with pytest.raises(ValueError, match="'prompt'"):
        Task.from_dict({"id": "a", "domain": "python", "prompt": ""})
    with pytest.raises(ValueError, match="difficulty"):
        Task.from_dict({"id": "a", "domain": "python", "prompt": "x", "difficulty": "hard"})


def test_execution_result_counts() -> None:
    r = ExecutionResult(RunStatus.OK, [TestResult("a", TestStatus.PASSED), TestResult("b", TestStatus.FAILED)])
    d = r.to_dict()
    assert (d["passed"], d["total"]) == (1, 2)
    assert ExecutionResult.from_dict(d) == r
