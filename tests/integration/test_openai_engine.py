"""The OpenAI-compatible engine (rlvr/rollout/openai.py), in two parts.

1. A scripted stand-in server (stdlib HTTP, in a thread) answering the way vLLM, llama.cpp's
   llama-server and llama-cpp-python's server answer (response shapes as their sources
   write them): token ids read from each shape, finish reasons, the request sent, retries,
   timeouts, errors that name the server and the status, the text-only fallback refused
   for training and accepted for evaluation, the bounded pool. Always runs.
2. A real server started by the test: llama-cpp-python's OpenAI-compatible server
   (`python -m llama_cpp.server`) on the embedded GGUF model, compared with the HF engine
   on the same greedy prompts, plus stop sequences, several samples per prompt, seeds and
   behaviour log-probs. Without llama-cpp-python these skip, except under CI (CI=true),
   where they fail: install it with `pip install 'llama-cpp-python[server]==0.3.36'`
   (an sdist: it compiles llama.cpp; `CMAKE_ARGS=-DGGML_NATIVE=OFF` for a portable build).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch

from rlvr.config import load_config
from rlvr.envs import make_env
from rlvr.envs.settings import env_settings
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.models import EMBEDDED, load_policy, load_tokenizer
from rlvr.rollout.openai import OpenAIEngine, OpenAIEngineError, RemoteWeightsUnsupported, TokenIdsUnavailable
from rlvr.rollout.runner import episode_settings, render, run_episodes
from rlvr.tasks import load_tasks
from rlvr.tasks.loader import split_tasks
from rlvr.trace.store import solved
from rlvr.types import Task

ROOT = Path(__file__).parents[2]
QUICK = ROOT / "examples" / "quickstart.yaml"


@pytest.fixture(scope="module")
def tok() -> Any:
    return load_tokenizer(EMBEDDED)


# ---- part 1: a scripted stand-in server -------------------------------------------------

Reply = tuple[int, Any]  # (HTTP status, JSON body or raw text)


class Script:
    """What the stand-in server answers: `reply(path, body)` per request; every request
    body is recorded, and the most requests in flight at once are counted."""

    def __init__(self, reply: Callable[[str, dict[str, Any]], Reply], delay_s: float = 0.0):
        self.reply, self.delay_s = reply, delay_s
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()


@contextlib.contextmanager
def stand_in(script: Script) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, body: dict[str, Any]) -> None:
            with script.lock:
                script.requests.append((self.path, body, dict(self.headers)))
                script.in_flight += 1
                script.most_in_flight = max(script.most_in_flight, script.in_flight)
            try:
                time.sleep(script.delay_s)
                status, out = script.reply(self.path, body)
            finally:
                with script.lock:
                    script.in_flight -= 1
            data = (out if isinstance(out, str) else json.dumps(out)).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (a timeout test)
                pass

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            self._answer(json.loads(self.rfile.read(n) or b"{}"))

        def do_GET(self) -> None:
            self._answer({})

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _vllm_choice(ids: list[int], stop_reason: Any, finish: str, as_strings: bool = False) -> dict[str, Any]:
    """A completions choice the way vLLM writes it (return_token_ids, or only
    return_tokens_as_token_ids when `as_strings`)."""
    choice: dict[str, Any] = {
        "index": 0,
        "text": "ignored: the engine decodes the ids",
        "logprobs": {
            "text_offset": list(range(len(ids))),
            "token_logprobs": [-0.5 - j / 10 for j in range(len(ids))],
            "tokens": [f"token_id:{t}" for t in ids],
            "top_logprobs": [{f"token_id:{t}": -0.5} for t in ids],
        },
        "finish_reason": finish,
        "stop_reason": stop_reason,
    }
    if not as_strings:
        choice["token_ids"] = ids
    return choice


def _answer(choice: dict[str, Any], prompt_tokens: int = 3) -> dict[str, Any]:
    return {"id": "cmpl-1", "object": "text_completion", "choices": [choice], "usage": {"prompt_tokens": prompt_tokens}}


def test_vllm_answers_token_ids_finish_reasons_and_the_request_sent(tok: Any) -> None:
    hello = tok("def add(a, b):\n    return a + b\n```", add_special_tokens=False)["input_ids"]
    eos = tok.eos_token_id
    answers = {
        0: _vllm_choice([*hello[:4], eos], None, "stop"),  # ended on EOS (vLLM lists it)
        1: _vllm_choice(hello, "```", "stop"),  # a stop string
        2: _vllm_choice(hello[:3], None, "length"),
        3: _vllm_choice(hello, "```", "stop", as_strings=True),  # ids only as "token_id:N"
    }

    def reply(path: str, body: dict[str, Any]) -> Reply:
        return 200, _answer(answers[body["prompt"][0]])

    script = Script(reply)
    with stand_in(script) as url:
        e = OpenAIEngine(url, "served", tok, concurrency=2)
        params = SamplingParams(max_new_tokens=7, temperature=0.7, top_p=0.9, stop=("```",), seed=11)
        out = e.generate([[0, 5], [1, 5], [2, 5], [3, 5]], params)
    assert [c.finish_reason for c in out] == ["eos", "stop", "length", "stop"]
    assert out[0].token_ids == [*hello[:4], eos] and out[1].token_ids == hello == out[3].token_ids
    for c in out:
        assert c.text == tok.decode(c.token_ids, skip_special_tokens=True)
        assert len(c.logprobs) == len(c.token_ids) and c.logprobs[0] == -0.5
    sent = {b["prompt"][0]: b for p, b, _ in script.requests if p == "/v1/completions"}
    b = sent[1]
    assert b["prompt"] == [1, 5] and b["model"] == "served" and b["n"] == 1 and b["logprobs"] == 1
    assert (b["max_tokens"], b["temperature"], b["top_p"], b["stop"]) == (7, 0.7, 0.9, ["```"])
    assert b["top_k"] == 0 and b["min_p"] == 0 and b["repeat_penalty"] == 1 and b["repetition_penalty"] == 1
    assert b["return_token_ids"] is True and b["return_tokens_as_token_ids"] is True
    assert sorted(s["seed"] for s in sent.values()) == [11, 12, 13, 14]  # one seed per row: base + row


def test_greedy_and_unseeded_requests(tok: Any) -> None:
    script = Script(lambda p, b: (200, _answer(_vllm_choice([5, 6], None, "length"))))
    with stand_in(script) as url:
        e = OpenAIEngine(url, "m", tok)
        e.generate([[1], [1], [1]], SamplingParams(max_new_tokens=2, greedy=True, temperature=0.7, top_p=0.5))
        e.generate([[1]] * 3, SamplingParams(max_new_tokens=2))
    first, second = script.requests[:3], script.requests[3:]
    assert all(b["temperature"] == 0.0 and b["top_p"] == 1.0 for _, b, _ in first)
    assert len({b["seed"] for _, b, _ in second}) == 3  # no seed given: still one per row, all different


def test_llama_server_answers_ids_in_logprobs_content(tok: Any) -> None:
    ids = tok("x = 1\n", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    choice = {
        "text": "x = 1\n",
        "index": 0,
        "finish_reason": "stop",
        "logprobs": {
            "content": [
                {"id": t, "token": tok.decode([t]), "bytes": [], "logprob": -0.25, "top_logprobs": []} for t in ids
            ]
        },
    }
    with stand_in(Script(lambda p, b: (200, _answer(choice)))) as url:
        (c,) = OpenAIEngine(url, "m", tok).generate([[1, 2]], SamplingParams(max_new_tokens=9, greedy=True))
    assert c.token_ids == ids and c.logprobs == [-0.25] * len(ids) and c.finish_reason == "eos"


CODE = "def f():\n    return 1"


def _llama_cpp_python(tok: Any) -> Callable[[str, dict[str, Any]], Reply]:
    """llama-cpp-python's server: a list of ids as the prompt is a validation error its
    error handler turns into HTTP 500; a text prompt gets token strings, no ids, and an
    EOS ending that is neither listed nor scored."""
    words = [tok.decode([t]) for t in tok(CODE, add_special_tokens=False)["input_ids"]]

    def reply(path: str, body: dict[str, Any]) -> Reply:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "gguf-model", "object": "model", "owned_by": "me"}]}
        if not isinstance(body["prompt"], str):
            err = "1 validation error for CreateCompletionRequest\nprompt.str\n  Input should be a valid string"
            return 500, {"error": {"message": err, "type": "internal_server_error"}}
        choice = {
            "text": "".join(words),
            "index": 0,
            "logprobs": {"tokens": words, "token_logprobs": [-0.1] * len(words), "top_logprobs": [], "text_offset": []},
            "finish_reason": "stop",
        }
        return 200, _answer(choice, prompt_tokens=len(tok(body["prompt"], add_special_tokens=False)["input_ids"]))

    return reply


def test_a_text_only_server_is_refused_for_training_and_accepted_for_evaluation(tok: Any) -> None:
    text = render(tok, [{"role": "user", "content": "Write f."}], "```python\n")
    prompt = list(tok(text, add_special_tokens=False)["input_ids"])
    script = Script(_llama_cpp_python(tok))
    with stand_in(script) as url:
        with pytest.raises(TokenIdsUnavailable, match=r"does not take a prompt as token ids.*HTTP 500"):
            OpenAIEngine(url, None, tok).generate([prompt], SamplingParams(max_new_tokens=8, greedy=True))
        e = OpenAIEngine(url, None, tok, require_token_ids=False)
        out = e.generate([prompt, prompt], SamplingParams(max_new_tokens=8, greedy=True, stop=("```",)))
    assert e.model == "gguf-model"  # no model named: the server's first
    sent = [b["prompt"] for p, b, _ in script.requests if p == "/v1/completions"]
    assert isinstance(sent[-1], str) and tok(sent[-1], add_special_tokens=False)["input_ids"] == prompt
    code_ids = tok(CODE, add_special_tokens=False)["input_ids"]
    for c in out:  # ids by vocabulary lookup of each token string, EOS appended (unscored)
        assert c.text == CODE and c.finish_reason == "eos"
        assert c.token_ids == [*code_ids, tok.eos_token_id]
        assert c.logprobs == [-0.1] * len(code_ids) + [0.0] and c.timings["unknown_logprobs"] == 1.0


def test_load_version_records_a_version_and_refuses_weights(tok: Any) -> None:
    e = OpenAIEngine("http://127.0.0.1:9/v1", "m", tok)
    assert e.version == 0 and e.shares_weights is False
    e.load_version(3, None)
    assert e.version == 3
    with pytest.raises(
        RemoteWeightsUnsupported, match=r"VLLM_SERVER_DEV_MODE=1 and engine\.openai\.reload vllm"
    ) as err:
        e.load_version(4, {"w": torch.zeros(1)})
    assert isinstance(err.value, NotImplementedError) and e.version == 3


def _vllm_control(fail: dict[str, Reply] | None = None) -> Callable[[str, dict[str, Any]], Reply]:
    """A vLLM server's control routes (VLLM_SERVER_DEV_MODE=1), or `fail[path]` for a path."""
    answers: dict[str, Reply] = {
        "/collective_rpc": (200, {"results": [None]}),
        "/reset_prefix_cache": (200, {"success": True}),
        "/update_weight_version": (200, {"success": True}),
    }
    answers.update(fail or {})
    return lambda path, body: answers[path]


