"""Environments, one per task domain, looked up through `ENVS` by the task's `domain`."""

from rlvr.envs.base import ENVS, Env, EnvSettings, StepResult, make_env
from rlvr.envs.itops import ItOpsEnv
from rlvr.envs.json_output import JsonOutputEnv
from rlvr.envs.math_answer import MathAnswerEnv
from rlvr.envs.python_code import PythonFunctionEnv
from rlvr.envs.reasoning import ReasoningGymEnv
from rlvr.envs.repository import RepositoryEnv
from rlvr.envs.test_writing import TestWritingEnv
from rlvr.envs.trading import TradingEnv
from rlvr.rewards.extract import extract_code

__all__ = [
    "ENVS",
    "Env",
    "EnvSettings",
    "ItOpsEnv",
    "JsonOutputEnv",
    "MathAnswerEnv",
    "PythonFunctionEnv",
    "ReasoningGymEnv",
    "RepositoryEnv",
    "StepResult",
    "TestWritingEnv",
    "TradingEnv",
    "extract_code",
    "make_env",
]
