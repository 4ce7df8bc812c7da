"""The sharded learner (FSDP2) under torchrun on the GPU's backend, beside one plain process.

The same short run twice, back to back, each as a user starts it: `python -m rlvr.cli
train` (one process, the plain learner) and `torchrun --nproc-per-node N -m
rlvr.train.sharded` (the learner sharded with FSDP2 across N ranks; NCCL on CUDA, gloo
on the CPU; rank 0 generates). With one GPU, N is 1: the process group, the device mesh,
FSDP2's sharding and every collective the learner calls then run through NCCL with a
single rank, which is what can be checked on a one-GPU machine (NCCL refuses two ranks
on one device). Reported per step: reward, loss and grad norm of both runs and their
differences, seconds per step; the first step's rollouts are the same in both runs (same
weights, same seed), so its reward must agree exactly and its loss and grad norm to float rounding (the
loss is GRPO's plus an entropy bonus: a random model's rewards are all 0, and the bonus
gives every row a gradient).
Later steps sample from weights that differ by rounding and are reported, not checked.

    python bench/gpu_sharded.py --smol-dir DIR [--nproc N] [--steps 3] [--out F.json]
    python bench/gpu_sharded.py --smoke    # the CPU with gloo, tiny random model, 1 step (the test suite)

The model for --smol-dir is made as bench/gpu_train.py makes it (SmolLM2-135M's shape,
random weights). Figures come from each run's own records (bench/figures.py).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import BenchError, step_metric, step_rows

ROOT = Path(__file__).resolve().parents[1]
LOSS_REL_TOL = 1e-3  # first step's loss and grad norm, sharded vs plain (rounding, other summation order)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _overrides(model: str, device: str, steps: int, max_new: int, out: Path, name: str) -> list[str]:
    return [
        f"output_dir={out}", f"name={name}", f"model.name_or_path={model}", f"model.device={device}",
        "tasks.source=bundled:python_functions", f"train.steps={steps}", "train.prompts_per_step=4",
        "algo.group_size=4", "algo.overlong_filter=false", "algo.entropy_coef=0.01",
        f"generation.max_new_tokens={max_new}", "generation.temperature=1.0",
        "algo.kl_coef=0", "eval.before_training=false", "eval.after_training=false",
        "train.checkpoint_every=0", "train.keep_checkpoints=1",
    ]  # fmt: skip


def _run(cmd: list[str], timeout_s: float) -> float:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise BenchError(f"{' '.join(cmd[:6])} ... exited {done.returncode}:\n{tail}")
    return time.perf_counter() - t0


def _figures(run_dir: Path) -> dict[str, list[float]]:
    rows = step_rows(run_dir)
    return {
        "reward": step_metric(rows, "reward/mean", run_dir),
        "loss": step_metric(rows, "train/loss", run_dir),
        "grad_norm": step_metric(rows, "train/grad_norm", run_dir),
        "step_s": [float(r["time/rollout_wait_s"]) + float(r["time/train_s"]) for r in rows],
        "train_s": step_metric(rows, "time/train_s", run_dir),
    }


def compare(model: str, device: str, nproc: int, steps: int, max_new: int, timeout_s: float) -> dict:
    config = str(ROOT / "examples" / "quickstart.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        plain = [sys.executable, "-m", "rlvr.cli", "train", "--quiet", config]
        wall_plain = _run([*plain, *_overrides(model, device, steps, max_new, out, "plain")], timeout_s)
        launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
        launcher += ["--master-port", str(_free_port()), "-m", "rlvr.train.sharded", config]
        wall_sharded = _run([*launcher, *_overrides(model, device, steps, max_new, out, "sharded")], timeout_s)
        a, b = _figures(out / "plain"), _figures(out / "sharded")
    if len(a["loss"]) != steps or len(b["loss"]) != steps:
        raise BenchError(f"expected {steps} steps in each run, got plain {len(a['loss'])}, sharded {len(b['loss'])}")
    first_loss_rel = abs(b["loss"][0] - a["loss"][0]) / max(abs(a["loss"][0]), 1e-12)
    result = {
        "device": device,
        "backend": "nccl" if device.startswith("cuda") else "gloo",
        "nproc": nproc,
        "steps": steps,
        "plain": a,
        "sharded": b,
        "wall_s": {"plain": wall_plain, "sharded": wall_sharded},
        "first_step_reward_equal": a["reward"][0] == b["reward"][0],
        "first_step_loss_rel_diff": first_loss_rel,
        "first_step_grad_norm_rel_diff": abs(b["grad_norm"][0] - a["grad_norm"][0]) / max(a["grad_norm"][0], 1e-12),
        "train_s_ratio_sharded_over_plain": sum(b["train_s"]) / max(sum(a["train_s"]), 1e-12),
    }
    result["agrees"] = (
        result["first_step_reward_equal"]
        and first_loss_rel <= LOSS_REL_TOL
        and result["first_step_grad_norm_rel_diff"] <= LOSS_REL_TOL
    )
    return result


def make_model(smol_dir: Path, out_dir: Path) -> Path:
    from gpu_train import make_model as make

    return make(smol_dir, out_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smol-dir", type=Path, help="SmolLM2-135M's config.json and tokenizer (not with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="the CPU with gloo, tiny random model, 1 step, nothing saved")
    ap.add_argument("--nproc", type=int, default=0, help="ranks (default: the number of GPUs)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--timeout-s", type=float, default=240.0, help="per run")
    ap.add_argument("--out", type=Path, default=Path("gpu_sharded.json"))
    args = ap.parse_args()
    try:
        if args.smoke:
            r = compare("tiny-random", "cpu", args.nproc or 1, 1, 8, args.timeout_s)
            print(json.dumps(r))
            sys.exit(0 if r["agrees"] else 1)
        if args.smol_dir is None:
            ap.error("--smol-dir is required (or --smoke)")
        import torch

        if not torch.cuda.is_available():
            ap.error("no CUDA device here (--smoke runs on the CPU)")
        nproc = args.nproc or torch.cuda.device_count()
        with tempfile.TemporaryDirectory() as tmp:
            model_dir = make_model(args.smol_dir, Path(tmp) / "smol-random")
            r = compare(str(model_dir), "cuda", nproc, args.steps, args.max_new, args.timeout_s)
        r["gpu"] = torch.cuda.get_device_name(0)
        r["torch"] = torch.__version__
        r["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except BenchError as e:
        print(f"gpu_sharded: {e}", file=sys.stderr)
        sys.exit(3)
    args.out.write_text(json.dumps(r, indent=2))
    print(json.dumps(r, indent=2))
    sys.exit(0 if r["agrees"] else 1)


if __name__ == "__main__":
    main()
