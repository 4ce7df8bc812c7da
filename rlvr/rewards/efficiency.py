"""Efficiency: how the solution's cost compares with the task's reference solution, and
how much redundant code it carries.

Sub-scores, each in [0, 1] (1 = as good as the reference or better):
- *time*: CPU time of the whole run as measured by the sandbox's cgroup (outside the
  untrusted process, so it cannot be forged), `min(1, (ref + floor) / (cand + floor))`;
  the floor (default 20 ms) keeps start-up noise from dominating tiny programs;
- *memory*: peak memory of the run, same form with a floor in MiB;
- *redundancy*: the mean of three code measures: unreachable statements (after return/
  raise/break/continue, under `if False`), repeated non-trivial lines, and length beyond
  twice the reference's (falling linearly to 0 at six times).

The value is the mean of the sub-scores available (time and memory need the reference's
run; without a reference only redundancy counts). The details carry every measurement.
Time and memory mean little when the candidate failed its tests (a crash is cheap):
gate this component on all tests passing.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

from rlvr.rewards.base import RewardComponent
from rlvr.tasks import pyparse
from rlvr.types import ExecutionResult

_TRIVIAL = {"else:", "try:", "finally:", "pass", "return", "continue", "break", "}", "{", ")", "]"}


def _code_lines(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def unreachable_statements(code: str) -> int:
    """Statements that can never run: those after a return/raise/break/continue in the same
    block, and bodies of `if False:` / `while False:`. Unparsable code counts 0."""
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError):
        return 0
    dead = 0
    for node in ast.walk(tree):
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if isinstance(stmt, ast.Return | ast.Raise | ast.Break | ast.Continue):
                    dead += len(block) - i - 1
                    break
        if isinstance(node, ast.If | ast.While) and isinstance(node.test, ast.Constant) and not node.test.value:
            dead += len(node.body)
    return dead


def duplicated_share(code: str) -> float:
    """Share of non-trivial lines (8+ characters, not a bare keyword) that repeat an
    earlier line exactly (after stripping indentation)."""
    lines = [ln for ln in _code_lines(code) if len(ln) >= 8 and ln not in _TRIVIAL]
    if not lines:
        return 0.0
    counts = Counter(lines)
    return sum(c - 1 for c in counts.values()) / len(lines)


def redundancy_score(code: str, reference: str | None) -> tuple[float, dict[str, Any]]:
    dead = unreachable_statements(code)
    dup = duplicated_share(code)
    scores = [max(0.0, 1.0 - 0.25 * dead), 1.0 - dup]
    details: dict[str, Any] = {"unreachable": dead, "duplicated_share": round(dup, 4)}
    if reference:
        ratio = len(_code_lines(code)) / max(len(_code_lines(reference)), 1)
        scores.append(1.0 if ratio <= 2 else max(0.0, 1.0 - (ratio - 2) / 4))
        details["length_ratio"] = round(ratio, 3)
    return sum(scores) / len(scores), details


def _ratio_score(ref: float, cand: float, floor: float) -> float:
    return min(1.0, (ref + floor) / (cand + floor))


def efficiency_reward(
    code: str,
    result: ExecutionResult | None,
    *,
    reference: str | None = None,
    reference_result: ExecutionResult | None = None,
    time_floor_s: float = 0.02,
    memory_floor_mb: float = 8.0,
) -> RewardComponent:
    red, details = redundancy_score(code, reference)
    scores = {"redundancy": red}
    if result is not None and reference_result is not None:
        scores["time"] = _ratio_score(reference_result.cpu_time_s, result.cpu_time_s, time_floor_s)
        details["cpu_s"] = result.cpu_time_s
        details["reference_cpu_s"] = reference_result.cpu_time_s
        if result.peak_memory_mb > 0 and reference_result.peak_memory_mb > 0:
            scores["memory"] = _ratio_score(reference_result.peak_memory_mb, result.peak_memory_mb, memory_floor_mb)
            details["peak_mb"] = result.peak_memory_mb
            details["reference_peak_mb"] = reference_result.peak_memory_mb
    details["scores"] = {k: round(v, 4) for k, v in scores.items()}
    return RewardComponent(sum(scores.values()) / len(scores), details)
