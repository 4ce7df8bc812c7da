"""Generation against this machine's memory-bandwidth limit, in one run.

Decoding a small model on a CPU is bound by memory bandwidth: each decoding step reads
every weight once for the whole batch, plus each row's KV cache. This bench measures, in
the same process and back to back:

  bandwidth   how fast this machine reads memory as a decode step does (a torch sum over
              a buffer far larger than the caches, all threads; best of several)
  bare model  the model's own decoding steps (the engine's path: packed weights, the
              preallocated cache) with no sampling and no bookkeeping: the floor the
              engine can reach on this machine
  engine      HFEngine.generate on the quickstart's batch (4 prompts x 4 samples, 128 new
              tokens, temperature 1), as training calls it, and beside it the same engine
              with PyTorch's flash kernel for decoding steps (the path before
              generation.single_query_attention): the baseline
  matmul peak this CPU's n x n matrix-product rate: at batch 16 a float32 step's weight
              products may be bound by arithmetic before bandwidth

and reports decode steps/s and tokens/s against the limit the bandwidth implies for the
bytes one step reads (weights + the KV cache at the mean context), float32 and, where the
CPU packs bfloat16, bfloat16 beside it.

    .venv/bin/python bench/generation.py [--batch 16] [--new 128] [--dtypes float32 bfloat16]
    .venv/bin/python bench/generation.py --smoke      # a tiny random model (the test suite)

Results: bench/results/generation.json (not written by --smoke).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

PROMPTS, GROUP, NEW = 4, 4, 128


def read_bandwidth_gbs(mib: int = 512, repeats: int = 7) -> float:
    """GB/s of a sum over `mib` MiB of float32 (best of `repeats`): memory read as a decode
    step reads its weights, once, streaming."""
    import torch

    x = torch.ones(mib * 2**20 // 4, dtype=torch.float32)
    x.sum()  # fault the pages in
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - t0)
    return x.numel() * 4 / best / 1e9


def matmul_gflops(dtype: str, n: int = 2048, repeats: int = 5) -> float:
    """This CPU's measured matrix-product peak (GFLOP/s of an n x n product, best of
    `repeats`, all threads) in `dtype`: the compute bound of a step."""
    import torch

    t = getattr(torch, dtype)
    a, b = torch.randn(n, n).to(t), torch.randn(n, n).to(t)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def step_flops(model: Any, batch: int) -> float:
    """Multiply-adds x 2 of one decoding step's weight products (attention over the cache
    is a few percent at these lengths and is left out)."""
    return 2.0 * sum(p.numel() for p in model.parameters()) * batch


def step_bytes(model: Any, batch: int, context: float, dtype_bytes: int) -> float:
    """Bytes one decoding step reads: every weight matrix once (the embedding table only
    as the tied output head) plus the KV cache of `batch` rows at `context` tokens."""
    c = model.config
    weights = sum(p.numel() for p in model.parameters()) * dtype_bytes
    heads = getattr(c, "num_key_value_heads", c.num_attention_heads)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    kv = 2 * c.num_hidden_layers * heads * head_dim * context * batch * dtype_bytes
    return weights + kv


def bare_decode(model: Any, batch: int, prompt_len: int, steps: int, dtype: str) -> float:
    """Seconds per decoding step of the model alone (the engine's packed weights and
    preallocated cache, autocast as the engine sets it), after one prefill."""
    import torch

    from rlvr.rollout.attention import decode_attention
    from rlvr.rollout.kvcache import preallocated_cache
    from rlvr.rollout.models import autocast
    from rlvr.rollout.packed import packed_linears

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt_len), generator=g)
    cache = preallocated_cache(model.config.num_hidden_layers, prompt_len + steps + 1)
    attn = torch.ones((batch, prompt_len), dtype=torch.long)
    with (
        torch.no_grad(),
        autocast(torch.device("cpu"), dtype),
        packed_linears(model, rows_hint=batch),
        decode_attention(model),
    ):
        out = model(input_ids=ids, attention_mask=attn, past_key_values=cache, use_cache=True, logits_to_keep=1)
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for i in range(steps):
            attn = torch.cat([attn, torch.ones((batch, 1), dtype=attn.dtype)], dim=1)
            pos = torch.full((batch, 1), prompt_len + i)
            out = model(input_ids=tok, attention_mask=attn, position_ids=pos, past_key_values=cache,
                        use_cache=True, logits_to_keep=1)  # fmt: skip
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
        return (time.perf_counter() - t0) / steps


def engine_run(
    model: Any, tok: Any, batch: int, new: int, dtype: str, seed: int = 0, fast_attention: bool = True
) -> dict[str, float]:
    """The engine on the quickstart's batch: seconds, tokens, decoding steps."""
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.hf import HFEngine
    from rlvr.rollout.runner import encode_prompt
    from rlvr.tasks import load_tasks

    group = GROUP if batch % GROUP == 0 else 1
    tasks = load_tasks("bundled:python_functions")[: batch // group]
    prompts = [encode_prompt(tok, [{"role": "user", "content": t.prompt}], "```python\n") for t in tasks]
    prompts = [p for p in prompts for _ in range(group)]
    engine = HFEngine(model, tok, batch_size=batch, compute_dtype=dtype, fast_attention=fast_attention)
    params = SamplingParams(max_new_tokens=new, temperature=1.0, seed=seed)
    engine.generate(prompts[:group], SamplingParams(max_new_tokens=4, seed=seed))  # warm-up
    t0 = time.perf_counter()
    done = engine.generate(prompts, params)
    seconds = time.perf_counter() - t0
    lengths = [len(c.token_ids) for c in done]
    return {
        "seconds": seconds,
        "tokens": float(sum(lengths)),
        "decode_steps": float(max(lengths)),
        "mean_prompt": sum(map(len, prompts)) / len(prompts),
        "mean_length": sum(lengths) / len(lengths),
    }


def measure(model_name: str, batch: int, new: int, dtypes: list[str]) -> dict[str, Any]:
    import torch

    from rlvr.rollout.models import load_policy
    from rlvr.rollout.packed import packing_supported

    torch.set_num_threads(os.cpu_count() or 1)
    model, tok = load_policy(model_name)
    model.eval()
    bw = read_bandwidth_gbs()
    out: dict[str, Any] = {"model": model_name, "batch": batch, "new_tokens": new, "read_gbs": bw, "by_dtype": {}}
    for dtype in dtypes:
        if dtype == "bfloat16" and not packing_supported(torch.bfloat16):
            out["by_dtype"][dtype] = {"skipped": "this CPU cannot pack bfloat16 (no AVX-512 / AVX-NE-CONVERT)"}
            continue
        # the baseline first, in the same process: the engine with PyTorch's flash kernel
        # for decoding steps (generation.single_query_attention false: the path before)
        flash = engine_run(model, tok, batch, new, dtype, fast_attention=False)
        e = engine_run(model, tok, batch, new, dtype)
        context = e["mean_prompt"] + e["decode_steps"] / 2  # the cache's mean length over the call
        size = 2 if dtype == "bfloat16" else 4
        limit_steps = bw * 1e9 / step_bytes(model, batch, context, size)
        peak = matmul_gflops(dtype)
        compute_steps = peak * 1e9 / step_flops(model, batch)
        bare_s = bare_decode(model, batch, int(e["mean_prompt"]), min(new, 64), dtype)
        steps_s = e["decode_steps"] / e["seconds"]
        out["by_dtype"][dtype] = {
            **e,
            "engine_steps_per_s": steps_s,
            "engine_tokens_per_s": e["tokens"] / e["seconds"],
            "flash_engine_steps_per_s": flash["decode_steps"] / flash["seconds"],
            "flash_engine_tokens_per_s": flash["tokens"] / flash["seconds"],
            "bare_steps_per_s": 1 / bare_s,
            "limit_steps_per_s": limit_steps,
            "limit_tokens_per_s_at_batch": limit_steps * batch,
            "matmul_gflops": peak,
            "compute_limit_steps_per_s": compute_steps,
            "engine_fraction_of_limit": steps_s / limit_steps,
            "bare_fraction_of_limit": (1 / bare_s) / limit_steps,
            "engine_fraction_of_compute_limit": steps_s / compute_steps,
        }
    f32 = out["by_dtype"].get("float32", {})
    for d in out["by_dtype"].values():  # every dtype against the float32 bandwidth limit (the yardstick)
        if "engine_steps_per_s" in d and "limit_steps_per_s" in f32:
            d["engine_fraction_of_float32_limit"] = d["engine_steps_per_s"] / f32["limit_steps_per_s"]
    return out


def report(r: dict[str, Any]) -> None:
    print(f"\n{r['model']}, batch {r['batch']}, <= {r['new_tokens']} new tokens; memory read {r['read_gbs']:.1f} GB/s")
    print(f"{'dtype':<10}{'bw limit':>9}{'mm limit':>9}{'bare':>7}{'flash eng':>10}{'engine':>8}{'eng tok/s':>10}"
          f"{'bare/bw':>8}{'eng/bw':>7}{'eng/f32bw':>10}{'eng/mm':>7}   (decode steps/s)")  # fmt: skip
    for dtype, d in r["by_dtype"].items():
        if "skipped" in d:
            print(f"{dtype:<10} skipped: {d['skipped']}")
            continue
        f32_share = d.get("engine_fraction_of_float32_limit", float("nan"))
        print(
            f"{dtype:<10}{d['limit_steps_per_s']:>9.1f}{d['compute_limit_steps_per_s']:>9.1f}{d['bare_steps_per_s']:>7.1f}"
            f"{d['flash_engine_steps_per_s']:>10.1f}{d['engine_steps_per_s']:>8.1f}{d['engine_tokens_per_s']:>10.1f}"
            f"{d['bare_fraction_of_limit']:>8.0%}{d['engine_fraction_of_limit']:>7.0%}"
            f"{f32_share:>10.0%}{d['engine_fraction_of_compute_limit']:>7.0%}"
        )
    print("bw limit: the bytes a step reads at the measured read bandwidth; mm limit: a step's weight products at the")
    print("measured matrix-product peak; flash eng: the engine with PyTorch's flash kernel (the path before, same run)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--batch", type=int, default=PROMPTS * GROUP)
    ap.add_argument("--new", type=int, default=NEW)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16"])
    ap.add_argument("--smoke", action="store_true", help="a tiny random model, batch 4, 8 tokens; nothing saved")
    a = ap.parse_args()
    if a.smoke:
        a.model, a.batch, a.new = "tiny-random", 4, 8
    r = measure(a.model, a.batch, a.new, a.dtypes)
    r["machine"] = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    report(r)
    if not a.smoke:
        (Path(__file__).parent / "results" / "generation.json").write_text(json.dumps(r, indent=1))
    print(json.dumps({k: v for k, v in r.items() if k != "machine"}))


if __name__ == "__main__":
    main()
