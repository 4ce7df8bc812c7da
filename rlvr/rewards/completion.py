"""Task completion: the share of tests passed, with a penalty for timeouts."""

from __future__ import annotations

from rlvr.types import ExecutionResult, RunStatus


def completion_reward(result: ExecutionResult, timeout_penalty: float = -0.5) -> float:
    """1.0 when every test passes; passed / total otherwise; `timeout_penalty` when the run
    timed out (a program that hangs is worse than one that fails); 0.0 with no tests or on
    an infrastructure error (never the program's fault, never rewarded)."""
    if result.status is RunStatus.TIMEOUT:
        return timeout_penalty
    if result.status is RunStatus.SANDBOX_ERROR or result.total == 0:
        return 0.0
    return result.passed / result.total
