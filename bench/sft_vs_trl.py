"""rlvr's supervised stage against Hugging Face TRL's SFTTrainer: same data, model, batches
and CPU, same run, side by side.

Both: the embedded SmolLM2-135M-Instruct in float32, full fine-tuning, AdamW (lr 2e-5, no
weight decay, constant schedule, no warm-up, gradient clipped at 1.0), batches of 8
examples in one pass (no accumulation), the loss the mean NLL over the batch's reply
tokens. The examples are json_extract's training tasks' references, rendered by rlvr
through each task's prompt (`sft.data: [tasks]`) and tokenized once by rlvr's encoder;
TRL receives the same token ids and reply mask (a pre-tokenized dataset: `input_ids`,
`completion_mask`, `completion_only_loss`), in the same batch order (rlvr's schedule for
the seed; TRL's sampler made sequential over that order). Each trainer runs in its own
process (its peak resident memory is its own). Reported: tokens (prompt and reply) per
second over the training steps, seconds per step, peak RSS, each step's loss; the first
step's loss must agree to 1e-4 relative (the same batch on the same weights) and the
curves within 2% after. rlvr runs twice: the batch in one pass, as TRL runs it, and in
micro-batches of 4 (`sft.micro_batch_size`'s default: the same update, accumulated,
less activation memory).

    bash bench/setup_trl_env.sh                      # once: .venv-bench with rlvr + trl
    .venv-bench/bin/python bench/sft_vs_trl.py [--steps 12]
    .venv/bin/python bench/sft_vs_trl.py --smoke     # rlvr's side, tiny model (the test suite)
    .venv/bin/python bench/sft_vs_trl.py --report bench/results/sft_vs_trl.json
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from versus import parser, run_sides, save

STEPS, BATCH, LR, SEED = 12, 8, 2e-5, 0
MICRO = 4  # rlvr's default sft.micro_batch_size: the same update, accumulated over two passes
MODEL = "smollm2-135m-instruct"
SYSTEM = "You extract data. Answer with a JSON object inside <answer></answer> tags and nothing else."
FIRST_LOSS_REL = 1e-4
CURVE_REL = 0.02


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def build_data(model: str, steps: int, batch: int) -> list[dict]:
    """Rows in training order (steps x batch): input_ids and the reply mask, rlvr-encoded."""
    from rlvr.config import load_config
    from rlvr.envs.settings import env_settings
    from rlvr.rollout.models import load_tokenizer
    from rlvr.sft.data import load_examples
    from rlvr.sft.encode import encode
    from rlvr.sft.plan import schedule
    from rlvr.tasks import load_tasks, split_tasks

    cfg = load_config(None, [f"prompt.system={json.dumps(SYSTEM)}"])
    tok = load_tokenizer(model)
    train, _ = split_tasks(load_tasks("bundled:json_extract"), cfg.tasks.eval_fraction)
    loaded = load_examples(["tasks"], tasks=train, settings=env_settings(cfg), check_references=False)
    enc = [encode(tok, e.messages) for e in loaded.examples]
    plan = schedule([e.length for e in enc], batch, seed=SEED, epochs=50, max_steps=None)
    plan = [b for b in plan if len(b) == batch]
    if len(plan) < steps:
        raise SystemExit(f"only {len(plan)} full batches of {batch}: fewer than {steps} steps")
    return [
        {"input_ids": enc[i].prompt_ids + enc[i].completion_ids, "completion_mask": [0] * len(enc[i].prompt_ids) +
         enc[i].mask, "prompt_len": len(enc[i].prompt_ids)}
        for b in plan[:steps] for i in b
    ]  # fmt: skip


def run_rlvr(rows: list[dict], model_name: str, batch: int, out: dict, micro: int | None = None) -> None:
    import torch

    from rlvr.config import SftConfig
    from rlvr.rollout.models import load_policy
    from rlvr.sft.encode import Encoded
    from rlvr.sft.trainer import SftTrainer

    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(SEED)
    model, tok = load_policy(model_name, seed=SEED)
    enc = [Encoded(r["input_ids"][: r["prompt_len"]], r["input_ids"][r["prompt_len"] :],
                   r["completion_mask"][r["prompt_len"] :]) for r in rows]  # fmt: skip
    cfg = SftConfig(batch_size=batch, micro_batch_size=micro or batch, lr=LR, schedule="constant", max_grad_norm=1.0)
    steps = len(enc) // batch
    trainer = SftTrainer(model, cfg, int(tok.pad_token_id), steps)
    losses = []
    t0 = time.perf_counter()
    for s in range(steps):
        losses.append(trainer.step(enc[s * batch : (s + 1) * batch])["loss"])
    out.update(steps_s=time.perf_counter() - t0, loss=losses)


def run_trl(rows: list[dict], model_name: str, batch: int, out: dict) -> None:
    import torch
    from datasets import Dataset
    from torch.utils.data import SequentialSampler
    from trl import SFTConfig, SFTTrainer

    from rlvr.rollout.models import load_policy

    torch.set_num_threads(os.cpu_count() or 1)
    model, tok = load_policy(model_name, seed=SEED)
    data = Dataset.from_list([{"input_ids": r["input_ids"], "completion_mask": r["completion_mask"]} for r in rows])

    class InOrder(SFTTrainer):  # the batches rlvr trains on, in rlvr's order
        def _get_train_sampler(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            return SequentialSampler(self.train_dataset)

    with tempfile.TemporaryDirectory() as tmp:
        args = SFTConfig(
            output_dir=tmp, max_steps=len(rows) // batch, per_device_train_batch_size=batch,
            gradient_accumulation_steps=1, learning_rate=LR, lr_scheduler_type="constant", warmup_steps=0,
            weight_decay=0.0, max_grad_norm=1.0, optim="adamw_torch", completion_only_loss=True, use_cpu=True,
            bf16=False, report_to=[], logging_steps=1, save_strategy="no", seed=SEED, data_seed=SEED,
            dataloader_num_workers=0, max_length=None,
        )  # fmt: skip
        trainer = InOrder(model=model, args=args, train_dataset=data, processing_class=tok)
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
    out.update(steps_s=wall, loss=[h["loss"] for h in trainer.state.log_history if "loss" in h])


def child(side: str, data: str, model: str, batch: int, path: str) -> None:
    rows = json.loads(Path(data).read_text())
    out: dict = {"tokens": sum(len(r["input_ids"]) for r in rows),
                 "reply_tokens": sum(sum(r["completion_mask"]) for r in rows)}  # fmt: skip
    if side == "trl":
        run_trl(rows, model, batch, out)
    else:  # rlvr: the batch in one pass as TRL runs it; rlvr_micro4: in micro-batches of 4 (its default)
        run_rlvr(rows, model, batch, out, micro=MICRO if side == "rlvr_micro4" else None)
    out["peak_rss_gib"] = _peak_rss_gib()
    Path(path).write_text(json.dumps(out))


def report(results: dict) -> dict:
    """The side-by-side table from the sides' results, and the figures it quotes; a side
    without its figures is an error."""
    for name, r in results.items():
        missing = [k for k in ("tokens", "steps_s", "peak_rss_gib", "loss") if k not in r]
        if missing:
            raise SystemExit(f"{name}: the results lack {', '.join(missing)}")
        if not r["tokens"] or not r["steps_s"] or not r["loss"]:
            raise SystemExit(f"{name}: no tokens, time or loss recorded: the run failed, there is no figure")
    print(f"\n{len(next(iter(results.values()))['loss'])} steps, CPU x{os.cpu_count()}")
    print(f"{'trainer':<12} {'tok/s':>8} {'s/step':>7} {'peak GiB':>9}  loss per step")
    figures: dict = {}
    for name, r in results.items():
        figures[f"{name}_tokens_per_s"] = tps = r["tokens"] / r["steps_s"]
        figures[f"{name}_peak_rss_gib"] = r["peak_rss_gib"]
        per = r["steps_s"] / len(r["loss"])
        print(f"{name:<12} {tps:8.1f} {per:7.2f} {r['peak_rss_gib']:9.2f}  " + " ".join(f"{x:.4f}" for x in r["loss"]))
    if "rlvr_micro4" in results and "trl" in results:
        figures["ratio_micro4"] = figures["rlvr_micro4_tokens_per_s"] / figures["trl_tokens_per_s"]
        a, b = results["rlvr_micro4"]["loss"], results["trl"]["loss"]
        figures["micro4_max_loss_rel_diff"] = max(abs(x - y) / abs(y) for x, y in zip(a, b, strict=True))
        print(
            f"rlvr in micro-batches of {MICRO} / TRL: {figures['ratio_micro4']:.2f}x, curves within "
            f"{figures['micro4_max_loss_rel_diff']:.1e}"
        )
    if "rlvr" in results and "trl" in results:
        a, b = results["rlvr"]["loss"], results["trl"]["loss"]
        if len(a) != len(b):
            raise SystemExit(f"the sides ran different numbers of steps ({len(a)} and {len(b)})")
        figures["ratio"] = figures["rlvr_tokens_per_s"] / figures["trl_tokens_per_s"]
        figures["first_loss_rel_diff"] = abs(a[0] - b[0]) / abs(b[0])
        figures["max_loss_rel_diff"] = max(abs(x - y) / abs(y) for x, y in zip(a, b, strict=True))
        print(
            f"rlvr / TRL throughput: {figures['ratio']:.2f}x; first-step loss differs by "
            f"{figures['first_loss_rel_diff']:.1e} relative (bound {FIRST_LOSS_REL:g}), the curves by at most "
            f"{figures['max_loss_rel_diff']:.1e} (bound {CURVE_REL:g})"
        )
        figures["first_loss_ok"] = figures["first_loss_rel_diff"] <= FIRST_LOSS_REL
        figures["curves_ok"] = figures["max_loss_rel_diff"] <= CURVE_REL
    return figures


def main() -> None:
    a = parser(__doc__, STEPS, "bench/results/sft_vs_trl.json").parse_args()
    if a.child:
        side, data, model, batch, path = a.child
        child(side, data, model, int(batch), path)
        return
    if a.report:
        print(json.dumps(report(json.loads(Path(a.report).read_text())["results"])))
        return
    model, steps, batch = ("tiny-random", 2, 2) if a.smoke else (MODEL, a.steps, BATCH)
    sides = ["rlvr"] if a.smoke else ["rlvr", "rlvr_micro4", "trl"]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.json"
        data.write_text(json.dumps(build_data(model, steps, batch)))
        results = run_sides(__file__, sides, data, model, batch)
    figures = report(results)
    if not a.smoke:
        save(a.out, steps=steps, batch=batch, lr=LR, results=results, figures=figures)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
