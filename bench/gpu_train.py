"""rlvr's training loop on a GPU beside the same loop on the CPU of the same machine.

A model of SmolLM2-135M-Instruct's exact shape (its config.json and tokenizer, random
weights: the real weights are not needed to time the loop, and a random model writes
every completion to the token limit, the worst case), 4 prompts x 4 generations a step,
an entropy bonus of 0.01 (a random model's rewards are all 0, so GRPO's advantages are 0
and the learner would skip every row as inert: the bonus gives each row a gradient),
at most 128 new tokens, full fine-tuning, no reference model — the configuration of
bench/trl_vs_rlvr.py — trained for a few steps with `model.device=cuda`, then with
`model.device=cpu`. Reported for each: completion tokens per second over the training
steps, seconds per step (rollout / train), peak GPU memory; plus the largest difference
between the CUDA and CPU log-probs of the same completions under the same weights.

    python bench/gpu_train.py --smol-dir DIR_WITH_CONFIG_AND_TOKENIZER [--steps 4] [--cpu-steps 2]
    python bench/gpu_train.py --smoke     # no GPU: one CPU step of a tiny random model (the test suite)

Figures come from the run's own records (bench/figures.py), the first step left out (warm-up).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def make_model(smol_dir: Path, out_dir: Path) -> Path:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    cfg = AutoConfig.from_pretrained(str(smol_dir))
    model = AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(str(out_dir))
    for f in smol_dir.iterdir():
        if f.name != "config.json":
            shutil.copy(f, out_dir / f.name)
    return out_dir


def run(model_dir: Path | str, device: str, steps: int, domain_source: str, max_new: int = 128) -> dict:
    import torch
    from figures import run_figures

    from rlvr.config import load_config
    from rlvr.train.loop import train

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            None,
            [
                f"output_dir={tmp}", "name=gpu", f"model.name_or_path={model_dir}", f"model.device={device}",
                f"tasks.source={domain_source}", f"train.steps={steps}", "train.prompts_per_step=4",
                "algo.group_size=4", f"generation.max_new_tokens={max_new}", "generation.temperature=1.0",
                "algo.kl_coef=0", "algo.entropy_coef=0.01", "eval.before_training=false", "eval.after_training=false",
                "train.checkpoint_every=0", "train.keep_checkpoints=1",
            ],
        )  # fmt: skip
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        train(cfg, quiet=True)
        wall = time.perf_counter() - t0
        f = run_figures(Path(tmp) / "gpu", skip_first=1)  # the first step pays for warm-up (CUDA context, kernels)
    n = f["steps_timed"]
    return {
        "device": device,
        "steps_timed": n,
        "completion_tokens": f["tokens"],
        "tokens_per_s": f["tokens_per_s"],
        "step_s": f["steps_s"] / n,
        "rollout_s_per_step": f["rollout_s"] / n,
        "train_s_per_step": f["train_s"] / n,
        "logprob_mismatch": f["mismatch"],
        "wall_s": wall,
        "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None,
    }


def cpu_vs_cuda_logprobs(model_dir: Path) -> float:
    import torch

    from rlvr.learner.logprobs import sequence_logprobs
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.hf import HFEngine
    from rlvr.rollout.models import load_policy

    torch.backends.cuda.matmul.allow_tf32 = False
    cpu, tok = load_policy(str(model_dir), device="cpu")
    gpu, _ = load_policy(str(model_dir), device="cuda")
    prompts = [tok.encode("def add(a, b):"), tok.encode("Write a function that reverses a string.")]
    comps = HFEngine(gpu, tok).generate(prompts, SamplingParams(max_new_tokens=32, temperature=1.0, seed=1))
    ids = [c.token_ids for c in comps]
    with torch.no_grad():
        a = sequence_logprobs(cpu, prompts, ids, pad_id=tok.pad_token_id)[0]
        b = sequence_logprobs(gpu, prompts, ids, pad_id=tok.pad_token_id)[0].cpu()
    behaviour = torch.tensor([c.logprobs for c in comps])
    return max(float((a - b).abs().max()), float((b - behaviour).abs().max()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--smol-dir", type=Path, help="SmolLM2-135M's config.json and tokenizer (required but with --smoke)"
    )
    ap.add_argument("--smoke", action="store_true", help="no GPU: one CPU step of a tiny random model, nothing saved")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--cpu-steps", type=int, default=2)
    ap.add_argument("--source", default="bundled:python_functions")
    ap.add_argument("--out", type=Path, default=Path("gpu_train.json"))
    args = ap.parse_args()
    if args.smoke:
        print(json.dumps(run("tiny-random", "cpu", 1, args.source, max_new=8)))
        return
    if args.smol_dir is None:
        ap.error("--smol-dir is required (or --smoke)")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = make_model(args.smol_dir, Path(tmp) / "smol-random")
        import torch

        result: dict = {"source": args.source, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
        result["logprob_cpu_vs_cuda_max_abs"] = cpu_vs_cuda_logprobs(model_dir)
        print(json.dumps(result), flush=True)
        result["cuda"] = run(model_dir, "cuda", args.steps, args.source)
        print(json.dumps(result["cuda"]), flush=True)
        if args.cpu_steps:
            result["cpu"] = run(model_dir, "cpu", args.cpu_steps, args.source)
            print(json.dumps(result["cpu"]), flush=True)
            result["speedup"] = result["cuda"]["tokens_per_s"] / result["cpu"]["tokens_per_s"]
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
