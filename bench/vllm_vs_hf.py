"""The vLLM engine against the HF engine on one GPU, on the TRL-bench configuration.

Prompts: the bundled Python tasks, chat-templated (as rlvr's rollouts send them), P
prompts x G samples each (consecutive, as a group is), temperature 1.0, a fixed seed, at
most N new tokens, for (P x G, N) in 4x4 and 64x8 by 128 and 1,024 new tokens. Each engine
first generates once untimed (CUDA graphs, kernels), then the timed call; reported per
engine: completion tokens per second of wall time (every generated token, the EOS
included), the call's seconds, mean completion length and finish reasons; and the ratio
vLLM / HF (target on an H200: at least 10x at 64x8). The HF engine gets its best case:
all rows in one batch (`--hf-batch-size` to change it).

Then one training step's split with the vLLM engine (`--step-config`, default 64x8 with
128 new tokens): generate, the learner's step on those completions (rlvr's Learner,
GRPO, random 0/1 rewards: the time does not depend on them), and load_version (the new
weights copied into vLLM in place, the prefix cache reset). Two steps run; the second is
reported (the first pays for warm-up).

The policy: `--model` (default the embedded SmolLM2-135M-Instruct), or with `--smol-dir DIR`
a model of SmolLM2-135M-Instruct's exact shape with random weights built from DIR's config
and tokenizer, as bench/gpu_train.py does (a random model writes every completion to the
token limit: the worst case, and the same lengths for both engines). Precision: float32
weights with bfloat16 products (`model.compute_dtype=bfloat16`; vLLM then runs in
bfloat16), or `--fp32` for float32 throughout.

Results go to bench/results/vllm_vs_hf.json (rewritten after each measurement, so a run
stopped by a time limit keeps what it measured), with the device named.

    python bench/vllm_vs_hf.py [--smol-dir .gpu/smol] [--configs 4x4:128,64x8:1024] [--out PATH]
    python bench/vllm_vs_hf.py --report bench/results/vllm_vs_hf.json   # the table of a results file
    python bench/vllm_vs_hf.py --smoke                                  # no GPU, no vLLM: see below

An engine that returns fewer completions than prompts or no tokens, or a learner that
skipped the measured step, is an error, never a figure; so is, for --report, a results
file lacking a figure. --smoke (the test suite; this machine has neither a GPU nor vLLM)
checks the arguments' parsing, then runs the same measuring code on the CPU with the HF
engine standing in for vLLM (the tiny random model, 2x4 prompts x samples, 8 new tokens),
writes its results to a temporary file (or --out) and prints them through --report's
reader; the last line of stdout is the reader's JSON. Nothing is written under bench/results.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONFIGS = "4x4:128,4x4:1024,64x8:128,64x8:1024"
SEED = 1234
TARGET = 10.0


SMOKE = "2x4:8"
"""--smoke's configuration and train-step split: PxG:NEW."""


def need_cuda_and_vllm() -> None:
    try:
        import torch
    except ModuleNotFoundError:
        sys.exit("vllm_vs_hf: torch is not installed")
    if not torch.cuda.is_available():
        sys.exit("vllm_vs_hf: no CUDA device here (this bench compares the engines on a GPU)")
    try:
        import vllm  # noqa: F401
    except ModuleNotFoundError:
        sys.exit("vllm_vs_hf: vLLM is not installed (pip install 'rlvr[vllm]' on the CUDA machine)")


def parse_configs(text: str) -> list[tuple[int, int, int]]:
    out = []
    for part in text.split(","):
        shape, new = part.strip().split(":")
        p, g = shape.lower().split("x")
        out.append((int(p), int(g), int(new)))
    return out


def build_prompts(tok: Any, n_prompts: int, group: int) -> list[list[int]]:
    from rlvr.rollout.runner import encode_prompt
    from rlvr.tasks import load_tasks

    tasks = load_tasks("bundled:python_functions")
    rows = []
    for i in range(n_prompts):
        ids = encode_prompt(tok, [{"role": "user", "content": tasks[i % len(tasks)].prompt}], "")
        rows.extend([ids] * group)
    return rows


