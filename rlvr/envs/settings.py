"""A run's environment settings and its scorer, from the config: what an episode needs
besides the engine. `rlvr score` uses these alone, so scoring a reply imports no model
stack (torch, transformers, the engines)."""

from __future__ import annotations

import os

from rlvr.config import ConfigError, RunConfig
from rlvr.envs.base import EnvSettings, env_components
from rlvr.rewards.registry import GROUP_REWARDS, reward_names
from rlvr.rewards.scorer import Scorer, check_hack_ignore
from rlvr.sandbox import Limits


def check_reward(cfg: RunConfig) -> None:
    """The reward section's names: every term names a component something computes (the
    scorer's, or an environment's own, with plugins loaded), every ignored hack signature
    is one the detector knows. Raises ConfigError listing the valid names."""
    check_hack_ignore(cfg.reward.hack_ignore)
    own, registered = env_components(), reward_names()
    for i, term in enumerate(cfg.reward.terms):
        if term.name not in registered and term.name not in own:
            theirs = ", ".join(f"{n} ({'/'.join(d)})" for n, d in sorted(own.items()))
            raise ConfigError(
                f"reward.terms[{i}].name: no component '{term.name}'; valid: {', '.join(registered)}, "
                f"or an environment's own: {theirs}"
            )
        group = GROUP_REWARDS.get(term.name)
        if term.gate == "tie_break" and group is None:
            groups = ", ".join(GROUP_REWARDS) or "none registered"
            raise ConfigError(f"reward.terms[{i}].gate: tie_break needs a group term ({groups}), not '{term.name}'")
        if group is not None and group.check is not None:
            group.check(cfg.reward)


def env_settings(cfg: RunConfig) -> EnvSettings:
    return EnvSettings(
        system_prompt=cfg.prompt.system,
        limits=Limits(
            timeout_s=cfg.sandbox.timeout_s,
            test_timeout_s=cfg.sandbox.test_timeout_s,
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
        hidden_credit=cfg.reward.hidden_credit,
        system_by_domain=dict(cfg.prompt.system_by_domain),
    )


def make_scorer(cfg: RunConfig, settings: EnvSettings) -> Scorer:
    check_reward(cfg)
    return Scorer(cfg.reward, max_new_tokens=cfg.generation.max_new_tokens, execute=settings.execute)
