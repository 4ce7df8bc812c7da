"""Feedback in, a reward model out, as a user runs it: `rlvr feedback import` (files and a
run's own groups), `rlvr feedback query`, `rlvr rm train` on a tiny random backbone, and
`rlvr rm score`; the saved model scores the same through Hugging Face's own class.

The feedback prefers replies that say "good" over ones that say "bad", both the same
length, so the length-only baseline is at chance and only a model that learned the word
beats it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlvr.feedback.rm import RewardModel, from_causal_lm
from rlvr.feedback.store import open_store
from tests.integration.test_export import store  # noqa: F401  (the trace store fixture)

RLVR = Path(sys.executable).parent / "rlvr"
T = "2026-12-01T09:00:00Z"


def _rlvr(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RLVR), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _feedback(path: Path, n: int = 48) -> Path:
    rows = []
    for i in range(n):
        good, bad = f"answer {i}: this is good", f"answer {i}: this is bad"
        a, b, pref = (good, bad, "a") if i % 2 else (bad, good, "b")
        rows.append(
            {"kind": "preference", "prompt": f"Question {i}?", "output": a, "output_b": b, "preferred": pref,
             "source": "rule", "time": T, "who": "rule:good", "task_id": f"t{i}"}
        )  # fmt: skip
    rows.append(
        {"kind": "thumbs", "prompt": "Q?", "output": "good", "thumbs": "up", "source": "app", "time": T, "who": "u1"}
    )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_import_query_and_refusals(tmp_path: Path, store: str) -> None:  # noqa: F811
    fb = _feedback(tmp_path / "fb.jsonl")
    ok = _rlvr("feedback", "import", str(fb), "--store", "st", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout == "imported 49 of 49 records into st\n", ok.stderr
    again = _rlvr("feedback", "import", str(fb), "--store", "st", cwd=tmp_path)
    assert again.stdout == "imported 0 of 49 records into st (49 already there)\n"
    bad = tmp_path / "bad.jsonl"
    meh = {"kind": "thumbs", "prompt": "Q?", "output": "x", "thumbs": "meh", "source": "app", "time": T, "who": "u"}
    bad.write_text(fb.read_text().splitlines()[0] + "\n" + json.dumps(meh) + "\n")
    r = _rlvr("feedback", "import", str(bad), "--store", "st", cwd=tmp_path)
    assert (
        r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.jsonl:2: 'thumbs' must be 'up' or 'down'" in r.stderr
    )
    assert len(open_store(str(tmp_path / "st")).records()) == 49  # the bad file added nothing
    run = _rlvr("feedback", "import", "--from-run", store, "--store", "st", cwd=tmp_path)
    # export's fixture: 10 pairs (g1 5, g2 1, g3 3, g5 1), 2 of g3's with its two-attempt episode
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("imported 8 of 8 records into st; left out:") and "2 multi-turn episodes" in run.stdout
    assert "imported 0 of 8" in _rlvr("feedback", "import", "--from-run", store, "--store", "st", cwd=tmp_path).stdout
    q = _rlvr("feedback", "query", "--store", "st", "--json", cwd=tmp_path)
    rows = [json.loads(x) for x in q.stdout.splitlines()]
    assert {(r["kind"], r["source"], r["records"]) for r in rows} == {
        ("preference", "rule", 48),
        ("preference", f"run:{Path(store).name}", 8),
        ("thumbs", "app", 1),
    }
    sql = _rlvr("feedback", "query", "--store", "st", "SELECT nope FROM feedback", cwd=tmp_path)
    assert sql.returncode == 2 and sql.stderr.startswith("rlvr: error: query failed:") and sql.stderr.count("\n") == 1
    none = _rlvr("feedback", "query", "--store", "missing", cwd=tmp_path)
    assert none.returncode == 2 and "no feedback store there" in none.stderr
    # importing and querying answer at once: no torch, no transformers
    probe = (
        "import sys; from rlvr.cli.main import main; "
        f"main(['feedback', 'import', {str(fb)!r}, '--store', 'st3']); main(['feedback', 'query', '--store', 'st3']); "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    light = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert light.returncode == 0 and light.stdout.splitlines()[-1] == "[]", light.stdout + light.stderr


def test_rm_train_learns_what_the_feedback_prefers_and_scores_the_same_everywhere(tmp_path: Path) -> None:
    fb = _feedback(tmp_path / "fb.jsonl")
    cfg = tmp_path / "rm.yaml"
    cfg.write_text(
        f"name: rm\noutput_dir: {tmp_path / 'runs'}\nmodel: {{name_or_path: tiny-random}}\n"
        f"rm: {{feedback: [{fb}], batch_size: 8, epochs: 3, lr: 3.0e-3, held_out: 0.25}}\n"
    )
    r = _rlvr("rm", "train", str(cfg), "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    metrics = [json.loads(x) for x in (tmp_path / "runs/rm/rm_metrics.jsonl").read_text().splitlines()]
    before, after = metrics[0], metrics[-1]
    assert before["phase"] == "before" and after["phase"] == "after"
    assert after["held_out/pair_accuracy"] == 1.0  # learned the word
    assert after["held_out/pair_loss"] < 0.5 * before["held_out/pair_loss"]
    out = tmp_path / "runs/rm/reward_model"
    meta = json.loads((out / "rlvr_reward_model.json").read_text())
    assert meta["length_baseline_accuracy"] == 0.5  # equal lengths: every pair a tie
    assert "length-only baseline, held-out pair accuracy" in r.stdout

    rm = RewardModel.load(out)
    prompts = [(("user", "Question 7?"),)] * 2
    s_good, s_bad = rm.score(prompts, ["answer 7: this is good", "answer 7: this is bad"])
    assert s_good is not None and s_bad is not None and s_good > s_bad
    # Hugging Face's own class, as TRL or verl would load it, gives the same score
    from transformers import AutoModelForSequenceClassification

    hf = AutoModelForSequenceClassification.from_pretrained(str(out)).eval()
    text = rm.tok.apply_chat_template(
        [{"role": "user", "content": "Question 7?"}, {"role": "assistant", "content": "answer 7: this is good"}],
        tokenize=False,
    )
    with torch.no_grad():
        logit = hf(**rm.tok(text, return_tensors="pt", add_special_tokens=False)).logits[0, 0].item()
    assert logit == pytest.approx(s_good, abs=1e-4)

    lines = tmp_path / "score.jsonl"
    lines.write_text(json.dumps({"prompt": "Question 7?", "output": "answer 7: this is good"}) + "\n")
    scored = _rlvr("rm", "score", str(out), str(lines), "--json", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["score"] == pytest.approx(s_good, abs=1e-5)
    again = _rlvr("rm", "train", str(cfg), "--quiet", cwd=tmp_path)
    assert again.returncode == 2 and "is not empty" in again.stderr

    # the audits, on cases from the feedback and from tasks (a reference, and a mutant of it that fails)
    check = _rlvr("rm", "check", str(out), "--feedback", str(fb), "--cases", "6", "--json", cwd=tmp_path)
    assert check.returncode in (0, 1), check.stderr
    figures = json.loads(check.stdout)
    assert figures["cases"] == 6 and set(figures["probes"]) >= {"colon", "thought_process", "grader_note"}
    assert figures["passed"] == (check.returncode == 0) == (not figures["problems"])
    tasks = _rlvr(
        "rm", "check", str(out), "--tasks", "bundled:python_functions", "--cases", "3", "--system", "You write Python.",
        cwd=tmp_path,
    )  # fmt: skip
    assert tasks.returncode in (0, 1) and "real answer above a wrong one" in tasks.stdout, tasks.stderr
    assert "on 3 cases" in tasks.stdout and "std of its training scores" in tasks.stdout
    both = _rlvr("rm", "check", str(out), "--feedback", str(fb), "--tasks", "x", cwd=tmp_path)
    assert both.returncode == 2 and "one of the two" in both.stderr


def test_modes_and_config_refusals(tmp_path: Path) -> None:
    from rlvr.config import load_config
    from rlvr.feedback.rm_data import load_feedback, prepare
    from rlvr.feedback.rm_train import train_rm
    from rlvr.rollout.models import load_policy

    fb = _feedback(tmp_path / "fb.jsonl", 16)
    base, tok = load_policy("tiny-random")
    records = load_feedback([str(fb)])
    for mode in ("frozen", "lora"):
        cfg = load_config(None, [f"output_dir={tmp_path}", f"rm.mode={mode}", "rm.epochs=1", "rm.lr=1e-3"])
        res = train_rm(cfg, from_causal_lm(base, tok, 0), tok, prepare(records, cfg.rm, tok), tmp_path / mode)
        assert res.steps == 1
        saved = RewardModel.load(tmp_path / mode).model
        fresh = from_causal_lm(base, tok, 0)
        same = [
            torch.equal(p, q) for p, q in zip(saved.base_model.parameters(), fresh.base_model.parameters(), strict=True)
        ]
        # frozen: the backbone as it was; lora: the adapters merged into it
        assert all(same) if mode == "frozen" else not all(same)
        assert not torch.equal(saved.score.weight, fresh.score.weight)
    cfg = load_config(None, ["model.lora.r=4", "rm.mode=full"])
    with pytest.raises(Exception, match=r"model\.lora is set but rm\.mode is 'full'"):
        train_rm(cfg, from_causal_lm(base, tok, 0), tok, prepare(records, cfg.rm, tok), tmp_path / "x")
    r = _rlvr("rm", "train", "--config", "missing.yaml", cwd=tmp_path)
    assert r.returncode == 2
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(f"model: {{name_or_path: tiny-random}}\nrm: {{feedback: [{fb}]}}\n")
    wrong = _rlvr("rm", "train", str(cfg_file), "train.lr=0.1", cwd=tmp_path)
    assert wrong.returncode == 2 and "train.lr: set, but read only by rlvr train, not rlvr rm" in wrong.stderr
    empty = _rlvr("rm", "train", str(cfg_file), "rm.feedback=[]", cwd=tmp_path)
    assert empty.returncode == 2 and "rm.feedback is empty" in empty.stderr
