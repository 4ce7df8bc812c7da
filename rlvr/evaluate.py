"""pass@1 on held-out tasks: greedy decoding, one sample per task, all tests must pass.

Also the environment settings and scorer of a run's config, which `rlvr score` uses
alone: the model stack (torch, transformers, the engines) is imported only when a model
is evaluated, so scoring a completion starts in a fraction of the time."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rlvr.config import RunConfig
from rlvr.envs import EnvSettings
from rlvr.rewards.scorer import Scorer
from rlvr.sandbox import Limits
from rlvr.types import Task, Trajectory

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass
class EvalResult:
    pass_at_1: float
    mean_reward: float
    num_tasks: int
    by_difficulty: dict[int, float] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)
    by_domain: dict[str, float] = field(default_factory=dict)  # pass@1 per domain


def pick_eval_tasks(tasks: list[Task], n: int | None) -> list[Task]:
    """The first n held-out tasks, taken in turn from each domain (in order of first
    appearance) so that a mixed run evaluates every domain; with one domain, the first n."""
    if not n or n >= len(tasks):
        return list(tasks)
    queues: dict[str, list[Task]] = {}
    for t in tasks:
        queues.setdefault(t.domain, []).append(t)
    out: list[Task] = []
    while len(out) < n:
        for q in queues.values():
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def check_terms(cfg: RunConfig) -> None:
    """Every reward term names a component something computes: the scorer's, or an
    environment's own (with plugins loaded). Raises ConfigError listing the valid names."""
    from rlvr.config import ConfigError
    from rlvr.config_reward import REWARD_COMPONENTS
    from rlvr.envs.base import env_components

    own = env_components()
    for i, term in enumerate(cfg.reward.terms):
        if term.name not in REWARD_COMPONENTS and term.name not in own:
            theirs = ", ".join(f"{n} ({'/'.join(d)})" for n, d in sorted(own.items()))
            raise ConfigError(
                f"reward.terms[{i}].name: no component '{term.name}'; valid: {', '.join(REWARD_COMPONENTS)}, "
                f"or an environment's own: {theirs}"
            )


def env_settings(cfg: RunConfig) -> EnvSettings:
    return EnvSettings(
        system_prompt=cfg.prompt.system,
        limits=Limits(
            timeout_s=cfg.sandbox.timeout_s,
            memory_mb=cfg.sandbox.memory_mb,
            parallel_tests=cfg.sandbox.parallel_tests,
            test_isolation=cfg.sandbox.test_isolation,
            cpus=cfg.sandbox.cpus,
        ),
        timeout_penalty=cfg.reward.timeout_penalty,
        sandbox_url=cfg.sandbox.url,
        sandbox_token=os.environ.get(cfg.sandbox.token_env) if cfg.sandbox.url else None,
        feedback_chars=cfg.rollout.feedback_chars,
        held_out_weight=cfg.reward.held_out_weight,
        system_by_domain=dict(cfg.prompt.system_by_domain),
    )


def make_scorer(cfg: RunConfig, settings: EnvSettings) -> Scorer:
    check_terms(cfg)
    return Scorer(cfg.reward, max_new_tokens=cfg.generation.max_new_tokens, execute=settings.execute)


def evaluate(
    model: PreTrainedModel | None, tokenizer: PreTrainedTokenizerBase, tasks: list[Task], cfg: RunConfig
) -> EvalResult:
    """pass@1 of the policy on `tasks` (model None: the engine serves its own, engine.kind openai)."""
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.factory import make_engine
    from rlvr.rollout.runner import run_episodes
    from rlvr.trace.store import solved

    if not tasks:
        raise ValueError("no tasks to evaluate")
    engine = make_engine(cfg, model, tokenizer, for_training=False)
    settings = env_settings(cfg)
    params = SamplingParams(
        max_new_tokens=cfg.eval.max_new_tokens or cfg.generation.max_new_tokens,
        stop=tuple(cfg.generation.stop),
        greedy=True,
    )
    trajs = run_episodes(
        tasks,
        engine=engine,
        tokenizer=tokenizer,
        settings=settings,
        params=params,
        response_prefix=cfg.prompt.response_prefix,
        workers=cfg.sandbox.workers,
        scorer=make_scorer(cfg, settings),
        max_turns=cfg.rollout.max_turns,
        max_context_tokens=cfg.rollout.max_context_tokens,
    )
    passed = [solved(t) for t in trajs]
    rewards = [t.reward.total if t.reward else 0.0 for t in trajs]
    by_diff: dict[int, list[bool]] = {}
    by_dom: dict[str, list[bool]] = {}
    for task, ok in zip(tasks, passed, strict=True):
        by_diff.setdefault(task.difficulty, []).append(ok)
        by_dom.setdefault(task.domain, []).append(ok)
    return EvalResult(
        pass_at_1=sum(passed) / len(passed),
        mean_reward=sum(rewards) / len(rewards),
        num_tasks=len(tasks),
        by_difficulty={d: sum(v) / len(v) for d, v in sorted(by_diff.items())},
        trajectories=trajs,
        by_domain={d: sum(v) / len(v) for d, v in by_dom.items()},
    )
