"""The built-in reward terms, registered in the order the breakdown lists them.

Each reads the task, the trajectory and the run's reward section; the environment's
verdict ('completion') comes from the environment itself."""

from __future__ import annotations

from rlvr.rewards.base import RewardComponent
from rlvr.rewards.efficiency import efficiency_reward
from rlvr.rewards.extract import extract_code, extract_final_answer
from rlvr.rewards.format import FormatRules, format_reward
from rlvr.rewards.length import overlong_penalty
from rlvr.rewards.probes import probe_like
from rlvr.rewards.registry import GROUP_REWARDS, TermContext, register_reward
from rlvr.rewards.security import security_reward
from rlvr.types import Task, Trajectory

CODE_FORMATS = ("assert", "call", "stdio", "pytest", "script")


def is_code_task(task: Task) -> bool:
    """A Python code task (the security, hack and efficiency analyses read Python)."""
    return task.tests.get("format") in CODE_FORMATS and task.metadata.get("language", "python") == "python"


def format_rules(task: Task, ctx: TermContext) -> FormatRules | None:
    """The run's format rules for this task (a JSON task's own schema first); None: no rule."""
    f = ctx.cfg.format
    schema = task.tests.get("schema") if task.tests.get("format") == "json" else None
    schema = schema or f.json_schema
    if not (f.code_block or f.required_tags or f.regex or schema):
        return None
    return FormatRules(f.code_block, tuple(f.required_tags), f.regex, schema)


def _code_task(task: Task, traj: Trajectory, ctx: TermContext) -> bool:
    return is_code_task(task)


@register_reward(
    "format", applies=lambda task, traj, ctx: format_rules(task, ctx) is not None or "format" in ctx.wanted
)
def format_term(task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
    """The reply follows the format rules (reward.format, or a JSON task's schema)."""
    return format_reward(traj.completion_text, format_rules(task, ctx) or FormatRules())


@register_reward("length", applies=lambda task, traj, ctx: bool(traj.completion_ids) or not traj.completion_text)
def length_term(task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
    """DAPO's overlong penalty: truncated replies, ramped over reward.overlong_cache tokens
    (not computed for a reply scored as text, whose token count is unknown). In a
    multi-turn episode the reply is the last assistant turn (each turn has its own token
    limit), not the whole episode with the environment's messages."""
    limit = ctx.max_new_tokens
    last = next((t for t in reversed(traj.turns) if t.role == "assistant" and t.token_ids), None)
    n = len(last.token_ids) if last is not None else len(traj.completion_ids)
    return overlong_penalty(n, limit, min(ctx.cfg.overlong_cache, limit))


@register_reward("security", applies=_code_task)
def security_term(task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
    """Dangerous calls in the code, or their traces in what it printed (Python tasks)."""
    runtime = traj.execution.stderr if traj.execution else ""
    return security_reward(extract_code(traj.completion_text), runtime)


@register_reward("efficiency", applies=_code_task, always=False)
def efficiency_term(task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
    """CPU time and peak memory against the reference's run on the same tests (Python
    tasks with a reference; costs one sandbox run of the reference per task)."""
    return efficiency_reward(
        extract_code(traj.completion_text),
        traj.execution,
        reference=task.reference,
        reference_result=ctx.reference_run(task),
        time_floor_s=ctx.cfg.efficiency_time_floor_s,
        memory_floor_mb=ctx.cfg.efficiency_memory_floor_mb,
    )


@register_reward("math", applies=lambda task, traj, ctx: "answer" in task.tests, always=False)
def math_term(task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
    """The final answer equals the task's answer mathematically (math-verify)."""
    from rlvr.rewards.math import math_reward  # math-verify is slow to import

    return math_reward(extract_final_answer(traj.completion_text), str(task.tests["answer"]))


def _judged(task: Task, traj: Trajectory, ctx: TermContext) -> bool:
    return "probe_like" in ctx.wanted or bool(ctx.wanted & GROUP_REWARDS.keys())


@register_reward("probe_like", applies=_judged)
def probe_like_term(task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
    """1 when the reply is one of the empty shapes known to fool learned rewards and judges
    (rlvr.rewards.probes: punctuation alone, a reasoning opener alone, a note to the grader,
    one line repeated); logged whenever a learned or judged term is in use, and such a reply
    never gets that term's bonus."""
    last = next((t.content for t in reversed(traj.turns) if t.role == "assistant"), traj.completion_text)
    return RewardComponent(1.0 if probe_like(last) else 0.0)
