"""The OpenAI engine's first request, which finds out whether the server takes a prompt as
token ids: only a refusal of the prompt (HTTP 400/422 about it, or llama-cpp-python's
validation error as HTTP 500) makes it try the prompt as text. Transient failures (5xx,
connection errors) are retried and reported as such, even when their text mentions the
prompt, and decide nothing. The server is an httpx.MockTransport: no sockets."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from rlvr.rollout.engine import EngineError, SamplingParams
from rlvr.rollout.openai import OpenAIEngine, OpenAIEngineError, TokenIdsUnavailable

PARAMS = SamplingParams(max_new_tokens=2, greedy=True)
LLAMA_CPP_PYTHON_500 = "1 validation error for CreateCompletionRequest\nprompt.str\n  Input should be a valid string"


class _Tokenizer:
    eos_token_id = 2

    def decode(self, ids: list[int], **_: Any) -> str:
        return " ".join(f"t{i}" for i in ids)


def _ok() -> httpx.Response:
    choice = {"index": 0, "text": "", "token_ids": [5, 6], "finish_reason": "length", "stop_reason": None}
    choice["logprobs"] = {"tokens": ["token_id:5", "token_id:6"], "token_logprobs": [-0.5, -0.25]}
    return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 2}})


def _engine(
    reply: Callable[[int, Any], httpx.Response], *, require_token_ids: bool = True
) -> tuple[OpenAIEngine, list[Any]]:
    """An engine whose server answers `reply(request number, prompt sent)`; the prompts
    sent are recorded."""
    sent: list[Any] = []

    def handle(request: httpx.Request) -> httpx.Response:
        prompt = json.loads(request.content)["prompt"]
        sent.append(prompt)
        return reply(len(sent), prompt)

    engine = OpenAIEngine(
        "http://server.test/v1", "m", _Tokenizer(), max_retries=2, backoff_s=0.0, require_token_ids=require_token_ids
    )  # type: ignore[arg-type]
    engine._client = httpx.Client(transport=httpx.MockTransport(handle))
    return engine, sent


@pytest.mark.parametrize("require_token_ids", [True, False])
def test_a_passing_5xx_about_the_prompt_is_retried_not_taken_for_a_text_only_server(require_token_ids: bool) -> None:
    busy = httpx.Response(503, json={"error": {"message": "prompt queue is full, try again"}})
    engine, sent = _engine(lambda n, p: busy if n == 1 else _ok(), require_token_ids=require_token_ids)
    (c,) = engine.generate([[1, 7]], PARAMS)
    assert c.token_ids == [5, 6]
    assert sent == [[1, 7], [1, 7]]  # the same token-id prompt again, never as text
    assert engine._prompt_as_text is False


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (503, "the prompt could not be scheduled"),
        (500, "internal error while processing the prompt"),  # a crash, not a validation error
        (502, "upstream closed while reading the prompt"),
    ],
)
def test_a_lasting_5xx_about_the_prompt_is_an_engine_error_and_decides_nothing(status: int, body: str) -> None:
    engine, sent = _engine(lambda n, p: httpx.Response(status, text=body))
    with pytest.raises(OpenAIEngineError, match=rf"HTTP {status} after 3 attempts") as err:
        engine.generate([[1, 7]], PARAMS)
    assert not isinstance(err.value, TokenIdsUnavailable) and isinstance(err.value, EngineError)
    assert sent == [[1, 7]] * 3 and all(not isinstance(p, str) for p in sent)
    assert engine._prompt_as_text is None  # the next call probes again


def test_a_connection_error_on_the_probe_is_an_engine_error() -> None:
    def refuse(n: int, p: Any) -> httpx.Response:
        raise httpx.ConnectError("connection refused (the prompt was not sent)")

    engine, sent = _engine(refuse)
    with pytest.raises(OpenAIEngineError, match=r"failed 3 time\(s\): ConnectError") as err:
        engine.generate([[1, 7]], PARAMS)
    assert not isinstance(err.value, TokenIdsUnavailable)
    assert len(sent) == 3 and engine._prompt_as_text is None


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"error": {"message": "prompt must be a string"}}),
        (422, {"detail": [{"loc": ["body", "prompt"], "msg": "str type expected"}]}),
        (500, {"error": {"message": LLAMA_CPP_PYTHON_500, "type": "internal_server_error"}}),  # llama-cpp-python
    ],
)
def test_a_refused_token_id_prompt_is_tried_as_text(status: int, body: Any) -> None:
    def text_only(n: int, p: Any) -> httpx.Response:
        return _ok() if isinstance(p, str) else httpx.Response(status, json=body)

    engine, sent = _engine(text_only)
    with pytest.raises(TokenIdsUnavailable, match=rf"does not take a prompt as token ids \(HTTP {status}"):
        engine.generate([[1, 7]], PARAMS)
    assert sent == [[1, 7], "t1 t7"]  # refused at once (no retries), then the same prompt as text


def test_a_client_error_not_about_the_prompt_is_reported_as_it_is() -> None:
    engine, sent = _engine(lambda n, p: httpx.Response(400, json={"error": {"message": "max_tokens is too large"}}))
    with pytest.raises(OpenAIEngineError, match=r"HTTP 400: .*max_tokens is too large") as err:
        engine.generate([[1, 7]], PARAMS)
    assert not isinstance(err.value, TokenIdsUnavailable) and sent == [[1, 7]]


def test_no_prompts_send_nothing_and_an_empty_prompt_is_refused_before_the_server() -> None:
    engine, sent = _engine(lambda n, prompt: _ok())
    assert engine.generate([], SamplingParams(max_new_tokens=2)) == []
    with pytest.raises(ValueError, match="every prompt needs at least one token"):
        engine.generate([[1, 2], []], SamplingParams(max_new_tokens=2))
    assert sent == []
