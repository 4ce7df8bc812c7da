"""Reward components: plain functions of a task and what the sandbox observed."""

from rlvr.rewards.completion import completion_reward

__all__ = ["completion_reward"]
