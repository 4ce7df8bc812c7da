"""Bit-for-bit determinism with several intra-op threads (issue 20): the same inputs give
the same gradients, and the same command and seed the same run.

The cases are shaped to reach PyTorch's multi-threaded CPU kernels: with at least two
threads and 32768 elements or more, some kernels (e.g. the backward of `x[idx]` with
repeated indices, which accumulates with atomic float adds) sum in an order that
depends on thread scheduling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rlvr.learner.logprobs import SharedPrompts, token_stats


@pytest.fixture
def two_threads():  # type: ignore[no-untyped-def]
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _shared_prompt_grads(model, prompts, comps, rows) -> torch.Tensor:  # type: ignore[no-untyped-def]
    model.zero_grad(set_to_none=True)
    ctx = SharedPrompts(model, [prompts[r] for r in rows], pad_id=2)
    st = token_stats(model, [prompts[r] for r in rows], [comps[r] for r in rows], pad_id=2, shared=(ctx, rows))
    (st.logprobs * st.mask).sum().backward()
    ctx.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def _sliding_window_model():  # type: ignore[no-untyped-def]
    from transformers import MistralConfig, MistralForCausalLM

    cfg = MistralConfig(
        vocab_size=2000,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,  # the window's cache, 16 x 4 x 63 x 16, takes the threaded gather
        sliding_window=64,
        max_position_embeddings=512,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return MistralForCausalLM(cfg)


@pytest.mark.parametrize("cache", ["plain", "sliding"])
def test_shared_prompt_gradient_is_bitwise_repeatable(tiny, two_threads, cache) -> None:  # type: ignore[no-untyped-def]
    """16 rows reading 4 prompts of 96 tokens in turn ([0, 1, 2, 3] x 4): each thread's
    half of the cache gather meets the same prompts at the same time, which is where an
    unordered accumulation of the rows' cache gradients shows. 'sliding': a cache that is
    not plain key/value tensors (read in place, with its graph)."""
    model = tiny[0] if cache == "plain" else _sliding_window_model()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 2000, (96,), generator=g).tolist() for _ in range(4)] * 4
    comps = [torch.randint(3, 2000, (24 - r,), generator=g).tolist() for r in range(16)]
    rows = list(range(16))  # row r reads prompt r % 4
    first = _shared_prompt_grads(model, prompts, comps, rows)
    for _ in range(5):
        assert torch.equal(_shared_prompt_grads(model, prompts, comps, rows), first)


def _run_files(run: Path) -> tuple[list[dict], list[dict], dict[str, torch.Tensor]]:  # type: ignore[type-arg]
    from safetensors.torch import load_file

    from rlvr.train.checkpoint import latest_checkpoint

    trajs = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    for m in metrics:  # wall-clock timings are the only fields allowed to differ
        for k in [k for k in m if k.startswith("time/") or k.endswith("_s")]:
            del m[k]
    for t in trajs:
        t.pop("timings")
    ckpt = latest_checkpoint(run / "checkpoints")
    assert ckpt is not None
    return trajs, metrics, load_file(str(ckpt / "model" / "model.safetensors"))


def _small_model_dir(path: Path) -> Path:
    """A random 4-layer Llama with the SmolLM2 tokenizer, saved as a model directory:
    wider key/value heads than the tiny fixture model (4 x 32), so every layer's cache
    gather is large enough to be split across threads."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from rlvr.rollout.models import embedded_tokenizer_dir

    tok = AutoTokenizer.from_pretrained(str(embedded_tokenizer_dir()))
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        LlamaForCausalLM(cfg).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


def test_same_seed_same_run_bit_for_bit(tmp_path: Path) -> None:
    """Two short training runs of one config, two intra-op threads: the same trajectories
    (tokens, behaviour log-probs, rewards), metrics and weights, bit for bit. The replies
    stop at a 'c', so completions have varied lengths and each step's micro-batch of 32
    rows interleaves the groups that share a prompt; the prompts are long enough (over
    100 tokens) for the cache gathers to take the multi-threaded kernels."""
    from rlvr.config import load_config
    from rlvr.train.loop import train
    from tests.integration.toy_env import DOMAIN

    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "near", "riverbanks", "while"]
    with (tmp_path / "tasks.jsonl").open("w") as f:
        for i in range(8):
            text = " ".join(words[(i + j) % len(words)] for j in range(90))
            f.write(json.dumps({"id": f"toy/{i}", "domain": DOMAIN, "prompt": f"Task {i}: {text}"}) + "\n")
    quick = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
    overrides = [
        f"model.name_or_path={_small_model_dir(tmp_path / 'model')}",
        f"tasks.source={tmp_path / 'tasks.jsonl'}",
        "tasks.eval_fraction=0.01",
        "eval.before_training=false",
        "eval.after_training=false",
        "generation.max_new_tokens=24",
        "generation.stop=[c]",
        "algo.group_size=8",
        "train.prompts_per_step=4",
        "train.micro_batch_size=32",
        "train.steps=4",
        "train.lr=1e-3",
        "train.threads=2",
        "plugins=[tests.integration.toy_env]",
        f"output_dir={tmp_path}",
    ]
    runs = []
    for name in ("a", "b"):
        train(load_config(quick, [*overrides, f"name={name}"]), quiet=True)
        runs.append(_run_files(tmp_path / name))
    (ta, ma, wa), (tb, mb, wb) = runs
    assert len({len(t["completion_ids"]) for t in ta}) > 3  # lengths really vary
    assert ta == tb
    assert ma == mb
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
