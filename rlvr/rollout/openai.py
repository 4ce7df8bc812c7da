"""Generation against a server speaking the OpenAI completions API (`POST /v1/completions`):
vLLM, llama.cpp's `llama-server`, llama-cpp-python's `python -m llama_cpp.server` (others,
such as SGLang, as far as their answers take one of the shapes below).

Each prompt row is one request (`n` = 1): the prompt goes as its token ids, with
`max_tokens`, `temperature` (0 when greedy), `top_p`, `stop`, a `seed` (always: a call
without one draws a base seed, and row i gets base + i, so the samples of a group differ
and a seeded call repeats), and `logprobs: 1`. Samplers the servers add by default are
switched off (`top_k` 0, `min_p` 0, repetition penalties 1), so the distribution sampled
from is softmax(logits / temperature) restricted by top-p, as in the HF engine. At most
`concurrency` requests are in flight (a thread pool over one HTTP connection pool: the
runner calls `generate` from inside its event loop, so no second loop is started).

What comes back, and how it is read (docs/engines.md, "OpenAI-compatible servers"):
- vLLM: `choices[i].token_ids` (asked for with `return_token_ids`), else
  `logprobs.tokens` as "token_id:N" strings (`return_tokens_as_token_ids`); log-probs in
  `logprobs.token_logprobs`, one per generated token, the end-of-sequence token included;
  `stop_reason` tells a stop string (str) from a stop token or EOS.
- llama.cpp's llama-server: `logprobs.content[j]` = {id, token, bytes, logprob}.
- llama-cpp-python's server: token *strings* only (`logprobs.tokens`), no ids; the
  prompt must be text (it rejects a list of ids); the end-of-sequence token is neither
  listed nor scored; log-probs are those of the raw logits (temperature 1).

Token ids are exact only when the server reports them. Re-tokenising the returned text is
not the same thing: a text has one canonical tokenisation, the sampler may have produced
another, and the learner would then train on tokens nobody sampled, with log-probs that
belong to other tokens. So by default (`require_token_ids=True`, what training needs) a
server that takes text prompts only, or reports token strings only, is refused with
`TokenIdsUnavailable`. With `require_token_ids=False` (evaluation: only the text and the
pass/fail verdict matter) such a server is accepted: the prompt is sent as its decoded
text, each returned token string is looked up in the tokenizer's vocabulary (exact when
the string belongs to one vocabulary entry), and a completion with a string that is not
is re-tokenised as a whole; log-probs the server did not give (the end-of-sequence token
appended after an EOS finish, a re-tokenised completion whose length changed) are 0.0 and
counted in `timings["unknown_logprobs"]`.

Weights: the completions API cannot carry them. Without a reload method (`reload="none"`)
`load_version` with weights raises `RemoteWeightsUnsupported`; without weights (evaluating
a served model) it records the version. With `reload="vllm"` (a vLLM server started with
`VLLM_SERVER_DEV_MODE=1`, which serves its development routes), `load_version` writes the
version as safetensors under `weights_uri` (`rlvr.rollout.weights`: a path or an fsspec
URL), asks the server to reload it in place (`POST /collective_rpc` with method
`reload_weights` and the directory as `weights_path`, as the server sees it:
`server_weights_path`; vLLM's in-place reload re-runs its own loader and post-load
processing), resets the server's prefix cache (`POST /reset_prefix_cache`: cached blocks
hold the old weights' keys and values), tells it the version (`POST
/update_weight_version`, where the server has it), then removes the older version
directories. Only then does the next generation start, so no completion of the new
version was sampled from the old weights.
"""

from __future__ import annotations

import json
import random
import threading
import time
import warnings
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import httpx
from transformers import PreTrainedTokenizerBase

from rlvr.rollout.engine import Completion, EngineError, Report, SamplingParams, check_prompts
from rlvr.rollout.weights import local_path, prune_versions, version_dir, write_version

_TOKEN_ID_PREFIX = "token_id:"  # vLLM's return_tokens_as_token_ids form
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_REFUSAL_STATUS = frozenset({400, 422})  # what a server answers a request body it does not accept
_MAX_BACKOFF_S = 30.0