def _sync() -> None:
    """Wait for the GPU's queued work (nothing to wait for on the CPU: --smoke)."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed_generate(engine: Any, prompts: list[list[int]], max_new: int) -> dict[str, Any]:
    from rlvr.rollout.engine import SamplingParams

    params = SamplingParams(max_new_tokens=max_new, temperature=1.0, seed=SEED)
    engine.generate(prompts[: min(len(prompts), 8)], SamplingParams(max_new_tokens=8, temperature=1.0, seed=SEED))
    _sync()
    t0 = time.perf_counter()
    comps = engine.generate(prompts, params)
    _sync()
    wall = time.perf_counter() - t0
    tokens = sum(len(c.token_ids) for c in comps)
    if len(comps) != len(prompts) or not tokens:
        raise SystemExit(
            f"{type(engine).__name__}: {len(comps)} completions of {len(prompts)} prompts, {tokens} tokens: "
            "it did not do the work, there is no figure"
        )
    reasons: dict[str, int] = {}
    for c in comps:
        reasons[c.finish_reason] = reasons.get(c.finish_reason, 0) + 1
    return {
        "completions": len(comps),
        "completion_tokens": tokens,
        "seconds": wall,
        "tokens_per_s": tokens / wall,
        "mean_length": tokens / len(comps),
        "finish_reasons": reasons,
    }


def train_step_split(engine: Any, model: Any, tok: Any, cfg: Any, n_prompts: int, group: int, max_new: int) -> dict:
    from rlvr.learner.learner import Learner
    from rlvr.rollout.engine import SamplingParams
    from rlvr.types import RewardBreakdown, Trajectory

    learner = Learner(model, cfg, pad_id=tok.pad_token_id)
    prompts = build_prompts(tok, n_prompts, group)
    rng = random.Random(SEED)
    split: dict[str, Any] = {}
    for step in range(2):
        params = SamplingParams(max_new_tokens=max_new, temperature=1.0, seed=SEED + step)
        _sync()
        t0 = time.perf_counter()
        comps = engine.generate(prompts, params)
        t1 = time.perf_counter()
        trajs = [
            Trajectory(
                task_id=str(i // group),
                domain="python",
                group_id=str(i // group),
                prompt_ids=p,
                completion_ids=c.token_ids,
                logprobs=c.logprobs,
                finish_reason=c.finish_reason,
                reward=RewardBreakdown(total=float(rng.random() < 0.5)),
                policy_version=learner.version,
            )
            for i, (p, c) in enumerate(zip(prompts, comps, strict=True))
        ]
        metrics = learner.step(trajs)
        _sync()
        t2 = time.perf_counter()
        engine.load_version(learner.version, model.state_dict())
        _sync()
        t3 = time.perf_counter()
        split = {
            "config": f"{n_prompts}x{group}:{max_new}",
            "completion_tokens": sum(len(c.token_ids) for c in comps),
            "generate_s": t1 - t0,
            "learner_s": t2 - t1,
            "load_version_s": t3 - t2,
            "step_s": t3 - t0,
            "logprob_mismatch": metrics.get("train/logprob_mismatch", metrics.get("logprob_mismatch")),
            "learner_skipped": bool(metrics.get("skipped")),
        }
        print(json.dumps({"train_step": step, **split}), flush=True)
    if split["learner_skipped"]:
        raise SystemExit(f"train step {split['config']}: the learner skipped its step: learner_s is not a figure")
    return split


def measure_config(vl: Any, hf: Any, prompts: list[list[int]], n_prompts: int, group: int, max_new: int) -> dict:
    """One configuration's row: each engine's timed generation and the ratio."""
    run: dict[str, Any] = {"config": f"{n_prompts}x{group}:{max_new}", "rows": len(prompts)}
    run["vllm"] = timed_generate(vl, prompts, max_new)
    print(json.dumps(run), flush=True)
    run["hf"] = timed_generate(hf, prompts, max_new)
    run["hf"]["batch_size"] = hf.batch_size
    run["ratio"] = run["vllm"]["tokens_per_s"] / run["hf"]["tokens_per_s"]
    if n_prompts == 64 and group == 8:
        run["target_met"] = run["ratio"] >= TARGET
    return run


ENGINE_KEYS = ("completions", "completion_tokens", "seconds", "tokens_per_s", "mean_length", "finish_reasons")
SPLIT_KEYS = ("config", "completion_tokens", "generate_s", "learner_s", "load_version_s", "step_s", "logprob_mismatch",
              "learner_skipped")  # fmt: skip


def report(result: dict[str, Any], source: str) -> dict[str, Any]:
    """Print a results file's table and return its figures (per configuration: each
    engine's tokens/s and the ratio; the train step's split). A figure missing, or an
    engine or learner that did no work, is an error."""

    def need(d: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
        lacks = [k for k in keys if k not in d]
        if lacks:
            raise SystemExit(f"{source}: {where} lacks {', '.join(lacks)}")

    need(result, ("device", "compute_dtype", "model", "runs"), "the results")
    if not result["runs"]:
        raise SystemExit(f"{source}: no configuration was measured")
    print(f"{source}: {result['model']} on {result['device']}, {result['compute_dtype']} products")
    print(f"{'config':<12}{'rows':>6}{'vLLM tok/s':>12}{'HF tok/s':>10}{'ratio':>8}  finish reasons (vLLM / HF)")
    runs = []
    for run in result["runs"]:
        need(run, ("config", "rows", "vllm", "hf", "ratio"), "a run")
        for side in ("vllm", "hf"):
            need(run[side], ENGINE_KEYS, f"{run['config']} {side}")
            if run[side]["completions"] != run["rows"] or not run[side]["completion_tokens"]:
                raise SystemExit(f"{source}: {run['config']} {side} did not do the work: there is no figure")
        target = f"  target {'met' if run['target_met'] else 'MISSED'}" if "target_met" in run else ""
        print(
            f"{run['config']:<12}{run['rows']:>6}{run['vllm']['tokens_per_s']:>12.1f}{run['hf']['tokens_per_s']:>10.1f}"
            f"{run['ratio']:>8.2f}  {run['vllm']['finish_reasons']} / {run['hf']['finish_reasons']}{target}"
        )
        runs.append(
            {
                "config": run["config"],
                "vllm": {"tokens_per_s": run["vllm"]["tokens_per_s"]},
                "hf": {"tokens_per_s": run["hf"]["tokens_per_s"]},
                "ratio": run["ratio"],
                **({"target_met": run["target_met"]} if "target_met" in run else {}),
            }
        )
    figures: dict[str, Any] = {"device": result["device"], "compute_dtype": result["compute_dtype"], "runs": runs}
    if "train_step" in result:
        split = result["train_step"]
        need(split, SPLIT_KEYS, "the train step")
        if split["learner_skipped"] or not split["completion_tokens"]:
            raise SystemExit(f"{source}: the train step did no work (learner skipped or no tokens): no figure")
        if not isinstance(split["logprob_mismatch"], int | float):
            raise SystemExit(f"{source}: the train step has no logprob_mismatch (the learner's metric was renamed?)")
        print(
            f"train step {split['config']}: generate {split['generate_s']:.2f} s, learner {split['learner_s']:.2f} s, "
            f"load_version {split['load_version_s']:.2f} s, step {split['step_s']:.2f} s"
        )
        figures["train_step"] = {k: split[k] for k in SPLIT_KEYS if k != "learner_skipped"}
    return figures


def smoke(args: argparse.Namespace) -> None:
    """The measuring code on the CPU (the HF engine in vLLM's seat, the tiny random model)
    into a results file (--out, else a temporary one), printed by report()."""
    import torch

    from rlvr.config import load_config
    from rlvr.rollout.hf import HFEngine
    from rlvr.rollout.model_names import TINY
    from rlvr.rollout.models import load_policy

    ((n_prompts, group, max_new),) = parse_configs(SMOKE)
    model, tok = load_policy(TINY)
    cfg = load_config(None, [f"model.name_or_path={TINY}", f"seed={SEED}", "algo.kl_coef=0",
                             f"generation.max_new_tokens={max_new}"])  # fmt: skip
    t0 = time.perf_counter()
    stand_in = HFEngine(model, tok, batch_size=n_prompts * group, own_weights=True)  # vLLM's seat: its own weights
    result: dict[str, Any] = {
        "device": "cpu (smoke: the HF engine in vLLM's seat)",
        "torch": torch.__version__,
        "vllm": None,
        "compute_dtype": "float32",
        "seed": SEED,
        "target_ratio_64x8": TARGET,
        "runs": [],
        "model": TINY,
        "vllm_startup_s": time.perf_counter() - t0,
    }
    prompts = build_prompts(tok, n_prompts, group)
    hf = HFEngine(model, tok, batch_size=len(prompts))
    result["runs"].append(measure_config(stand_in, hf, prompts, n_prompts, group, max_new))
    result["train_step"] = train_step_split(stand_in, model, tok, cfg, n_prompts, group, max_new)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or Path(tmp) / "vllm_vs_hf.json"
        path.write_text(json.dumps(result, indent=2))
        print(json.dumps(report(json.loads(path.read_text()), "smoke")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--smol-dir", type=Path, help="config + tokenizer of SmolLM2-135M-Instruct: random weights")
    ap.add_argument("--configs", default=CONFIGS, help="PxG:NEW,... (default %(default)s)")
    ap.add_argument("--step-config", default="64x8:128", help="the train-step split's PxG:NEW ('' to skip)")
    ap.add_argument("--hf-batch-size", type=int, default=0, help="HF engine batch (0: all rows at once)")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.4)
    ap.add_argument("--fp32", action="store_true", help="float32 products in both engines (default: bfloat16)")
    ap.add_argument("--eager", action="store_true", help="vLLM without CUDA graphs (enforce_eager)")
    ap.add_argument("--out", type=Path, help="results file (default bench/results/vllm_vs_hf.json; --smoke: none)")
    ap.add_argument("--report", type=Path, metavar="RESULTS", help="print a results file's table, run nothing")
    ap.add_argument("--smoke", action="store_true", help="no GPU: the measuring code on the CPU, HF in vLLM's seat")
    args = ap.parse_args()
    try:
        parse_configs(args.configs)
        if args.step_config and len(parse_configs(args.step_config)) != 1:
            raise ValueError("one configuration")
    except ValueError as e:
        ap.error(f"--configs / --step-config: PxG:NEW[,PxG:NEW...], e.g. 64x8:128 ({e})")
    if args.report is not None:
        print(json.dumps(report(json.loads(args.report.read_text()), str(args.report))))
        return
    if args.smoke:
        smoke(args)
        return
    args.out = args.out or Path(__file__).parent / "results" / "vllm_vs_hf.json"
    need_cuda_and_vllm()

    import torch
    import vllm

    from rlvr.config import load_config
    from rlvr.rollout.hf import HFEngine
    from rlvr.rollout.models import load_policy
    from rlvr.rollout.vllm import VLLMEngine

    compute = "float32" if args.fp32 else "bfloat16"
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "vllm": getattr(vllm, "__version__", "?"),
        "compute_dtype": compute,
        "seed": SEED,
        "target_ratio_64x8": TARGET,
        "runs": [],
    }

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))

    with tempfile.TemporaryDirectory() as tmp:
        if args.smol_dir is not None:
            sys.path.insert(0, str(Path(__file__).parent))
            from gpu_train import make_model

            name = str(make_model(args.smol_dir, Path(tmp) / "smol-random"))
            result["model"] = "SmolLM2-135M-Instruct shape, random weights"
        else:
            name = args.model
            result["model"] = name
        model, tok = load_policy(name, device="cuda")
        overrides = [
            f"model.name_or_path={name}",
            "model.device=cuda",
            f"model.compute_dtype={compute}",
            f"engine.vllm.gpu_memory_utilization={args.gpu_memory_utilization}",
            f"seed={SEED}",
            "algo.kl_coef=0",
            "engine.kind=vllm",
        ]
        cfg = load_config(None, overrides)
        # vLLM first: it sizes its KV cache from the memory free when it starts.
        t0 = time.perf_counter()
        vl = VLLMEngine(cfg, model, tok, enforce_eager=args.eager)
        result["vllm_startup_s"] = time.perf_counter() - t0
        print(json.dumps({"vllm_startup_s": result["vllm_startup_s"]}), flush=True)
        for n_prompts, group, max_new in parse_configs(args.configs):
            prompts = build_prompts(tok, n_prompts, group)
            hf = HFEngine(model, tok, batch_size=args.hf_batch_size or len(prompts), compute_dtype=compute)
            run = measure_config(vl, hf, prompts, n_prompts, group, max_new)
            result["runs"].append(run)
            print(json.dumps(run), flush=True)
            save()
        if args.step_config:
            ((n_prompts, group, max_new),) = parse_configs(args.step_config)
            cfg = load_config(None, [*overrides, f"generation.max_new_tokens={max_new}"])
            result["train_step"] = train_step_split(vl, model, tok, cfg, n_prompts, group, max_new)
            save()
        vl.close()
    save()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
