"""rlvr's reward-model training (`rlvr rm train`) against Hugging Face TRL's RewardTrainer:
same pairs, model, batches and CPU, same run, side by side.

The pairs are bench/docstring_feedback.py's: for each bundled python_functions task, the
reference with a docstring preferred over the same reference with that text as a
comment, length balanced so a length-only rule is near chance. Held out: the tasks of
about a fifth of the task families (rlvr's split, `split_by: family`).

Both: the embedded SmolLM2-135M-Instruct in float32 as a one-label sequence classifier
whose head is drawn from the same seed (rlvr.feedback.rm.from_causal_lm, handed to TRL
already built), full fine-tuning, AdamW (lr 2e-5, no weight decay, constant schedule, no
warm-up, gradient clipped at 1.0), batches of 8 pairs in one pass, the Bradley-Terry
loss, the same token ids (rlvr's encoder: the chat template, never cut) in the same batch
order (rlvr's for the seed; TRL's sampler made sequential over it). Each trainer runs in
its own process (its peak resident memory is its own). Reported: tokens per second over
the training steps, peak RSS, each step's loss (the first must agree to 1e-4 relative:
the same batch on the same weights), and for each trained model the held-out pair
accuracy, loss and calibration measured by the same code (rlvr.feedback.rm_metrics.measure),
beside the length-only baseline on the same held-out pairs.

    bash bench/setup_trl_env.sh                      # once: .venv-bench with rlvr + trl
    .venv-bench/bin/python bench/rm_vs_trl.py [--steps 30]
    .venv/bin/python bench/rm_vs_trl.py --smoke      # rlvr's side, tiny model (the test suite)
    .venv/bin/python bench/rm_vs_trl.py --report bench/results/rm_vs_trl.json
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

STEPS, BATCH, LR, SEED = 30, 8, 2e-5, 0
MODEL = "smollm2-135m-instruct"
FIRST_LOSS_REL = 1e-4
HERE = Path(__file__).resolve().parent


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _cfg(model: str, steps: int, batch: int, out: str = "/tmp") -> object:
    from rlvr.config import load_config

    return load_config(
        None,
        [f"model.name_or_path={model}", f"seed={SEED}", f"output_dir={out}", "rm.split_by=family",
         f"rm.batch_size={batch}", f"rm.micro_batch_size={batch}", f"rm.lr={LR}", f"rm.max_steps={steps}",
         "rm.epochs=20", "rm.held_out=0.2", "rm.max_length=1024"],
    )  # fmt: skip


def build_data(model: str, steps: int, batch: int) -> dict:
    """The encoded pairs: training ones in rlvr's batch order (steps x batch), the held-out
    ones, and the length-only baseline on them."""
    sys.path.insert(0, str(HERE))
    from docstring_feedback import bundled_python, records

    from rlvr.feedback.records import parse_record
    from rlvr.feedback.rm_data import batches, prepare
    from rlvr.feedback.rm_metrics import length_baseline
    from rlvr.rollout.models import load_tokenizer

    cfg = _cfg(model, steps, batch)
    tok = load_tokenizer(model)
    recs = [parse_record(r) for r in records(bundled_python())]
    data = prepare(recs, cfg.rm, tok)  # type: ignore[attr-defined]
    plan = [b for b in batches(len(data.train), batch, 20, SEED) if len(b) == batch][:steps]
    if len(plan) < steps:
        raise SystemExit(f"only {len(plan)} full batches of {batch}: fewer than {steps} steps")
    train = [{"chosen_ids": data.train[i].chosen, "rejected_ids": data.train[i].rejected} for b in plan for i in b]
    held = [{"chosen_ids": p.chosen, "rejected_ids": p.rejected} for p in data.held_pairs]
    return {"train": train, "held": held, "line": data.line(),
            "length_baseline": length_baseline(data.train, data.held_pairs)}  # fmt: skip


def _pairs(rows: list[dict]) -> list:
    from rlvr.feedback.rm_data import EncPair

    return [EncPair(r["chosen_ids"], r["rejected_ids"]) for r in rows]


def run_rlvr(data: dict, model_name: str, batch: int, out: dict) -> object:
    """rlvr's training loop (train_rm), fed the bench's pairs in the bench's order."""
    import torch

    from rlvr.cli.common import quiet_libraries
    from rlvr.feedback.rm import from_causal_lm
    from rlvr.feedback.rm_data import RmData
    from rlvr.feedback.rm_train import train_rm
    from rlvr.rollout.models import load_policy

    quiet_libraries()
    torch.set_num_threads(os.cpu_count() or 1)
    steps = len(data["train"]) // batch
    base, tok = load_policy(model_name, seed=SEED)
    rm = from_causal_lm(base, tok, SEED)
    del base  # as the CLI does: the classifier holds its own copy of the backbone
    losses: list[float] = []

    def log(row: dict) -> None:
        if "loss" in row:
            losses.append(row["loss"])

    with tempfile.TemporaryDirectory() as tmp:
        cfg = _cfg(model_name, steps, batch, tmp)
        rm_data = RmData(_pairs(data["train"]), _pairs(data["held"]), [], (0, 0))
        in_order = [list(range(k, k + batch)) for k in range(0, steps * batch, batch)]  # already rlvr's order
        res = train_rm(cfg, rm, tok, rm_data, Path(tmp) / "rm", log, plan=in_order)  # type: ignore[arg-type]
    out.update(steps_s=res.seconds, loss=losses, held_out=res.after, held_out_before=res.before)
    return res