class OpenAIEngineError(EngineError):
    """A request to the server failed (after its retries) or its answer cannot be used."""

    retryable = False  # the engine already retried what retrying can fix
    status: int | None = None  # the HTTP status, when the server answered with an error


class TokenIdsUnavailable(OpenAIEngineError):
    """The server takes text prompts only or reports sampled tokens as strings only: its
    completions cannot be trained on (see the module docstring)."""


class RemoteWeightsUnsupported(NotImplementedError):
    """New weights were handed to an engine whose server cannot receive them."""


class _PromptRefused(Exception):
    """The first request's token-id prompt was refused (`_refuses_prompt`)."""

    def __init__(self, status: int, body: str):
        super().__init__(status, body)
        self.status, self.body = status, body


class OpenAIEngine:
    """Completions from an OpenAI-compatible server, in the order of the prompts given."""

    shares_weights = False  # the server holds its own copy of the model

    def __init__(
        self,
        base_url: str,
        model: str | None,
        tokenizer: PreTrainedTokenizerBase,
        *,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        require_token_ids: bool = True,
        backoff_s: float = 0.5,
        version: int = 0,
        reload: str = "none",
        weights_uri: str | None = None,
        server_weights_path: str | None = None,
    ):
        if reload not in ("none", "vllm"):
            raise ValueError(f"reload must be 'none' or 'vllm', got {reload!r}")
        if reload != "none" and not weights_uri:
            raise ValueError("reload 'vllm' needs weights_uri: where each version is written for the server")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        url = httpx.URL(base_url.strip())
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        path = url.path.rstrip("/")
        if path.endswith("/v1"):
            path = path[: -len("/v1")]
        # the server without credentials: what requests go to, and what errors name
        bare = url.copy_with(path=path or "/", query=None, fragment=None, username=None, password=None)
        self.root = self.server = str(bare).rstrip("/")
        # credentials in the URL (http://user:password@host) are sent as basic auth, unless a key is given
        basic = (url.username, url.password) if url.username and not api_key else None
        self.tokenizer = tokenizer
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.require_token_ids = require_token_ids
        self.backoff_s = backoff_s
        self.version = version
        self.reload = reload
        self.weights_uri = weights_uri
        self.server_weights_path = server_weights_path or (local_path(weights_uri) if weights_uri else None)
        self.last_load_s = 0.0  # seconds the latest load_version spent writing and reloading
        eos = tokenizer.eos_token_id
        self.eos_id: int | None = int(eos) if eos is not None else None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            auth=basic,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._model = model
        self._prompt_as_text: bool | None = None  # None until the first request tells
        self._probe_lock = threading.Lock()
        self._vocab: dict[str, int] | None = None
        self._warned: set[str] = set()

    # ---- the Engine protocol --------------------------------------------------------

    def load_version(self, version: int, weights: Mapping[str, Any] | None) -> None:
        if weights is not None:
            if self.reload == "none":
                raise RemoteWeightsUnsupported(
                    f"{self.server}: new weights cannot be sent to a server through the OpenAI completions API, "
                    "so this engine generates with the learner's policy versions only through a server that "
                    "reloads them: a vLLM server started with VLLM_SERVER_DEV_MODE=1 and engine.openai.reload vllm "
                    "(each version is written to engine.openai.weights_uri and the server loads it from there; "
                    "docs/engines.md). Otherwise train with engine.kind hf or vllm, and use this engine to "
                    "evaluate a served model (its version is then only recorded)."
                )
            self._reload(version, weights)
        self.version = version

    def _reload(self, version: int, weights: Mapping[str, Any]) -> None:
        """Write `version`, have the vLLM server load it in place, reset its prefix cache."""
        assert self.weights_uri is not None and self.server_weights_path is not None
        t0 = time.perf_counter()
        write_version(self.weights_uri, version, weights)
        where = version_dir(self.server_weights_path, version)
        try:
            self._post(
                "/collective_rpc", {"method": "reload_weights", "kwargs": {"weights_path": where}}, empty_ok=True
            )
        except OpenAIEngineError as e:
            if e.status == 404:
                raise OpenAIEngineError(
                    f"{self.server} has no POST /collective_rpc: engine.openai.reload vllm needs a vLLM server started "
                    "with VLLM_SERVER_DEV_MODE=1 (its development routes)"
                ) from None
            raise OpenAIEngineError(
                f"{e}; the server could not load policy version {version} from {where} "
                "(engine.openai.server_weights_path must be engine.openai.weights_uri as the server sees it)"
            ) from None
        answer = self._post("/reset_prefix_cache", {}, empty_ok=True)
        if answer.get("success") is False:
            raise OpenAIEngineError(f"{self.server}: POST /reset_prefix_cache did not succeed: {answer}")
        try:  # the server's own record of the version (GET /weight_info), where it has the route
            self._post("/update_weight_version", {"new_version": str(version)}, empty_ok=True)
        except OpenAIEngineError as e:
            if e.status != 404:
                raise
        prune_versions(self.weights_uri, keep=version)
        self.last_load_s = time.perf_counter() - t0

    @property
    def model(self) -> str:
        """The model name sent with each request: the one given, else the server's first."""
        if self._model is None:
            self._model = self._first_model()
        return self._model

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, progress: Report | None = None
    ) -> list[Completion]:
        if not check_prompts(prompts):
            return []
        t0 = time.perf_counter()
        base_seed = params.seed if params.seed is not None else random.SystemRandom().randrange(2**30)
        seeds = [(base_seed + i) % 2**31 for i in range(len(prompts))]
        raw: list[tuple[dict[str, Any], float] | None] = [None] * len(prompts)
        start = 0
        if self._prompt_as_text is None:
            with self._probe_lock:  # the first request finds out whether token-id prompts are taken
                if self._prompt_as_text is None:
                    raw[0] = self._probe(prompts[0], params, seeds[0])
                    start = 1
                    if progress is not None:
                        progress(1)
        as_text = bool(self._prompt_as_text)
        done = start
        if start < len(prompts):
            pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts) - start))
            try:
                pending: dict[Future[tuple[dict[str, Any], float]], int] = {
                    pool.submit(self._complete, prompts[i], params, seeds[i], as_text): i
                    for i in range(start, len(prompts))
                }
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        raw[pending.pop(f)] = f.result()  # a failed request raises here
                        done += 1
                        if progress is not None:
                            progress(done)
            finally:  # on a failure the requests not yet sent are dropped; those in flight end on their own
                pool.shutdown(wait=False, cancel_futures=True)
        elapsed = time.perf_counter() - t0
        out = []
        for r in raw:
            assert r is not None
            c = self._completion(r[0], params)
            c.timings.update({"generate_s": elapsed, "request_s": r[1]})
            out.append(c)
        if self._prompt_as_text:
            self._check_prompt_lengths(prompts, [r[0] for r in raw if r is not None])
        return out

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- requests ---------------------------------------------------------------------

    def _body(self, prompt: list[int], params: SamplingParams, seed: int, as_text: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": self._decode_prompt(prompt) if as_text else prompt,
            "max_tokens": params.max_new_tokens,
            "temperature": 0.0 if params.greedy else params.temperature,
            "top_p": 1.0 if params.greedy else params.top_p,
            "seed": seed,
            "n": 1,
            "stream": False,
            "logprobs": 1,
            # the servers' own sampler defaults off (llama-cpp-python: top_k 40, min_p 0.05,
            # repeat_penalty 1.1), so the sampled distribution is the policy's
            "top_k": 0,
            "min_p": 0.0,
            "repeat_penalty": 1.0,  # llama.cpp's name
            "repetition_penalty": 1.0,  # vLLM's name
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            # vLLM: the sampled tokens' ids, as a list and in the log-prob entries
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        return body

    def _decode_prompt(self, prompt: list[int]) -> str:
        return str(self.tokenizer.decode(prompt, skip_special_tokens=False, clean_up_tokenization_spaces=False))

    def _probe(self, prompt: list[int], params: SamplingParams, seed: int) -> tuple[dict[str, Any], float]:
        """The first request: the prompt as token ids. A server that refuses them because of
        the prompt (`_refuses_prompt`), and takes the same prompt as text, is a text-only
        server. Any other failure (a connection error, a timeout, another 5xx, 429) is
        retried as every request is and then raised as OpenAIEngineError, deciding
        nothing: the next call probes again."""
        try:
            answer = self._complete(prompt, params, seed, as_text=False, probing=True)
        except _PromptRefused as refused:
            try:
                answer = self._complete(prompt, params, seed, as_text=True)
            except OpenAIEngineError:
                raise self._error(refused.status, refused.body) from None  # not about token ids after all
            if self.require_token_ids:
                raise TokenIdsUnavailable(
                    f"{self.server} does not take a prompt as token ids (HTTP {refused.status}: "
                    f"{_excerpt(refused.body)}); it takes text and tokenises it itself (llama-cpp-python's "
                    "server does), so the context it samples from is not guaranteed to be the learner's. Training "
                    "needs a server that takes token ids and reports the sampled ids (vLLM, or llama.cpp's "
                    "llama-server); for evaluation only, build the engine with require_token_ids=False"
                ) from None
            self._prompt_as_text = True
            return answer
        self._prompt_as_text = False
        return answer

    def _complete(
        self, prompt: list[int], params: SamplingParams, seed: int, as_text: bool, probing: bool = False
    ) -> tuple[dict[str, Any], float]:
        t0 = time.perf_counter()
        answer = self._post("/v1/completions", self._body(prompt, params, seed, as_text), probing=probing)
        return answer, time.perf_counter() - t0

    def _post(
        self, path: str, body: dict[str, Any] | None, probing: bool = False, empty_ok: bool = False
    ) -> dict[str, Any]:
        """POST (GET when body is None) with retries on connection errors, timeouts, 408,
        429 and 5xx, waiting backoff_s * 2^attempt (or the server's Retry-After). When
        `probing`, an answer refusing the token-id prompt (`_refuses_prompt`) raises
        _PromptRefused at once. `empty_ok`: an empty answer is {} (control routes)."""
        url = self.root + path
        method = "GET" if body is None else "POST"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                r = self._client.get(url) if body is None else self._client.post(url, json=body)
            except httpx.TransportError as e:
                if last:
                    raise OpenAIEngineError(
                        f"{self.server}: {method} {path} failed {attempt + 1} time(s): {type(e).__name__}: {e}"
                    ) from None
                time.sleep(self._backoff(attempt, None))
                continue
            if r.status_code >= 400:
                if probing and _refuses_prompt(r.status_code, r.text):
                    raise _PromptRefused(r.status_code, r.text)
                if last or r.status_code not in _RETRY_STATUS:
                    raise self._error(r.status_code, r.text, path, attempt + 1, method)
                time.sleep(self._backoff(attempt, r.headers.get("retry-after")))
                continue
            if empty_ok and not r.content.strip():
                return {}
            try:
                answer = r.json()
            except json.JSONDecodeError:
                raise OpenAIEngineError(f"{self.server}: {path} answered with no JSON: {_excerpt(r.text)}") from None
            if not isinstance(answer, dict):
                raise OpenAIEngineError(f"{self.server}: {path} answered {_excerpt(r.text)}, not a JSON object")
            return answer
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), _MAX_BACKOFF_S)
            except ValueError:
                pass
        return min(self.backoff_s * 2**attempt, _MAX_BACKOFF_S)

    def _error(
        self, status: int, body: str, path: str = "/v1/completions", attempts: int = 1, method: str = "POST"
    ) -> OpenAIEngineError:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        err = OpenAIEngineError(f"{self.server}: {method} {path} got HTTP {status}{tries}: {_excerpt(body)}")
        err.status = status
        return err

    def _first_model(self) -> str:
        answer = self._post("/v1/models", None)
        data = answer.get("data")
        if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "id" not in data[0]:
            raise OpenAIEngineError(f"{self.server}: GET /v1/models lists no model: {_excerpt(json.dumps(answer))}")
        return str(data[0]["id"])

    # ---- answers ----------------------------------------------------------------------

    def _completion(self, answer: dict[str, Any], params: SamplingParams) -> Completion:
        choices = answer.get("choices")
        if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
            raise OpenAIEngineError(f"{self.server}: expected one choice, got {_excerpt(json.dumps(answer))}")
        choice = choices[0]
        ids, logprobs, strings = self._tokens(choice)
        unknown = 0
        retokenized = False
        if ids is None:
            if self.require_token_ids:
                raise TokenIdsUnavailable(
                    f"{self.server} reports the sampled tokens as strings only, without their ids "
                    "(llama-cpp-python's server does). Re-tokenising the text would train on tokens that were "
                    "not sampled, with log-probs that belong to other tokens, so this server cannot be used for "
                    "training; for evaluation only, build the engine with require_token_ids=False"
                )
            assert strings is not None
            ids, logprobs, retokenized = self._ids_from_strings(strings, logprobs)
            if retokenized:
                unknown += len(ids)
        if len(logprobs) != len(ids):
            raise OpenAIEngineError(
                f"{self.server}: {len(ids)} token ids but {len(logprobs)} log-probs in {_excerpt(json.dumps(choice))}"
            )
        text = str(self.tokenizer.decode(ids, skip_special_tokens=True))
        finish = self._finish(choice, ids, text, params, listed_eos=strings is None)
        if finish == "eos" and strings is not None and self.eos_id is not None and ids[-1:] != [self.eos_id]:
            # llama-cpp-python ends on EOS without listing it; the runner expects a reply that
            # ended on EOS to hold it as its last token (its log-prob was not reported)
            ids, logprobs, unknown = [*ids, self.eos_id], [*logprobs, 0.0], unknown + 1
        timings: dict[str, float] = {}
        if unknown:
            timings["unknown_logprobs"] = float(unknown)
        if retokenized:
            timings["retokenized"] = 1.0
        return Completion(token_ids=ids, logprobs=logprobs, text=text, finish_reason=finish, timings=timings)

    def _tokens(self, choice: dict[str, Any]) -> tuple[list[int] | None, list[float], list[str] | None]:
        """(token ids or None, log-probs, the token strings when there are no ids)."""
        lp = choice.get("logprobs")
        if not isinstance(lp, dict):
            raise OpenAIEngineError(
                f"{self.server} returned no log-probs (the completions endpoint must honour `logprobs`): "
                f"{_excerpt(json.dumps(choice))}"
            )
        content = lp.get("content")
        if isinstance(content, list):  # llama.cpp's llama-server
            try:
                return [int(c["id"]) for c in content], [self._logprob(c["logprob"]) for c in content], None
            except (KeyError, TypeError, ValueError):
                raise OpenAIEngineError(
                    f"{self.server}: unreadable logprobs.content: {_excerpt(json.dumps(content))}"
                ) from None
        token_lps, strings = lp.get("token_logprobs"), lp.get("tokens")
        if not isinstance(token_lps, list) or not isinstance(strings, list):
            raise OpenAIEngineError(f"{self.server}: unreadable logprobs: {_excerpt(json.dumps(lp))}")
        logprobs = [self._logprob(v) for v in token_lps]
        ids = choice.get("token_ids")
        if isinstance(ids, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            return [int(t) for t in ids], logprobs, None  # vLLM's return_token_ids
        if strings and all(isinstance(s, str) and s.startswith(_TOKEN_ID_PREFIX) for s in strings):
            try:  # vLLM's return_tokens_as_token_ids
                return [int(s[len(_TOKEN_ID_PREFIX) :]) for s in strings], logprobs, None
            except ValueError:
                pass
        return None, logprobs, [str(s) for s in strings]

    def _logprob(self, v: Any) -> float:
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise OpenAIEngineError(f"{self.server}: a sampled token's log-prob is {v!r}, not a number")
        return float(v)

    def _finish(
        self, choice: dict[str, Any], ids: list[int], text: str, params: SamplingParams, listed_eos: bool
    ) -> str:
        """ "eos", "stop" or "length", as the HF engine says it. `listed_eos`: the server lists
        the end-of-sequence token among the sampled ones (all but llama-cpp-python's)."""
        reason = choice.get("finish_reason")
        if ids and ids[-1] == self.eos_id:
            return "eos"
        if reason == "length":
            return "length"
        if reason != "stop":
            raise OpenAIEngineError(f"{self.server}: finish_reason {reason!r} is neither 'stop' nor 'length'")
        if "stop_reason" in choice:  # vLLM: the stop string, else a stop token id or None (EOS)
            return "stop" if isinstance(choice["stop_reason"], str) else "eos"
        # llama.cpp and llama-cpp-python say "stop" for an end-of-sequence token and a stop string alike
        if any(s in text for s in params.stop):
            return "stop"
        if not listed_eos or not params.stop:
            return "eos"  # llama-cpp-python never lists the end-of-sequence token
        if self.require_token_ids:
            raise TokenIdsUnavailable(
                f"{self.server} ended a completion on 'stop' with neither an end-of-sequence token nor a stop "
                "string among the token ids it reported (llama.cpp's llama-server drops a stop string's tokens "
                "from its log-probs), so the sampled ids are incomplete: for training with this server leave "
                "generation.stop empty"
            )
        return "stop"

    def _ids_from_strings(self, strings: list[str], logprobs: list[float]) -> tuple[list[int], list[float], bool]:
        """Evaluation only: ids for token strings by vocabulary lookup, else by re-tokenising
        the completion (then the log-probs are unknown: 0.0)."""
        vocab = self._vocabulary()
        ids = [vocab.get(s) for s in strings]
        if all(i is not None for i in ids) and len(logprobs) == len(ids):
            return [i for i in ids if i is not None], logprobs, False
        self._warn_once(
            "retokenized",
            f"{self.server}: a completion's token strings do not all name one vocabulary entry; it is "
            "re-tokenised (evaluation only: its token ids may not be the sampled ones)",
        )
        text = "".join(strings)
        new: list[int] = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return new, [0.0] * len(new), True

    def _vocabulary(self) -> dict[str, int]:
        """Each token's text -> its id, for texts that belong to exactly one ordinary token
        (special tokens, and pieces that are not whole UTF-8 characters, are left out)."""
        if self._vocab is None:
            tok = self.tokenizer
            special = set(tok.all_special_ids) | set(getattr(tok, "added_tokens_decoder", {}) or {})
            n = len(tok)
            texts = tok.batch_decode([[i] for i in range(n)], skip_special_tokens=False)
            seen: dict[str, int] = {}
            repeated: set[str] = set()
            for i, s in enumerate(texts):
                if i in special or not s or "\ufffd" in s:
                    continue
                if s in seen:
                    repeated.add(s)
                seen[s] = i
            for s in repeated:
                del seen[s]
            self._vocab = seen
        return self._vocab

    def _check_prompt_lengths(self, prompts: list[list[int]], answers: list[dict[str, Any]]) -> None:
        for p, a in zip(prompts, answers, strict=True):
            usage = a.get("usage")
            n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
            if isinstance(n, int) and n != len(p):
                self._warn_once(
                    "prompt",
                    f"{self.server} tokenised a prompt sent as text into {n} tokens, not the {len(p)} it was "
                    "made of: its tokenizer differs from the one given to the engine",
                )
                return

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)


def _refuses_prompt(status: int, body: str) -> bool:
    """Whether an error answer to a token-id prompt refuses the prompt's form: a client
    error (400, 422) about the prompt, or the request-validation error about the prompt
    that llama-cpp-python's server answers with HTTP 500 (its error handler turns every
    exception into a 500). Other errors mentioning a prompt (a 503 "prompt queue full", a
    500 from a crash while processing it) are failures of the request, not a refusal."""
    text = body.lower()
    if "prompt" not in text:
        return False
    return status in _REFUSAL_STATUS or (status == 500 and "validation error" in text)


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
