"""In-process vLLM generation (`engine.kind: vllm`): PagedAttention, continuous batching and
prefix caching for rollouts, with the policy's weights reloaded in place after each update.

How it uses vLLM (the V1 engine; read in the vllm-project/vllm sources, `vllm/entrypoints/
llm.py`, `vllm/v1/sample/sampler.py`, `vllm/v1/sample/ops/topk_topp_sampler.py`,
`vllm/v1/executor/uniproc_executor.py`, `vllm/v1/engine/parallel_sampling.py`,
`vllm/v1/core/sched/utils.py`, `vllm/logprobs.py`):

- Built once from a model directory: `model.name_or_path` when it is a local Hugging Face
  directory (then the model's current tensors are loaded over it at once, so a run that
  changed them in memory still generates with them), else the current model written with
  `save_pretrained` into a temporary directory. The tokenizer is always written there (the
  policy's own, chat template included). Nothing is downloaded. `dtype` is the policy's
  (vLLM's "auto" would turn float32 into float16), or bfloat16 when
  `model.compute_dtype` is bfloat16 (as the HF engine's autocast; the loader casts the
  published float32 tensors as it copies them), `seed` is `cfg.seed`,
  `gpu_memory_utilization` is `engine.vllm.gpu_memory_utilization`, prefix caching is on, and
  `generation_config="vllm"` keeps the model's generation_config.json from changing any
  sampling default: what is sampled is what `SamplingParams` says.
- The engine core runs in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, as TRL's
  colocate mode requires too): `LLM.collective_rpc(fn, args=...)` then calls `fn(worker,
  ...)` directly (UniProcExecutor -> `run_method`), so a weight update hands vLLM the
  learner's tensors themselves — no pickling, no disk — and the worker's model copies them
  into its own parameters with `model.load_weights(iterable of (name, tensor))`, vLLM's
  own loader, which maps Hugging Face names (and fills fused tensors such as qkv_proj and
  gate_up_proj from their q/k/v and gate/up parts); where the worker has `reload_weights`
  (vLLM's in-place reload, which also redoes the post-load processing such as the CPU
  build's weight repacking) that wraps the same call and is used instead. Prior art doing the same worker-side
  call: OpenRLHF `openrlhf/trainer/ray/vllm_worker_wrap.py` (`self.model_runner.model.
  load_weights(weights=[(name, weight)])` via collective_rpc), TRL `trl/generation/
  vllm_generation.py` (colocate mode: `llm_engine.model_executor.driver_worker.
  model_runner.model.load_weights(...)`, then `llm.reset_prefix_cache()`). The newer
  weight-transfer API (`LLM.update_weights`, `vllm/distributed/weight_transfer/`, e.g.
  `examples/rl/rlhf_ipc.py`) targets separate processes (NCCL / CUDA IPC through Ray) and
  has changed from release to release; in one process it is not needed.
- After a load the prefix cache is reset (`LLM.reset_prefix_cache()`): cached key/value
  blocks were computed with the old weights.
- Log-probs: the engine is built with `logprobs_mode="processed_logprobs"` and every
  request asks `logprobs=0` (the sampled token's own log-prob only). vLLM's default,
  "raw_logprobs", is log_softmax of the raw logits, i.e. temperature 1, whatever the
  request's temperature. "processed_logprobs" is log_softmax of the logits after the
  temperature and after top-k/top-p masking (`TopKTopPSampler.forward_native`): with
  top_p = 1 that is softmax(logits / temperature), what the HF engine returns and what
  the learner recomputes. With top_p < 1 it is the log-prob under the *truncated,
  renormalised* distribution actually sampled from (>= the HF engine's pre-truncation
  value by log(1 / nucleus mass)); the learner's recomputed log-probs are pre-truncation,
  so the two differ by that amount per token (logged as the log-prob mismatch; keep
  top_p = 1 for exact importance ratios). Greedy requests get log_softmax(logits), as in
  the HF engine.
- Samples of one prompt: consecutive equal prompts become one request with `n` = the run
  length (their prompt is prefilled once). A seeded call gives row i the seed `seed + i`:
  the run starting at row s is seeded `seed + s` and vLLM seeds its k-th child `seed + s
  + k` (`ParentRequest._get_child_sampling_params`). Greedy runs are generated once
  (vLLM refuses n > 1 at temperature 0) and copied to each row.
- Stops: our stop strings go as `stop` with `include_stop_str_in_output=True` (the text
  keeps the stop string, as the HF engine's does); the end-of-sequence ids (tokenizer's and
  the model's generation config's) go as `stop_token_ids`, so a completion ends on the
  same tokens as with the HF engine. vLLM says `finish_reason` "stop" for a stop string
  (`stop_reason` the string), an EOS (`stop_reason` None) or a stop token (`stop_reason`
  its id) and "length" at `max_tokens`: mapped to "stop", "eos", "eos", "length". The
  token ids include the EOS token or the token that completed the stop string; `text`
  is decoded here from the token ids (skip_special_tokens), exactly as the HF engine does.
- Sleep mode (optional, `sleep_mode=True`): the LLM is built with `enable_sleep_mode`;
  `sleep()` (level 1: weights to CPU memory, KV cache dropped) frees the GPU for the
  learner step, and `generate` / `load_version` wake it first.

`progress` is called once, when the whole call is done: `LLM.generate` blocks until every
request is finished.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# At module top on purpose: without vLLM this raises ModuleNotFoundError(name="vllm"),
# which rlvr.rollout.factory turns into a ConfigError naming the fix.
import vllm

from rlvr.rollout.engine import Completion, Report, SamplingParams, check_prompts
from rlvr.rollout.weights import hf_weight_names


def equal_runs(prompts: list[list[int]]) -> list[tuple[int, int]]:
    """(start, length) of each run of consecutive equal prompts, in order."""
    runs: list[tuple[int, int]] = []
    for i, p in enumerate(prompts):
        if runs and prompts[runs[-1][0]] == p:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def map_finish_reason(finish_reason: str | None, stop_reason: Any) -> str:
    """vLLM's (finish_reason, stop_reason) -> "eos" | "stop" | "length"."""
    if finish_reason == "length":
        return "length"
    if finish_reason == "stop":
        return "stop" if isinstance(stop_reason, str) else "eos"  # None: EOS; an int: a stop token id
    raise RuntimeError(f"vLLM ended a completion with finish_reason {finish_reason!r} (stop_reason {stop_reason!r})")


