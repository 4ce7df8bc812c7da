"""Generated tests as a verifier (rlvr.envs.codet) in the real sandbox: the policy's own
tests, pooled, run against each candidate solution; the consensus picks a right one over
wrong ones that agree with a wrong test."""

from __future__ import annotations

from rlvr.config import load_config
from rlvr.envs.codet import consensus_pick, pass_matrix, pooled_tests, solution_code
from rlvr.envs.settings import env_settings
from rlvr.types import Task

TASK = Task(id="py/inc", domain="python", prompt="Write inc(x), x plus one.", entry_point="inc",
            tests={"format": "assert", "tests": ["assert inc(1) == 2"]})  # fmt: skip


def test_the_consensus_of_solutions_and_their_own_tests_picks_a_right_solution() -> None:
    replies = [
        "```python\ndef inc(x):\n    return x + 2\n```",  # wrong
        "```python\ndef inc(x):\n    return x + 1\n```",  # right
        "```python\nimport no_such_module\ndef inc(x):\n    return x + 1\n```",  # does not load
        "```python\ndef inc(x):\n    y = x\n    return y + 1\n```",  # right, written otherwise
        "```python\ndef inc(x):\n    while True:\n        pass\n```",  # hangs
    ]
    tests = pooled_tests(
        [
            "```python\nassert inc(1) == 2\nassert inc(-1) == 0\n```",
            "```python\ndef test_big():\n    assert inc(10) == 11\n```",
            "```python\nassert inc(0) == 2\n```",  # a wrong test: only the wrong solution passes it
        ],
        "inc",
    )
    assert len(tests) == 4
    passes = pass_matrix(TASK, [solution_code(TASK, r) for r in replies], tests, env_settings(load_config()))
    assert passes == [
        [False, False, False, True],
        [True, True, True, False],
        [False, False, False, False],
        [True, True, True, False],
        [False, False, False, False],
    ]
    assert consensus_pick(passes) == 1  # {1, 3} x 3 tests = 6 beats {0} x 1
