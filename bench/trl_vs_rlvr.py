"""rlvr against Hugging Face TRL's GRPOTrainer on one CPU configuration, same run, side by side.

Both: the embedded SmolLM2-135M-Instruct, 4 prompts x 4 generations per step, at most
128 new tokens, temperature 1.0, the bundled Python tasks (training split), reward = the
share of tests passed in rlvr's sandbox, no reference model, full fine-tuning, AdamW
lr 1e-5, 6 steps. Each trainer runs in its own process (so peak resident memory is its
own); reported: completion tokens per second of wall time over the training steps,
seconds per step, peak RSS; plus the agreement of rlvr's training-pass log-probs with a
full-logits reference on a real batch.

    bash bench/setup_trl_env.sh            # once: .venv-bench with rlvr + trl
    .venv-bench/bin/python bench/trl_vs_rlvr.py [--steps 6] [--bf16] [--generation-bf16]
    .venv/bin/python bench/trl_vs_rlvr.py --smoke       # rlvr's side, tiny sizes (the test suite)
    .venv/bin/python bench/trl_vs_rlvr.py --report bench/results/trl_vs_rlvr.json

rlvr's figures are read from the run's own records (bench/figures.py: the step metrics
and the trace store, tokens counted over every trajectory generated, as TRL's reward
function sees every completion); TRL's from its trainer.

With --generation-bf16, rlvr runs a second time in the same run generating with bfloat16
products (generation.compute_dtype=bfloat16) and training in float32 (its own log-probs,
so the update stays exact; the behaviour-vs-learner mismatch is printed), beside TRL's
float32 run. The learner's share of a step and its model FLOPs per second against this
CPU's float32 matrix-product peak (measured in the same process) are printed too.

With --bf16 both train and generate in mixed precision (rlvr: model.compute_dtype=bfloat16;
TRL: bf16=True), which pays off on GPUs and on CPUs with AVX-512 BF16 or AMX.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS, PROMPTS, GENS, MAX_NEW, LR = 6, 4, 4, 128, 1e-5
MODEL = "smollm2-135m-instruct"
SMOKE = {"model": "tiny-random", "prompts": 2, "gens": 2, "max_new": 8}  # --smoke: seconds, not minutes
GEN_BF16 = "rlvr_gen_bf16"
SYSTEM = "You are an expert Python programmer. Answer with code only."


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_rlvr(steps: int, out: dict) -> None:
    import torch
    from figures import learner_tokens, run_figures
    from generation import matmul_gflops

    from rlvr.config import load_config
    from rlvr.train.loop import train

    torch.set_num_threads(os.cpu_count() or 1)
    size = {"model": MODEL, "prompts": PROMPTS, "gens": GENS, "max_new": MAX_NEW, **out.get("size", {})}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(
            None,
            [
                f"output_dir={tmp}", "name=bench", f"train.steps={steps}", f"train.prompts_per_step={size['prompts']}",
                f"model.name_or_path={size['model']}", f"algo.group_size={size['gens']}",
                f"generation.max_new_tokens={size['max_new']}", "generation.temperature=1.0",
                f"train.lr={LR}", "algo.kl_coef=0", "eval.before_training=false", "eval.after_training=false",
                f"prompt.system={json.dumps(SYSTEM)}", "train.checkpoint_every=0", "train.keep_checkpoints=1",
                *out.get("overrides", []),
            ],
        )  # fmt: skip
        t0 = time.perf_counter()
        train(cfg, quiet=True)
        wall = time.perf_counter() - t0
        out.update(run_figures(Path(tmp) / "bench"), wall_s=wall)
        out["learner_tokens"] = learner_tokens(Path(tmp) / "bench")
    out["logprob_agreement"], out["params"] = _logprob_agreement(size["model"])
    # the learner against this CPU's matrix-product peak, measured in the same process
    out["matmul_gflops"] = matmul_gflops("float32")
    out["learner_gflops"] = 6 * out["params"] * out["learner_tokens"] / out["train_s"] / 1e9


def _logprob_agreement(model_name: str) -> tuple[float, int]:
    """Max |log-probs of rlvr's training pass - full-logits log_softmax| on a batch: the
    learner's own path (a window's shared prompt pass, rows sorted into micro-batches,
    gradients recorded, chunked fused head) against one plain forward per row."""
    import torch

    from rlvr.config import load_config
    from rlvr.learner.learner import Learner
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.hf import HFEngine
    from rlvr.rollout.models import load_policy
    from rlvr.rollout.runner import encode_prompt
    from rlvr.tasks import load_tasks
    from rlvr.types import Trajectory

    model, tok = load_policy(model_name)
    tasks = load_tasks("bundled:python_functions")[:2]
    prompts = [encode_prompt(tok, [{"role": "user", "content": t.prompt}], "") for t in tasks for _ in range(2)]
    comps = HFEngine(model, tok).generate(prompts, SamplingParams(max_new_tokens=48, temperature=1.0, seed=1))
    trajs = [
        Trajectory(task_id=str(i // 2), domain="python", group_id=str(i // 2), prompt_ids=p, completion_ids=c.token_ids)
        for i, (p, c) in enumerate(zip(prompts, comps, strict=True))
    ]
    cfg = load_config(None, ["train.micro_batch_size=2", "train.logprob_chunk=64", "generation.max_new_tokens=48"])
    learner = Learner(model, cfg, pad_id=tok.pad_token_id)
    worst = 0.0
    for rows, st in learner._micro_batches(model, trajs):
        for j, i in enumerate(rows):
            p, c = prompts[i], trajs[i].completion_ids
            with torch.no_grad():
                logits = model(torch.tensor([p + c])).logits[0, len(p) - 1 : len(p) + len(c) - 1].float()
            ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(c)[:, None]).squeeze(1)
            worst = max(worst, float((st.logprobs[j, : len(c)].detach() - ref).abs().max()))
    return worst, sum(p.numel() for p in model.parameters())


def run_trl(steps: int, out: dict) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rlvr.rewards import completion_reward
    from rlvr.rewards.extract import extract_code
    from rlvr.rollout.models import embedded_model_dir, load_policy
    from rlvr.sandbox import execute
    from rlvr.tasks import load_tasks, split_tasks

    torch.set_num_threads(os.cpu_count() or 1)
    train_tasks, _ = split_tasks(load_tasks("bundled:python_functions"), 0.2)
    by_id = {t.id: t for t in train_tasks}
    data = Dataset.from_list(
        [
            {"prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": t.prompt}], "task_id": t.id}
            for t in train_tasks
        ]
    )
    tokens = [0]
    model, tok = load_policy(MODEL)

    def reward(prompts, completions, task_id, **_):  # type: ignore[no-untyped-def]
        texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
        tokens[0] += sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)
        return [
            completion_reward(execute(extract_code(t), by_id[i].tests)) for t, i in zip(texts, task_id, strict=True)
        ]

    with tempfile.TemporaryDirectory() as tmp:
        args = GRPOConfig(
            output_dir=tmp, max_steps=steps, per_device_train_batch_size=PROMPTS * GENS, num_generations=GENS,
            gradient_accumulation_steps=1, max_completion_length=MAX_NEW, temperature=1.0, beta=0.0,
            learning_rate=LR, use_cpu=True, report_to=[], logging_steps=1, save_strategy="no",
            bf16=out.get("bf16", False), seed=0, gradient_checkpointing=out.get("gradient_checkpointing", False),
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=str(embedded_model_dir()), reward_funcs=reward, args=args, train_dataset=data, processing_class=tok
        )
        del model
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
        logs = [h for h in trainer.state.log_history if "reward" in h]
    out.update(tokens=tokens[0], steps_s=wall, wall_s=wall, reward=[h["reward"] for h in logs])


def child(which: str, steps: int, path: str, extra: dict) -> None:
    out: dict = dict(extra)
    (run_trl if which == "trl" else run_rlvr)(steps, out)
    out["peak_rss_gib"] = _peak_rss_gib()
    Path(path).write_text(json.dumps(out))


def report(results: dict, steps: int) -> dict:
    """Print the side-by-side table from the two sides' results and return the figures it
    quotes (tokens/s per side, the ratio); a side without its figures is an error."""
    need = ("tokens", "steps_s", "peak_rss_gib", "reward")
    for name, r in results.items():
        missing = [k for k in need if k not in r]
        if missing:
            raise SystemExit(f"{name}: the results lack {', '.join(missing)}")
        if not r["tokens"] or not r["steps_s"]:
            raise SystemExit(f"{name}: no tokens or no time recorded: the run failed, there is no figure")
    size = results.get("rlvr", {}).get("size") or {}
    prompts, gens, max_new = size.get("prompts", PROMPTS), size.get("gens", GENS), size.get("max_new", MAX_NEW)
    print(f"\n{steps} steps x {prompts} prompts x {gens} generations, <= {max_new} new tokens, CPU x{os.cpu_count()}")
    print(f"{'trainer':<14} {'tok/s':>8} {'s/step':>8} {'tokens':>8} {'peak GiB':>9}  reward per step")
    figures: dict = {}
    for name, r in results.items():
        figures[f"{name}_tokens_per_s"] = tps = r["tokens"] / r["steps_s"]
        print(
            f"{name:<14} {tps:8.1f} {r['steps_s'] / len(r['reward']):8.1f} {int(r['tokens']):8d} "
            f"{r['peak_rss_gib']:9.2f}  " + " ".join(f"{x:.2f}" for x in r["reward"])
        )
    if "rlvr" in results and "trl" in results:
        figures["ratio"] = figures["rlvr_tokens_per_s"] / figures["trl_tokens_per_s"]
        print(f"rlvr / TRL throughput: {figures['ratio']:.2f}x")
    if GEN_BF16 in results and "trl" in results:
        figures["ratio_generation_bf16"] = figures[f"{GEN_BF16}_tokens_per_s"] / figures["trl_tokens_per_s"]
        print(f"{GEN_BF16} (bfloat16 generation, float32 learner) / TRL: {figures['ratio_generation_bf16']:.2f}x")
    if "rlvr" in results:
        r = results["rlvr"]
        print(
            f"rlvr: log-probs vs full-logits reference, max abs diff {r['logprob_agreement']:.2e}; "
            f"train-vs-rollout mismatch (mean abs) {r['mismatch']:.2e}; train() wall incl. load {r['wall_s']:.1f}s; "
            f"rollout {r['rollout_s']:.1f}s (generation {r.get('generate_s', 0.0):.1f}s), learner {r['train_s']:.1f}s"
        )
        if "learner_gflops" in r:
            figures["learner_share"] = r["train_s"] / r["steps_s"]
            figures["learner_fraction_of_peak"] = r["learner_gflops"] / r["matmul_gflops"]
            print(
                f"rlvr learner: {figures['learner_share']:.0%} of the steps' time; {r['learner_gflops']:.0f} GFLOP/s "
                f"(6 x {r['params'] / 1e6:.0f}M params x {r['learner_tokens']} tokens) = "
                f"{figures['learner_fraction_of_peak']:.0%} of this CPU's float32 matmul peak "
                f"({r['matmul_gflops']:.0f})"
            )
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--only", choices=["rlvr", "trl"], help="run one side only")
    ap.add_argument("--smoke", action="store_true", help="rlvr's side only, 1 step of a tiny random model")
    ap.add_argument("--report", metavar="RESULTS", help="print the table of a results file, run nothing")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--extra", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--trl-gradient-checkpointing", action="store_true")
    ap.add_argument(
        "--bf16",
        action="store_true",
        help="both in mixed precision: rlvr model.compute_dtype=bfloat16, TRL bf16=True (results: *_bf16.json)",
    )
    ap.add_argument(
        "--generation-bf16",
        action="store_true",
        help=f"also rlvr with generation.compute_dtype=bfloat16 and a float32 learner ('{GEN_BF16}', same run)",
    )
    ap.add_argument(
        "--rlvr-overrides",
        nargs="*",
        default=["train.micro_batch_size=2", "train.logprob_chunk=256"],
        help="rlvr config overrides for its side (default: the memory-lean settings)",
    )
    a = ap.parse_args()
    if a.child:
        child(a.child, a.steps, a.out, json.loads(a.extra))
        return
    if a.report:
        results = json.loads(Path(a.report).read_text())
        print(json.dumps(report(results, len(next(iter(results.values()))["reward"]))))
        return
    if a.smoke:
        a.only, a.steps = "rlvr", 1
    rlvr_side = {"overrides": a.rlvr_overrides + (["model.compute_dtype=bfloat16"] if a.bf16 else [])}
    runs = [
        ("rlvr", {**rlvr_side, **({"size": SMOKE} if a.smoke else {})}),
        ("trl", {"gradient_checkpointing": a.trl_gradient_checkpointing, "bf16": a.bf16}),
    ]
    if a.generation_bf16:
        gen = {"overrides": [*rlvr_side["overrides"], "generation.compute_dtype=bfloat16"]}
        runs.insert(1, (GEN_BF16, {**gen, **({"size": SMOKE} if a.smoke else {})}))
    results = {}
    for name, extra in runs:
        if a.only and name != a.only and not (a.only == "rlvr" and name == GEN_BF16):
            continue
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            cmd = [sys.executable, __file__, "--child", name, "--steps", str(a.steps), "--out", f.name]
            subprocess.run([*cmd, "--extra", json.dumps(extra)], check=True)
            results[name] = json.loads(Path(f.name).read_text())
    if not a.smoke:  # a smoke run is a check, not a figure: nothing is recorded
        name = "trl_vs_rlvr_bf16.json" if a.bf16 else "trl_vs_rlvr.json"
        (Path(__file__).parent / "results" / name).write_text(json.dumps(results, indent=1))
    print(json.dumps(report(results, a.steps)))


if __name__ == "__main__":
    main()