def sampled_logprobs(token_ids: list[int], logprobs: Any) -> list[float]:
    """The log-prob of each sampled token from vLLM's per-position {token_id: Logprob}
    entries (a list of dicts, or vLLM's FlatLogprobs, which indexes the same way)."""
    if logprobs is None:
        raise RuntimeError("vLLM returned no log-probs (every request asks logprobs=0)")
    if len(logprobs) != len(token_ids):
        raise RuntimeError(f"vLLM returned {len(logprobs)} log-prob entries for {len(token_ids)} tokens")
    out: list[float] = []
    for i, tok in enumerate(token_ids):
        entry = logprobs[i]
        if entry is None or tok not in entry:
            raise RuntimeError(f"vLLM's log-probs at position {i} do not include the sampled token {tok}")
        out.append(float(entry[tok].logprob))
    return out


def _load_on_worker(worker: Any, weights: list[tuple[str, Any]]) -> list[str]:
    """Runs inside vLLM's worker (in this process): copy `weights` into its model's
    parameters in place. Returns the names of the model's parameters nothing was loaded
    into (empty when vLLM's loader does not report what it loaded).

    Where the worker has `reload_weights` (vLLM's in-place reload, `vllm/model_executor/
    model_loader/reload/`), that is used: it restores the layers' loading state, runs the
    model's `load_weights` and then the post-load processing again, so it also works where
    that processing replaced the parameters (vLLM's CPU build repacks linear weights for its
    kernels, and a bare `load_weights` then fails: the packed parameters have no
    `weight_loader`). It logs the weights it did not load itself. Older vLLMs: the model's
    `load_weights` directly."""
    reload = getattr(worker, "reload_weights", None)
    if callable(reload):
        reload(weights_iterator=iter(weights), is_checkpoint_format=True)
        return []
    get_model = getattr(worker, "get_model", None)
    model = get_model() if callable(get_model) else worker.model_runner.model
    loaded = model.load_weights(weights)
    if not isinstance(loaded, set):
        return []
    return sorted(n for n, _ in model.named_parameters() if n not in loaded)


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokenizer's end-of-sequence id and the model's generation config's (as HFEngine)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif isinstance(gen_eos, list):
        ids.update(int(e) for e in gen_eos)
    return sorted(ids)