def run_trl(data: dict, model_name: str, batch: int, out: dict) -> None:
    import torch
    from datasets import Dataset
    from torch.utils.data import SequentialSampler
    from trl import RewardConfig, RewardTrainer

    from rlvr.feedback.rm import from_causal_lm
    from rlvr.feedback.rm_metrics import measure
    from rlvr.rollout.models import load_policy

    torch.set_num_threads(os.cpu_count() or 1)
    base, tok = load_policy(model_name, seed=SEED)
    model = from_causal_lm(base, tok, SEED)  # the same head init as rlvr's side
    del base
    ds = Dataset.from_list(data["train"])

    class InOrder(RewardTrainer):  # the batches rlvr trains on, in rlvr's order
        def _get_train_sampler(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            return SequentialSampler(self.train_dataset)

    with tempfile.TemporaryDirectory() as tmp:
        args = RewardConfig(
            output_dir=tmp, max_steps=len(data["train"]) // batch, per_device_train_batch_size=batch,
            gradient_accumulation_steps=1, learning_rate=LR, lr_scheduler_type="constant", warmup_steps=0,
            weight_decay=0.0, max_grad_norm=1.0, optim="adamw_torch", use_cpu=True, bf16=False, report_to=[],
            logging_steps=1, save_strategy="no", seed=SEED, data_seed=SEED, dataloader_num_workers=0,
            max_length=None, center_rewards_coefficient=None, gradient_checkpointing=False,
        )  # fmt: skip
        trainer = InOrder(model=model, args=args, train_dataset=ds, processing_class=tok)
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
    out.update(
        steps_s=wall,
        loss=[h["loss"] for h in trainer.state.log_history if "loss" in h],
        # TRL's model measured by the same code as rlvr's
        held_out=measure(trainer.model, _pairs(data["held"]), [], tok.pad_token_id),
    )


def child(side: str, data_path: str, model: str, batch: int, path: str) -> None:
    data = json.loads(Path(data_path).read_text())
    out: dict = {"tokens": sum(len(r["chosen_ids"]) + len(r["rejected_ids"]) for r in data["train"])}
    if side == "trl":
        run_trl(data, model, batch, out)
    else:
        run_rlvr(data, model, batch, out)
    out["peak_rss_gib"] = _peak_rss_gib()
    Path(path).write_text(json.dumps(out))


def report(results: dict, length_baseline: float) -> dict:
    """The side-by-side table, and the figures it quotes; a side without its figures is an error."""
    for name, r in results.items():
        missing = [k for k in ("tokens", "steps_s", "peak_rss_gib", "loss", "held_out") if k not in r]
        if missing:
            raise SystemExit(f"{name}: the results lack {', '.join(missing)}")
        if not r["tokens"] or not r["steps_s"] or not r["loss"]:
            raise SystemExit(f"{name}: no tokens, time or loss recorded: the run failed, there is no figure")
    print(f"\n{len(next(iter(results.values()))['loss'])} steps, CPU x{os.cpu_count()}")
    print(f"{'trainer':<8} {'tok/s':>8} {'s/step':>7} {'peak GiB':>9} {'held-out acc':>13} {'loss':>7} {'ECE':>6}")
    figures: dict = {"length_baseline_accuracy": length_baseline}
    for name, r in results.items():
        figures[f"{name}_tokens_per_s"] = tps = r["tokens"] / r["steps_s"]
        figures[f"{name}_peak_rss_gib"] = r["peak_rss_gib"]
        h = r["held_out"]
        figures[f"{name}_held_out_accuracy"] = h.get("pair_accuracy")
        per = r["steps_s"] / len(r["loss"])
        print(
            f"{name:<8} {tps:8.1f} {per:7.2f} {r['peak_rss_gib']:9.2f} {h.get('pair_accuracy', float('nan')):13.3f} "
            f"{h.get('pair_loss', float('nan')):7.4f} {h.get('calibration_error', float('nan')):6.3f}"
        )
    before = next((r["held_out_before"] for r in results.values() if r.get("held_out_before")), None)
    if before:
        figures["untrained_held_out_accuracy"] = before.get("pair_accuracy")
        print(f"untrained (the head as drawn): held-out accuracy {before.get('pair_accuracy', float('nan')):.3f}")
    print(f"length-only baseline on the same held-out pairs: {length_baseline:.3f}")
    if "rlvr" in results and "trl" in results:
        a, b = results["rlvr"]["loss"], results["trl"]["loss"]
        if len(a) != len(b):
            raise SystemExit(f"the sides ran different numbers of steps ({len(a)} and {len(b)})")
        figures["ratio"] = figures["rlvr_tokens_per_s"] / figures["trl_tokens_per_s"]
        figures["first_loss_rel_diff"] = abs(a[0] - b[0]) / abs(b[0])
        figures["max_loss_rel_diff"] = max(abs(x - y) / max(abs(y), 1e-6) for x, y in zip(a, b, strict=True))
        figures["first_loss_ok"] = figures["first_loss_rel_diff"] <= FIRST_LOSS_REL
        print(
            f"rlvr / TRL throughput: {figures['ratio']:.2f}x; first-step loss differs by "
            f"{figures['first_loss_rel_diff']:.1e} relative (bound {FIRST_LOSS_REL:g}), the curves by at most "
            f"{figures['max_loss_rel_diff']:.1e}"
        )
    return figures


def main() -> None:
    a = parser(__doc__, STEPS, "bench/results/rm_vs_trl.json").parse_args()
    if a.child:
        side, data, model, batch, path = a.child
        child(side, data, model, int(batch), path)
        return
    if a.report:
        saved = json.loads(Path(a.report).read_text())
        print(json.dumps(report(saved["results"], saved["length_baseline"])))
        return
    model, steps, batch = ("tiny-random", 2, 2) if a.smoke else (MODEL, a.steps, BATCH)
    sides = ["rlvr"] if a.smoke else ["rlvr", "trl"]
    with tempfile.TemporaryDirectory() as tmp:
        data = build_data(model, steps, batch)
        print(f"pairs: {data['line']}")
        path = Path(tmp) / "data.json"
        path.write_text(json.dumps(data))
        results = run_sides(__file__, sides, path, model, batch)
    figures = report(results, data["length_baseline"])
    if not a.smoke:
        save(a.out, steps=steps, batch=batch, lr=LR, pairs=data["line"], length_baseline=data["length_baseline"],
             results=results, figures=figures)  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
