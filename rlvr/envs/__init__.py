"""Environments, one per task domain, looked up through `ENVS` by the task's `domain`."""

from rlvr.envs.base import ENVS, Env, EnvSettings, StepResult, make_env
from rlvr.envs.python_code import PythonFunctionEnv, extract_code

__all__ = ["ENVS", "Env", "EnvSettings", "PythonFunctionEnv", "StepResult", "extract_code", "make_env"]