def test_reload_vllm_writes_each_version_and_has_the_server_load_it(tok: Any, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    emb = torch.arange(12.0).reshape(4, 3)
    v1 = {
        "_orig_mod.model.embed_tokens.weight": emb,
        "_orig_mod.lm_head.weight": emb,
        "model.norm.weight": torch.ones(3),
    }
    root = tmp_path / "weights"
    script = Script(_vllm_control())
    with stand_in(script) as url:
        e = OpenAIEngine(url, "m", tok, reload="vllm", weights_uri=str(root))
        e.load_version(1, v1)
        v2 = {k: v + 1 for k, v in v1.items()}  # untied now: both written
        e.load_version(2, v2)
    assert e.version == 2 and e.last_load_s > 0
    calls = [(p, b) for p, b, _ in script.requests]
    assert [p for p, _ in calls] == ["/collective_rpc", "/reset_prefix_cache", "/update_weight_version"] * 2
    assert calls[0][1] == {"method": "reload_weights", "kwargs": {"weights_path": f"{root}/v00000001"}}
    assert calls[3][1]["kwargs"]["weights_path"] == f"{root}/v00000002" and calls[5][1] == {"new_version": "2"}
    assert sorted(p.name for p in root.iterdir()) == ["v00000002"]  # the older version removed once loaded
    written = load_file(root / "v00000002" / "model.safetensors")
    assert sorted(written) == ["lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"]
    assert torch.equal(written["model.embed_tokens.weight"], emb + 1) and torch.equal(
        written["lm_head.weight"], emb + 1
    )


def test_reload_vllm_tied_weights_object_storage_and_the_servers_own_path(tok: Any) -> None:
    import fsspec
    from safetensors.torch import load as load_bytes

    emb = torch.randn(4, 3)
    script = Script(_vllm_control({"/update_weight_version": (404, {"detail": "Not Found"})}))  # an older vLLM
    with stand_in(script) as url:
        e = OpenAIEngine(url, "m", tok, reload="vllm", weights_uri="memory://rlvr-test/w", server_weights_path="/mnt/w")
        e.load_version(7, {"model.embed_tokens.weight": emb, "lm_head.weight": emb})
    assert e.version == 7
    assert script.requests[0][1]["kwargs"]["weights_path"] == "/mnt/w/v00000007"
    with fsspec.open("memory://rlvr-test/w/v00000007/model.safetensors", "rb") as f:
        written = load_bytes(f.read())
    assert sorted(written) == ["lm_head.weight", "model.embed_tokens.weight"]  # tied: both names, as copies
    assert torch.equal(written["lm_head.weight"], emb) and torch.equal(written["model.embed_tokens.weight"], emb)


def test_reload_vllm_errors_name_the_fix(tok: Any, tmp_path: Path) -> None:
    w = {"model.norm.weight": torch.ones(3)}
    no_dev = Script(_vllm_control({"/collective_rpc": (404, {"detail": "Not Found"})}))
    with stand_in(no_dev) as url, pytest.raises(OpenAIEngineError, match=r"VLLM_SERVER_DEV_MODE=1"):
        OpenAIEngine(url, "m", tok, reload="vllm", weights_uri=str(tmp_path), backoff_s=0.01).load_version(1, w)
    missing = Script(_vllm_control({"/collective_rpc": (500, {"error": "No such file or directory"})}))
    with stand_in(missing) as url:
        e = OpenAIEngine(url, "m", tok, reload="vllm", weights_uri=str(tmp_path), max_retries=0)
        with pytest.raises(OpenAIEngineError, match=r"could not load policy version 1 .*server_weights_path"):
            e.load_version(1, w)
    assert e.version == 0  # not adopted
    with pytest.raises(ValueError, match="needs weights_uri"):
        OpenAIEngine("http://127.0.0.1:9/v1", "m", tok, reload="vllm")
    with pytest.raises(ValueError, match=r"merged"):
        OpenAIEngine("http://127.0.0.1:9/v1", "m", tok, reload="vllm", weights_uri=str(tmp_path)).load_version(
            1, {"model.q_proj.lora_A.default.weight": torch.zeros(1)}
        )


def test_reload_config_keys_and_defaults() -> None:
    from rlvr.config import ConfigError

    on = ["engine.kind=openai", "engine.openai.base_url=http://h/v1", "engine.openai.reload=vllm"]
    cfg = load_config(None, on)
    assert cfg.algo.importance == "token"  # vLLM's sampler: truncated importance sampling, as engine.kind vllm
    assert load_config(None, ["engine.kind=openai", "engine.openai.base_url=http://h/v1"]).algo.importance == "none"
    with pytest.raises(
        ConfigError, match=r"engine\.openai: weights_uri: set, but used only with engine\.openai\.reload"
    ):
        load_config(
            None, ["engine.kind=openai", "engine.openai.base_url=http://h/v1", "engine.openai.weights_uri=/tmp/w"]
        )
    with pytest.raises(ConfigError, match=r"openai: set, but engine\.kind is 'hf'"):
        load_config(None, ["engine.openai.reload=vllm"])
    with pytest.raises(ConfigError, match=r"engine\.openai\.reload vllm loads full weights.*lora"):
        load_config(None, [*on, "model.lora={r: 8}"])


def test_retries_on_5xx_then_succeeds_and_errors_name_server_and_status(tok: Any) -> None:
    calls = {"n": 0}

    def flaky(path: str, body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        return (503, "busy") if calls["n"] <= 2 else (200, _answer(_vllm_choice([5], None, "length")))

    params = SamplingParams(max_new_tokens=1, greedy=True)
    with stand_in(Script(flaky)) as url:
        (c,) = OpenAIEngine(url, "m", tok, max_retries=2, backoff_s=0.01).generate([[1]], params)
    assert c.token_ids == [5] and calls["n"] == 3
    gateway = r"127\.0\.0\.1:\d+: POST /v1/completions got HTTP 502 after 3 attempts: bad gateway"
    with stand_in(Script(lambda p, b: (502, "bad gateway"))) as url, pytest.raises(OpenAIEngineError, match=gateway):
        OpenAIEngine(url, "m", tok, max_retries=2, backoff_s=0.01).generate([[1]], params)
    bad = Script(lambda p, b: (400, {"error": {"message": "max_tokens is too large"}}))
    with stand_in(bad) as url, pytest.raises(OpenAIEngineError, match=r"HTTP 400: .*max_tokens is too large"):
        OpenAIEngine(url, "m", tok, backoff_s=0.01).generate([[1]], params)
    assert len(bad.requests) == 1  # a client error is not retried


def test_connection_errors_and_timeouts_are_retried_then_named(tok: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    params = SamplingParams(max_new_tokens=1, greedy=True)
    with pytest.raises(OpenAIEngineError, match=rf"http://127\.0\.0\.1:{port}: POST /v1/completions failed 2 time"):
        OpenAIEngine(f"http://127.0.0.1:{port}", "m", tok, max_retries=1, backoff_s=0.01).generate([[1]], params)
    slow = Script(lambda p, b: (200, _answer(_vllm_choice([5], None, "length"))), delay_s=1.0)
    with stand_in(slow) as url, pytest.raises(OpenAIEngineError, match=r"failed 2 time\(s\): ReadTimeout"):
        OpenAIEngine(url, "m", tok, timeout_s=0.2, max_retries=1, backoff_s=0.01).generate([[1]], params)
    assert len(slow.requests) == 2


def test_the_api_key_is_sent_and_never_shown(tok: Any) -> None:
    script = Script(lambda p, b: (401, {"error": "Invalid API key"}))
    with stand_in(script) as url:
        authed = url.replace("http://", "http://user:secret-pw@")
        with pytest.raises(OpenAIEngineError) as err:
            OpenAIEngine(authed, "m", tok, api_key="sk-123").generate([[1]], SamplingParams(max_new_tokens=1))
    assert script.requests[0][2]["Authorization"] == "Bearer sk-123"
    assert "HTTP 401" in str(err.value) and "sk-123" not in str(err.value) and "secret-pw" not in str(err.value)


def test_requests_in_flight_are_bounded_and_progress_is_reported(tok: Any) -> None:
    script = Script(lambda p, b: (200, _answer(_vllm_choice([b["prompt"][0]], None, "length"))), delay_s=0.05)
    heard: list[int] = []
    with stand_in(script) as url:
        out = OpenAIEngine(url, "m", tok, concurrency=3).generate(
            [[i] for i in range(12)], SamplingParams(max_new_tokens=1), progress=heard.append
        )
    assert [c.token_ids for c in out] == [[i] for i in range(12)]  # in the order given
    assert 1 < script.most_in_flight <= 3
    assert heard == sorted(heard) and heard[-1] == 12


# ---- part 2: a real server: llama-cpp-python on the embedded GGUF model -----------------


@pytest.fixture(scope="module")
def policy() -> tuple[Any, Any]:
    return load_policy(EMBEDDED)


def _eval_prompts(tok: Any, n: int) -> tuple[list[Task], list[list[int]], Any]:
    """The quickstart's first n held-out tasks and their prompts, rendered as rlvr renders
    them (the environment's opening messages, the chat template, the response prefix)."""
    cfg = load_config(QUICK)
    held_out = split_tasks(load_tasks(cfg.tasks.source), cfg.tasks.eval_fraction)[1][:n]
    settings = env_settings(cfg)

    def ids(task: Task) -> list[int]:
        opening = asyncio.run(make_env(task.domain, settings).reset(task))
        return list(tok(render(tok, opening, cfg.prompt.response_prefix), add_special_tokens=False)["input_ids"])

    return held_out, [ids(t) for t in held_out], cfg


def _first_divergence(a: list[int], b: list[int]) -> int:
    return next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_greedy_generation_matches_the_hf_engine(llama_server: str, policy: tuple[Any, Any]) -> None:
    """Same greedy prompts, same weights (the HF model is the GGUF file de-quantised):
    identical token ids for most prompts. Where they part, it is at a near-tie: llama.cpp
    multiplies Q4_1/Q8_0 weights by activations it quantises to 8 bits, the HF engine by the
    de-quantised weights in float32, so logits differ by a few hundredths and a greedy
    choice between two almost equally likely tokens can go either way."""
    model, tok = policy
    _tasks, prompts, cfg = _eval_prompts(tok, 8)
    params = SamplingParams(max_new_tokens=64, greedy=True, stop=tuple(cfg.generation.stop))
    served = OpenAIEngine(llama_server, "smollm2", tok, require_token_ids=False).generate(prompts, params)
    local = HFEngine(model, tok, batch_size=8).generate(prompts, params)
    same = [s.token_ids == h.token_ids for s, h in zip(served, local, strict=True)]
    report, prefix_gaps = [], []
    for p, s, h in zip(prompts, served, local, strict=True):
        assert s.finish_reason in ("eos", "stop", "length") and s.timings.get("retokenized") is None
        j = _first_divergence(s.token_ids, h.token_ids)
        # log-probs of the shared prefix: the same tokens scored by both (quantised vs float)
        diffs = [abs(a - b) for a, b in zip(s.logprobs[:j], h.logprobs[:j], strict=True)]
        if s.finish_reason == "eos":
            diffs = diffs[: len(s.token_ids) - 1]  # the appended EOS is not scored by the server
        prefix_gaps += diffs
        if s.token_ids != h.token_ids and j < min(len(s.token_ids), len(h.token_ids)):
            with torch.no_grad():
                logits = model(torch.tensor([p + h.token_ids[:j]])).logits[0, -1].float()
            lp = torch.log_softmax(logits, -1)
            gap = float(lp[h.token_ids[j]] - lp[s.token_ids[j]])
            report.append(f"diverge at token {j}: HF margin {gap:.3f} nats")
            assert -1e-3 <= gap < 0.5, f"the server's token is not a near-tie under the HF model ({gap:.3f} nats)"
    mean_gap, worst = sum(prefix_gaps) / len(prefix_gaps), max(prefix_gaps)
    print(f"identical greedy completions: {sum(same)}/{len(same)}; {'; '.join(report)}")
    print(f"|server - HF| log-prob of the same token on shared prefixes: mean {mean_gap:.4f}, max {worst:.4f}")
    assert sum(same) >= len(same) * 3 // 4
    assert mean_gap < 0.05 and worst < 0.5  # quantisation noise, not another model


def test_pass_at_1_through_the_server_equals_the_hf_engine_or_differs_only_where_text_does(
    llama_server: str, policy: tuple[Any, Any]
) -> None:
    model, tok = policy
    tasks, _, cfg = _eval_prompts(tok, 8)
    params = SamplingParams(max_new_tokens=cfg.generation.max_new_tokens, greedy=True, stop=tuple(cfg.generation.stop))
    runs = {}
    for name, engine in (
        ("server", OpenAIEngine(llama_server, "smollm2", tok, require_token_ids=False)),
        ("hf", HFEngine(model, tok, batch_size=12)),
    ):
        runs[name] = run_episodes(
            tasks, engine=engine, tokenizer=tok, params=params, episodes=episode_settings(cfg),
        )  # fmt: skip
    differ = 0
    for s, h in zip(runs["server"], runs["hf"], strict=True):
        assert s.status == h.status == "ok"
        if s.completion_ids == h.completion_ids:
            assert solved(s) == solved(h) and s.reward is not None and h.reward is not None
            assert s.reward.total == h.reward.total
        else:
            differ += 1
    p_server = sum(map(solved, runs["server"])) / len(tasks)
    p_hf = sum(map(solved, runs["hf"])) / len(tasks)
    print(f"pass@1 on {len(tasks)} held-out tasks: server {p_server:.3f}, HF {p_hf:.3f}; {differ} completions differ")
    assert abs(p_server - p_hf) <= differ / len(tasks)


def test_stop_sequences_and_end_of_sequence_against_the_server(llama_server: str, tok: Any) -> None:
    _, prompts, _ = _eval_prompts(tok, 3)
    e = OpenAIEngine(llama_server, "smollm2", tok, require_token_ids=False)
    free = e.generate(prompts, SamplingParams(max_new_tokens=128, greedy=True))
    ended = [c for c in free if c.finish_reason == "eos"]
    assert ended, [c.text for c in free]  # the instruct model ends its answers with <|im_end|>
    assert all(c.token_ids[-1] == tok.eos_token_id for c in ended)
    for p, f in zip(prompts, free, strict=True):
        assert len(f.text) > 8
        stop = f.text[4:8]  # a string the greedy continuation is known to contain
        (c,) = e.generate([p], SamplingParams(max_new_tokens=128, greedy=True, stop=(stop,)))
        assert c.finish_reason == "stop" and stop in c.text and f.text.startswith(c.text)
        assert c.token_ids == f.token_ids[: len(c.token_ids)]  # it ends at the token that completes the stop
        assert not tok.decode(c.token_ids[:-1], skip_special_tokens=True).count(stop)


def test_several_samples_per_prompt_seeds_and_behaviour_log_probs(llama_server: str, policy: tuple[Any, Any]) -> None:
    model, tok = policy
    _, prompts, _ = _eval_prompts(tok, 2)
    e = OpenAIEngine(llama_server, "smollm2", tok, require_token_ids=False, concurrency=4)
    # (llama-cpp-python's server spends ~0.15 s per token on log-probs: few, short samples)
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=7)
    group = [p for p in prompts for _ in range(4)]  # 2 prompts x 4 samples, as the runner asks
    first = e.generate(group, params)
    assert len(first) == 8
    # the samples of a group differ (each row has its own seed; the first 12 tokens of a
    # code answer can agree, so one group differing is the evidence asked for)
    assert any(len({tuple(c.token_ids) for c in first[4 * k : 4 * k + 4]}) > 1 for k in range(2))
    assert [c.token_ids for c in e.generate(group, params)] == [c.token_ids for c in first]  # same seed
    other = e.generate(group[:4], SamplingParams(max_new_tokens=12, temperature=1.0, seed=8))
    assert [c.token_ids for c in other] != [c.token_ids for c in first[:4]]
    gaps: list[float] = []
    for p, c in zip(group, first, strict=True):
        scored = c.logprobs[:-1] if c.finish_reason == "eos" else c.logprobs  # an appended EOS is unscored
        assert len(c.logprobs) == len(c.token_ids) and all(math.isfinite(x) and x <= 0 for x in c.logprobs)
        # the server's behaviour log-probs are the model's own for the sampled tokens (up to quantisation)
        ids = torch.tensor([p + c.token_ids])
        with torch.no_grad():
            lp = torch.log_softmax(model(ids).logits[0, len(p) - 1 : -1].float(), -1)
        ref = lp.gather(1, ids[0, len(p) :, None])[:, 0].tolist()
        gaps += [abs(a - b) for a, b in zip(scored, ref, strict=False)]
    print(f"|server - HF| behaviour log-prob: mean {sum(gaps) / len(gaps):.4f}, max {max(gaps):.4f}")
    assert sum(gaps) / len(gaps) < 0.05


def test_training_use_of_the_llama_cpp_python_server_is_refused(llama_server: str, tok: Any) -> None:
    _, prompts, _ = _eval_prompts(tok, 1)
    with pytest.raises(TokenIdsUnavailable, match="token ids"):
        OpenAIEngine(llama_server, "smollm2", tok).generate(prompts, SamplingParams(max_new_tokens=4))


def test_rlvr_eval_through_the_server_and_training_against_it_refused(
    llama_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI as a user runs it: `rlvr eval --engine openai --base-url URL` scores a served
    model on held-out tasks; `rlvr train` with that engine stops before anything starts."""
    from rlvr.cli import main

    quick = str(Path(__file__).parents[2] / "examples" / "quickstart.yaml")
    served = ["eval.num_tasks=6", "generation.max_new_tokens=48"]
    assert main(["eval", quick, *served, "--engine", "openai", "--base-url", llama_server, "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["num_tasks"] == 6 and 0.0 <= out["pass_at_1"] <= 1.0 and llama_server in out["model"]
    argv = ["train", quick, "engine.kind=openai", f"engine.openai.base_url={llama_server}", f"output_dir={tmp_path}"]
    assert main(argv) == 2
    assert "engine.kind openai with engine.openai.reload none evaluates a served model" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before a run directory exists