def _local_model_dir(model: Any) -> Path | None:
    """`model.name_or_path` when it is a local directory with a config and weights."""
    name = str(getattr(model, "name_or_path", "") or "")
    path = Path(name) if name else None
    if path is None or not path.is_dir() or not (path / "config.json").is_file():
        return None
    if not any(path.glob("*.safetensors")) and not any(path.glob("*.bin")):
        return None
    return path


class VLLMEngine:
    """Generates with an in-process `vllm.LLM` holding its own copy of the policy's weights;
    `load_version` copies a published version's tensors into it (module docstring)."""

    shares_weights = False

    def __init__(
        self,
        cfg: Any,
        model: Any,
        tokenizer: Any,
        *,
        version: int = 0,
        enforce_eager: bool = False,
        max_model_len: int | None = None,
        sleep_mode: bool = False,
        llm_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if model is None:
            raise ValueError("engine.kind vllm generates with the policy's weights: no policy model was given")
        if any(".lora_" in k for k in model.state_dict()):
            raise ValueError("engine.kind vllm does not support model.lora yet (use engine.kind hf)")
        self.version = version
        self.tokenizer = tokenizer
        self.eos_ids = _eos_ids(model, tokenizer)
        self.sleep_mode = sleep_mode
        self._asleep = False
        self.last_load_s = 0.0  # seconds the latest load_version spent loading and resetting
        self._tmp = tempfile.TemporaryDirectory(prefix="rlvr-vllm-")
        tmp = Path(self._tmp.name)
        tok_dir = tmp / "tokenizer"
        tokenizer.save_pretrained(str(tok_dir))
        model_dir = _local_model_dir(model)
        from_disk = model_dir is not None
        if model_dir is None:
            model_dir = tmp / "model"
            model.save_pretrained(str(model_dir))
        # The policy's dtype, or bfloat16 when generation.compute_dtype (default
        # model.compute_dtype) asks for bfloat16 products (the HF engine's autocast): vLLM
        # then holds bfloat16 copies of float32 weights.
        dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        gen_dtype = getattr(cfg.generation, "compute_dtype", None) or getattr(cfg.model, "compute_dtype", "float32")
        if gen_dtype == "bfloat16":
            dtype = "bfloat16"
        # The engine core in this process: collective_rpc then runs our function on the
        # worker directly, with the learner's tensors (no serialisation).
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        kwargs: dict[str, Any] = {
            "model": str(model_dir),
            "tokenizer": str(tok_dir),
            "dtype": dtype,
            "seed": int(cfg.seed),
            "gpu_memory_utilization": float(cfg.engine.vllm.gpu_memory_utilization),
            "enable_prefix_caching": True,
            "logprobs_mode": "processed_logprobs",
            "generation_config": "vllm",
            "enforce_eager": enforce_eager,
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if sleep_mode:
            kwargs["enable_sleep_mode"] = True
        kwargs.update(llm_kwargs or {})
        self.llm = vllm.LLM(**kwargs)
        if from_disk:  # built from the files on disk: adopt the tensors in memory
            self._load(model.state_dict())

    # -- weights -------------------------------------------------------------------------

    @property
    def context_limit(self) -> int | None:
        """The most positions vLLM serves (its max_model_len): an episode's context never
        grows past it (rlvr.rollout.runner)."""
        config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        limit = getattr(config, "max_model_len", None)
        return int(limit) if isinstance(limit, int) else None

    def load_version(self, version: int, weights: Mapping[str, Any] | None) -> None:
        if weights is not None:
            self._load(weights)
        self.version = version

    def _load(self, weights: Mapping[str, Any]) -> None:
        t0 = time.perf_counter()
        self.wake()
        named = list(hf_weight_names(weights))  # vLLM's load_weights maps Hugging Face names
        missing = [m for per_worker in self.llm.collective_rpc(_load_on_worker, args=(named,)) for m in per_worker]
        if missing:
            warnings.warn(f"vLLM loaded nothing into {len(missing)} parameters, e.g. {missing[:3]}", stacklevel=3)
        if self.llm.reset_prefix_cache() is False:  # cached blocks hold the old weights' keys and values
            raise RuntimeError("vLLM could not reset its prefix cache after a weight update")
        self.last_load_s = time.perf_counter() - t0

    # -- memory --------------------------------------------------------------------------

    def sleep(self) -> None:
        """Free the GPU memory vLLM holds (weights to CPU memory, KV cache dropped) until the
        next generate/load_version; a no-op unless built with sleep_mode=True."""
        if self.sleep_mode and not self._asleep:
            self.llm.sleep(level=1)
            self._asleep = True

    def wake(self) -> None:
        if self._asleep:
            self.llm.wake_up()
            self._asleep = False

    def close(self) -> None:
        """Drop the LLM (its GPU memory goes when nothing else refers to it) and the temporary files."""
        self.llm = None
        self._tmp.cleanup()

    # -- generation ----------------------------------------------------------------------

    def _request_params(self, params: SamplingParams, n: int, seed: int | None) -> Any:
        kw: dict[str, Any] = {
            "n": n,
            "max_tokens": params.max_new_tokens,
            "logprobs": 0,  # the sampled token's own log-prob, no alternatives
            "stop_token_ids": list(self.eos_ids),
            "include_stop_str_in_output": True,
            "skip_special_tokens": True,
        }
        if params.stop:
            kw["stop"] = list(params.stop)
        if params.greedy:
            kw["temperature"] = 0.0
        else:
            kw["temperature"] = params.temperature
            kw["top_p"] = params.top_p
            if seed is not None:
                kw["seed"] = seed
        return vllm.SamplingParams(**kw)

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, progress: Report | None = None
    ) -> list[Completion]:
        if not check_prompts(prompts):
            return []
        self.wake()
        t0 = time.perf_counter()
        runs = equal_runs(prompts)
        requests = [{"prompt_token_ids": list(prompts[start])} for start, _ in runs]  # vllm.inputs.TokensPrompt
        per_request = [
            self._request_params(
                params,
                1 if params.greedy else count,
                None if params.seed is None else params.seed + start,
            )
            for start, count in runs
        ]
        outputs = self.llm.generate(requests, per_request, use_tqdm=False)
        elapsed = time.perf_counter() - t0
        if len(outputs) != len(runs):
            raise RuntimeError(f"vLLM returned {len(outputs)} results for {len(runs)} requests")
        completions: list[Completion] = []
        for (_, count), out in zip(runs, outputs, strict=True):
            samples = sorted(out.outputs, key=lambda c: c.index)
            if params.greedy:
                samples = samples[:1] * count
            if len(samples) != count:
                raise RuntimeError(f"vLLM returned {len(samples)} samples for a prompt asked {count} times")
            for s in samples:
                ids = [int(t) for t in s.token_ids]
                completions.append(
                    Completion(
                        token_ids=ids,
                        logprobs=sampled_logprobs(ids, s.logprobs),
                        text=str(self.tokenizer.decode(ids, skip_special_tokens=True)),
                        finish_reason=map_finish_reason(s.finish_reason, s.stop_reason),
                        timings={"generate_s": elapsed},
                    )
                )
        if progress is not None:
            progress(len(prompts))
        return completions
