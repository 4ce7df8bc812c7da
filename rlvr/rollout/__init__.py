"""Generation engines and the episode runner."""

from rlvr.rollout.engine import Completion, Engine, SamplingParams

__all__ = ["Completion", "Engine", "SamplingParams"]
