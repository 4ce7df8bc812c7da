"""The supervised stage on a tiny random model: the loss is the replies' mean NLL, the
update does not depend on the micro-batch, `rlvr sft` runs as a user runs it (chat file
and task references, LoRA merged into the model directory that `rlvr train` starts
from), resumes after kill -9 to the uninterrupted run's weights, and answers bad input
in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from rlvr.config import SftConfig
from rlvr.sft.encode import Encoded, encode
from rlvr.sft.trainer import SftTrainer

ROOT = Path(__file__).parents[2]
TINY = ["model.name_or_path=tiny-random", "generation.max_new_tokens=6", "eval.num_tasks=3"]


def rlvr(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600, **kw
    )


def _convos() -> list[list[dict[str, str]]]:
    out = []
    for i in range(8):
        convo = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": f"What is {i} + {i}?"}]
        convo.append({"role": "assistant", "content": f"{2 * i}" + " (doubled)" * (i % 3)})
        if i % 2:  # a second turn: feedback, then another reply
            convo += [{"role": "user", "content": "Say it in words."}, {"role": "assistant", "content": "x" * i}]
        out.append(convo)
    return out


def _encoded(tok: Any) -> list[Encoded]:
    return [encode(tok, c) for c in _convos()]


def test_the_loss_is_the_mean_nll_of_the_reply_tokens(tiny: Any) -> None:
    model, tok = tiny
    rows = _encoded(tok)
    trainer = SftTrainer(model, SftConfig(micro_batch_size=3), tok.pad_token_id, total_steps=1)
    # by hand: one full forward per example, log-softmax, the trained positions only
    total, count = 0.0, 0
    with torch.no_grad():
        for e in rows:
            seq = torch.tensor([e.prompt_ids + e.completion_ids])
            logp = torch.log_softmax(model(input_ids=seq).logits[0].float(), dim=-1)
            p = len(e.prompt_ids)
            for t, (tokid, m) in enumerate(zip(e.completion_ids, e.mask, strict=True)):
                if m:
                    total -= float(logp[p + t - 1, tokid])
                    count += 1
    assert count == sum(e.trained for e in rows) and count < sum(len(e.completion_ids) for e in rows)
    assert trainer.mean_loss(rows) == pytest.approx(total / count, rel=1e-5)


def test_the_update_does_not_depend_on_the_micro_batch(tiny: Any) -> None:
    _, tok = tiny
    rows = _encoded(tok)
    from rlvr.rollout.models import TINY as TINY_MODEL
    from rlvr.rollout.models import load_policy

    grads, updates, stats = [], [], []
    base, _ = load_policy(TINY_MODEL, seed=0)
    start = torch.cat([p.detach().flatten() for p in base.parameters()])
    for micro in (1, 8):
        model, _ = load_policy(TINY_MODEL, seed=0)
        trainer = SftTrainer(model, SftConfig(micro_batch_size=micro, lr=1e-3), tok.pad_token_id, total_steps=1)
        stats.append(trainer.step(rows))
        # the step leaves its (clipped) gradient on the parameters
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
        updates.append(torch.cat([p.detach().flatten() for p in model.parameters()]) - start)
    assert stats[0]["tokens"] == stats[1]["tokens"] == sum(e.trained for e in rows)
    assert stats[0]["loss"] == pytest.approx(stats[1]["loss"], rel=1e-6)
    assert stats[0]["grad_norm"] == pytest.approx(stats[1]["grad_norm"], rel=1e-5)
    assert grads[0].abs().sum() > 0 and torch.allclose(grads[0], grads[1], atol=1e-6, rtol=1e-4)
    # Adam's first step, lr * g / (|g| + eps), amplifies rounding where |g| is near eps
    # (test_learner's note): the updates are compared as vectors
    assert float((updates[0] - updates[1]).norm() / updates[0].norm()) < 1e-3


def _chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps({"messages": c}) + "\n" for c in _convos() * 3))
    return path


def test_rlvr_sft_with_lora_writes_a_model_that_rlvr_train_starts_from(tmp_path: Path) -> None:
    chat = _chat_file(tmp_path)
    r = rlvr(
        "sft", "examples/sft_json.yaml", "--quiet", *TINY, f"output_dir={tmp_path}", "name=s",
        f"sft.data=[{chat},tasks]", "sft.max_steps=3", "sft.batch_size=4", "sft.lr=1e-3",
        "model.lora.r=4", "model.lora.alpha=8",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "held-out loss" in r.stdout and "held-out pass@1 (3 tasks, greedy)" in r.stdout
    run = tmp_path / "s"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["by_source"] == {str(chat): 24, "tasks": summary["by_source"]["tasks"]}
    assert summary["by_source"]["tasks"] > 50 and summary["loss_after"] < summary["loss_before"]
    assert summary["eval_before"]["num_tasks"] == 3 and summary["eval_after"]["num_tasks"] == 3
    # LoRA merged: a plain model directory (no adapter files), whose weights moved from the base
    model_dir = run / "model"
    assert (model_dir / "model.safetensors").is_file() and not list(model_dir.glob("adapter*"))
    from rlvr.rollout.models import TINY as TINY_MODEL
    from rlvr.rollout.models import load_policy

    base, _ = load_policy(TINY_MODEL, seed=0)
    tuned = load_file(str(model_dir / "model.safetensors"))
    assert not any("lora" in k for k in tuned)
    diffs = [float((tuned[k] - v).abs().max()) for k, v in base.state_dict().items() if k in tuned]
    assert max(diffs) > 0
    steps = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps if s.get("event") == "step"] == [1, 2, 3]
    assert {"train/loss", "train/lr", "train/grad_norm", "train/tokens"} <= set(steps[-3])
    # RL starts where the supervised stage ended
    t = rlvr(
        "train", "examples/quickstart.yaml", "--quiet", *TINY, f"model.name_or_path={model_dir}",
        "train.steps=1", "algo.group_size=2", "train.prompts_per_step=2", f"output_dir={tmp_path}", "name=rl",
        "eval.before_training=false", "eval.after_training=false",
    )  # fmt: skip
    assert t.returncode == 0, t.stderr
    cfg = (tmp_path / "rl" / "config.yaml").read_text()
    assert f"name_or_path: {model_dir}" in cfg


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "model" / "model.safetensors"))


def test_resume_after_kill_9_ends_with_the_uninterrupted_weights(tmp_path: Path) -> None:
    chat = _chat_file(tmp_path)
    common = [
        "examples/sft_json.yaml", "--plain", *TINY, f"output_dir={tmp_path}", f"sft.data=[{chat},tasks]",
        "sft.epochs=3", "sft.batch_size=4", "sft.lr=1e-3", "sft.schedule=cosine", "sft.warmup_steps=2",
        "sft.checkpoint_every=4", "sft.keep_checkpoints=1", "eval.before_training=false",
        "eval.after_training=false",
    ]  # fmt: skip
    whole = rlvr("sft", *common, "name=whole")
    assert whole.returncode == 0, whole.stderr
    total = json.loads((tmp_path / "whole" / "summary.json").read_text())["steps"]
    assert total > 40
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlvr.cli", "sft", *common, "name=cut"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    ckpts = tmp_path / "cut" / "checkpoints"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (ckpts / "step-000008" / "state.json").exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.name for p in ckpts.iterdir() if (p / "state.json").exists())
    assert done and done[-1] < f"step-{total:06d}", "the run ended before it was killed"
    resumed = rlvr("sft", *common, "name=cut", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    a, b = _weights(tmp_path / "whole"), _weights(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    rows = lambda run: [  # noqa: E731
        json.loads(x) for x in (tmp_path / run / "metrics.jsonl").read_text().splitlines() if '"event": "step"' in x
    ]
    assert [r["step"] for r in rows("cut")] == list(range(1, total + 1))  # the killed run's extra rows cut
    assert [r["train/loss"] for r in rows("cut")] == [r["train/loss"] for r in rows("whole")]


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    cases = [
        ([], "sft.data: name at least one source"),
        (["sft.data=[tasks]", "train.lr=1e-4"], "train.lr: set, but read only by rlvr train, not rlvr sft"),
        ([f"sft.data=[{tmp_path / 'none.jsonl'}]"], "none.jsonl: no such file or directory"),
    ]
    for extra, says in cases:
        r = rlvr("sft", "examples/sft_json.yaml", *TINY, f"output_dir={tmp_path}", "name=x", "sft.data=[]", *extra)
        assert r.returncode == 2, (extra, r.stderr)
        assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "x").exists()


def test_a_staged_run_warms_up_then_trains_and_a_resume_skips_finished_stages(tmp_path: Path) -> None:
    common = [
        "examples/sft_then_rl.yaml", "--plain", *TINY, f"output_dir={tmp_path}", "name=st", "sft.max_steps=2",
        "sft.batch_size=4", "train.steps=2", "train.prompts_per_step=2", "algo.group_size=2",
    ]  # fmt: skip
    r = rlvr("train", *common)
    assert r.returncode == 0, r.stderr
    assert "after sft" in r.stdout and "after rl" in r.stdout and "done earlier" not in r.stdout
    sft, rl = tmp_path / "st" / "sft", tmp_path / "st" / "rl"
    assert (sft / "model" / "model.safetensors").is_file() and (sft / "summary.json").is_file()
    assert f"name_or_path: {sft / 'model'}" in (rl / "config.yaml").read_text()
    assert "before_training: false" in (rl / "config.yaml").read_text()  # sft's 'after' is its 'before'
    steps = lambda d: sum('"event": "step"' in x for x in (d / "metrics.jsonl").read_text().splitlines())  # noqa: E731
    assert steps(sft) == 2 and steps(rl) == 2
    again = rlvr("train", *common, "--resume")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("(done earlier)") == 2
    assert steps(sft) == 2 and steps(rl) == 2  # nothing ran twice
    fresh = rlvr("train", *common)
    assert fresh.returncode == 2 and "is not empty; pass --resume" in fresh.stderr
