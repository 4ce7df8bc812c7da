"""The HF engine's episode cache: a multi-turn episode's context is encoded once, not
once a turn. A turn that extends a kept context prefills only its new tokens and samples
what a fresh prefill of the whole context samples; without room to keep a context, rows
are prefilled whole; the runner uses it for multi-turn batches and its trajectories match
an engine without it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import ClassVar

import pytest

from rlvr.envs import EnvSettings
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import EpisodeStore, HFEngine
from rlvr.rollout.models import load_policy
from rlvr.rollout.runner import EpisodeSettings, run_episodes
from rlvr.types import Task


@pytest.fixture(scope="module")
def policy():  # type: ignore[no-untyped-def]
    # RLVR_TEST_DEVICE=cuda: on a GPU (bench/gpu_check.sh)
    return load_policy("tiny-random", seed=0, device=os.environ.get("RLVR_TEST_DEVICE", "cpu"))


def _close(a, b) -> None:  # type: ignore[no-untyped-def]
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    for x, y in zip(a, b, strict=True):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)


def test_each_turn_prefills_only_what_it_adds(policy) -> None:  # type: ignore[no-untyped-def]
    model, tok = policy
    prompts = [tok("Hello there, how are you today?")["input_ids"], tok("Write a function")["input_ids"]] * 2
    feedback = tok(" [the tests failed: try again]")["input_ids"]
    params = SamplingParams(max_new_tokens=10, seed=3)
    plain, cached = HFEngine(model, tok, batch_size=4), HFEngine(model, tok, batch_size=4)
    with cached.episode_cache() as store:
        turn = cached.generate(prompts, params)
        _close(turn, plain.generate(prompts, params))  # the first call is the usual shared prefill
        assert store.prefilled == len(prompts[0]) + len(prompts[1]) and store.hits == 0
        contexts = prompts
        for k in (1, 2):  # two more turns, each extending the previous one's context
            contexts = [c + t.token_ids + feedback for c, t in zip(contexts, turn, strict=True)]
            p = replace(params, seed=3 + k)
            before = store.prefilled
            turn = cached.generate(contexts, p)
            assert store.hits == 4 * k and store.misses == 4
            assert store.prefilled - before == 4 * (1 + len(feedback))  # the last sampled token and the feedback
            _close(turn, plain.generate(contexts, p))
    assert cached._episodes is None  # nothing kept past the block


def test_without_room_a_context_is_not_kept_and_rows_prefill_whole(policy) -> None:  # type: ignore[no-untyped-def]
    model, tok = policy
    prompts = [tok("Hello there")["input_ids"], tok("Write a function")["input_ids"]]
    params = SamplingParams(max_new_tokens=6, seed=1)
    plain, cached = HFEngine(model, tok, batch_size=2), HFEngine(model, tok, batch_size=2)
    with cached.episode_cache(max_mib=0) as store:
        first = cached.generate(prompts, params)
        contexts = [p + c.token_ids + [5, 6] for p, c in zip(prompts, first, strict=True)]
        _close(cached.generate(contexts, params), plain.generate(contexts, params))
        assert store.not_kept == 4 and store.hits == 0  # two rows a call, neither kept


def test_the_runner_keeps_episodes_across_turns(policy) -> None:  # type: ignore[no-untyped-def]
    """A multi-turn batch on the tiny model: the same trajectories as an engine that keeps nothing."""
    model, tok = policy

    class Forgetful(HFEngine):
        episode_cache = None  # type: ignore[assignment]

    class Counting(HFEngine):
        stores: ClassVar[list[EpisodeStore]] = []

        @contextlib.contextmanager
        def episode_cache(self, max_mib: int = 2048) -> Iterator[EpisodeStore]:
            with super().episode_cache(max_mib) as store:
                self.stores.append(store)
                yield store

    task = Task(id="t", domain="python", prompt="Write f(x) returning x + 1.",
                tests={"format": "assert", "tests": ["assert f(1) == 2"]}, entry_point="f")  # fmt: skip
    settings = EpisodeSettings(EnvSettings(), group_size=2, max_turns=3, max_context_tokens=1024)
    params = SamplingParams(max_new_tokens=12, seed=0)
    runs = [
        run_episodes([task], engine=e, tokenizer=tok, episodes=settings, params=params)
        for e in (Counting(model, tok, batch_size=4), Forgetful(model, tok, batch_size=4))
    ]
    kept, fresh = runs
    assert [t.completion_ids for t in kept] == [t.completion_ids for t in fresh]
    assert all(t.timings["turns"] == 3.0 for t in kept)  # the tiny model never passes: every turn ran
    (store,) = Counting.stores
    assert store.hits == 4 and store.misses == 2  # turns 2 and 3 of both episodes resumed
