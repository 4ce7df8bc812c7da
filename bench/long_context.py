"""Memory and time per context length for the HF engine: one generate call on a prompt of
N tokens (a long episode's context at its last turn), each length in a fresh process so
that its peak resident memory is its own.

Baseline, same run: the process with the model loaded and nothing generated (its peak
is the floor), and the KV cache's size by arithmetic (layers x kv heads x head dim x 2
x 4 bytes a token): what a growing per-episode cache would hold.

    python bench/long_context.py                                 # tiny random model, 32k positions
    python bench/long_context.py --model smollm2-135m-instruct --lengths 1024 2048 4096 8000

`--turns N` times an episode of N turns instead (a prompt, then each turn's reply and
a feedback message appended): the engine keeping the episode's context between turns
(`HFEngine.episode_cache`, what the runner uses for multi-turn batches) against the same
engine encoding the whole context again every turn, on the same sequence of contexts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import torch
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.models import TINY, load_policy, tiny_model
name, n, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model, tok = load_policy(name, seed=0)
if name == TINY:
    model = tiny_model(len(tok), 0, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, max_positions=32768)
    model.eval()
c = model.config
kv_per_token = c.num_hidden_layers * c.num_key_value_heads * (c.hidden_size // c.num_attention_heads) * 2 * 4
engine = HFEngine(model, tok, batch_size=1)
engine.generate([[5, 6, 7]], SamplingParams(max_new_tokens=2, seed=0))  # warm-up: kernels, packing
floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
if n:
    ids = torch.randint(3, len(tok) - 1, (n,), generator=torch.Generator().manual_seed(0)).tolist()
    engine.generate([ids], SamplingParams(max_new_tokens=new, seed=0))
took = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"tokens": n, "floor_bytes": floor, "peak_bytes": peak, "generate_s": took,
                  "kv_bytes_per_token": kv_per_token, "limit": c.max_position_embeddings}))
"""


def one(model: str, n: int, new: int) -> dict:  # type: ignore[type-arg]
    done = subprocess.run([sys.executable, "-c", CHILD, model, str(n), str(new)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{model} at {n} tokens: {done.stderr.strip().splitlines()[-1:]}")
    row: dict = json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[type-arg]
    return row


EPISODE = r"""
import json, sys, time
import torch
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.models import TINY, load_policy, tiny_model
name, turns, new, feedback, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
model, tok = load_policy(name, seed=0)
if name == TINY:
    model = tiny_model(len(tok), 0, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, max_positions=32768)
    model.eval()
g = torch.Generator().manual_seed(0)
def rand(n):
    return torch.randint(3, len(tok) - 1, (n,), generator=g).tolist()
prompts = [rand(400) for _ in range(rows)]
fb = [[rand(feedback) for _ in range(rows)] for _ in range(turns)]
params = SamplingParams(max_new_tokens=new, seed=0, stop=())
out = {}
for mode in ("kept", "again"):
    engine = HFEngine(model, tok, batch_size=rows)
    engine.generate([[5, 6, 7]], SamplingParams(max_new_tokens=2, seed=0))  # warm-up
    ctx, per_turn = [list(p) for p in prompts], []
    scope = engine.episode_cache() if mode == "kept" else None
    store = scope.__enter__() if scope else None
    for k in range(turns):
        t0 = time.perf_counter()
        got = engine.generate(ctx, params)
        per_turn.append(time.perf_counter() - t0)
        ctx = [c + x.token_ids + fb[k][i] for i, (c, x) in enumerate(zip(ctx, got))]
    if scope:
        scope.__exit__(None, None, None)
    out[mode] = {"turn_s": per_turn, "total_s": sum(per_turn), "final_context": max(map(len, ctx)),
                 "prefilled": store.prefilled if store else None}
print(json.dumps(out))
"""


def episode(model: str, turns: int, new: int, feedback: int, rows: int) -> dict:  # type: ignore[type-arg]
    argv = [sys.executable, "-c", EPISODE, model, str(turns), str(new), str(feedback), str(rows)]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{model}, {turns} turns: {done.stderr.strip().splitlines()[-1:]}")
    out: dict = json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[type-arg]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny-random")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096, 8192, 16384, 32000])
    ap.add_argument("--new", type=int, default=16, help="tokens generated after the prompt (default 16)")
    ap.add_argument("--turns", type=int, help="time an episode of this many turns instead (kept context vs again)")
    ap.add_argument("--feedback", type=int, default=120, help="--turns: tokens appended after each reply")
    ap.add_argument("--rows", type=int, default=4, help="--turns: episodes in the batch")
    ap.add_argument("--out", type=Path, default=Path("bench/results/long_context.json"))
    args = ap.parse_args(argv)
    if args.turns:
        return _episode(args)
    base = one(args.model, 0, args.new)
    rows = []
    for n in args.lengths:
        if n + args.new > base["limit"]:
            print(
                f"long_context: {n} + {args.new} tokens is past the model's {base['limit']} positions", file=sys.stderr
            )
            return 2
        r = one(args.model, n, args.new)
        r["over_floor_mib"] = (r["peak_bytes"] - base["peak_bytes"]) / 2**20
        r["kv_cache_mib"] = r["kv_bytes_per_token"] * (n + args.new) / 2**20
        rows.append(r)
        print(
            f"{n:6d} tokens: peak {r['peak_bytes'] / 2**20:7.0f} MiB "
            f"({r['over_floor_mib']:6.0f} over the loaded model), "
            f"KV cache {r['kv_cache_mib']:6.1f} MiB by arithmetic, generate {r['generate_s']:6.2f} s"
        )
    from machine import cpu_name

    result = {"machine": f"{cpu_name()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}", "model": args.model,
              "floor_mib": base["peak_bytes"] / 2**20, "new_tokens": args.new, "rows": rows}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"loaded model alone: {result['floor_mib']:.0f} MiB; wrote {args.out}")
    print(json.dumps({"model": args.model, "rows": [[r["tokens"], round(r["over_floor_mib"])] for r in rows]}))
    return 0


def _episode(args: argparse.Namespace) -> int:
    r = episode(args.model, args.turns, args.new, args.feedback, args.rows)
    kept, again = r["kept"], r["again"]
    for k, (a, b) in enumerate(zip(kept["turn_s"], again["turn_s"], strict=True), 1):
        print(f"turn {k:3d}: kept context {a:6.2f} s, whole context again {b:6.2f} s")
    speedup = again["total_s"] / kept["total_s"]
    print(
        f"{args.turns} turns, {args.rows} episodes, context {kept['final_context']} tokens at the end: "
        f"kept {kept['total_s']:.1f} s vs again {again['total_s']:.1f} s ({speedup:.2f}x); "
        f"{kept['prefilled']} tokens prefilled with the cache"
    )
    from machine import cpu_name

    result = {"machine": f"{cpu_name()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}", "model": args.model,
              "turns": args.turns, "rows": args.rows, "new_tokens": args.new, "feedback_tokens": args.feedback,
              "episode": r, "speedup": speedup}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"model": args.model, "turns": args.turns, "speedup": speedup}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
