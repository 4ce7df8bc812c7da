"""DAPO's soft overlong punishment (Yu et al. 2025): no penalty up to `max_len - cache`,
a linear ramp to -1 over the last `cache` tokens, -1 beyond `max_len`."""

from __future__ import annotations

from rlvr.rewards.base import RewardComponent


def overlong_penalty(num_tokens: int, max_len: int, cache: int) -> RewardComponent:
    if cache < 0 or cache > max_len:
        raise ValueError(f"need 0 <= cache ({cache}) <= max_len ({max_len})")
    free = max_len - cache
    if num_tokens <= free:
        value = 0.0
    elif num_tokens <= max_len:
        value = (free - num_tokens) / cache
    else:
        value = -1.0
    return RewardComponent(value, {"tokens": num_tokens, "max_len": max_len, "cache": cache})
