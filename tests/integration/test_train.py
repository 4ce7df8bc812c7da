import json
from pathlib import Path

import pytest
import torch

from rlvr.config import load_config
from rlvr.rollout.models import load_policy
from rlvr.train.checkpoint import latest_checkpoint
from rlvr.train.loop import train
from tests.integration.toy_env import write_toy_tasks

TINY = [
    "model.name_or_path=tiny-random",
    "generation.max_new_tokens=6",
    "algo.group_size=2",
    "train.prompts_per_step=2",
    "train.lr=1e-3",
    "eval.num_tasks=3",
]


def _cfg(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    quick = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
    return load_config(quick, [*TINY, f"output_dir={tmp_path}", *extra])


def _toy_cfg(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    """A domain with a reward a random model earns, so that updates really move weights."""
    tasks = write_toy_tasks(tmp_path / "toy.jsonl")
    return _cfg(tmp_path, f"tasks.source={tasks}", "tasks.eval_fraction=0.25", "algo.group_size=4", *extra)


def test_two_training_steps_write_a_run_directory(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "name=two", "train.steps=2")
    s = train(cfg, quiet=True)
    run = tmp_path / "two"
    assert (run / "config.yaml").is_file()
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps if r["event"] == "step"] == [1, 2]
    assert {r["when"] for r in steps if r["event"] == "eval"} == {"before", "after"}
    assert all("reward/mean" in r and "train/grad_norm" in r for r in steps if r["event"] == "step")
    trajs = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajs) == 2 * 2 * 2
    assert trajs[0]["execution"]["tests"] and trajs[0]["reward"]["components"]["completion"] is not None
    assert s.eval_before is not None and s.eval_after is not None
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2 and len(summary["rewards"]) == 2
    with pytest.raises(FileExistsError, match="not empty"):
        train(cfg, quiet=True)


def test_checkpoint_reloads_to_identical_outputs(tmp_path: Path) -> None:
    cfg = _toy_cfg(tmp_path, "name=ck", "train.steps=1", "eval.before_training=false")
    train(cfg, quiet=True)
    ckpt = latest_checkpoint(tmp_path / "ck" / "checkpoints")
    assert ckpt is not None and ckpt.name == "step-000001"
    reloaded, tok = load_policy(str(ckpt / "model"))
    fresh, _ = load_policy("tiny-random", seed=0)
    ids = torch.tensor([tok("def f(x):")["input_ids"]])
    with torch.no_grad():
        a, b = reloaded(ids).logits, fresh(ids).logits
    assert not torch.allclose(a, b)  # training changed the weights ...
    # ... and a second reload gives exactly the saved ones
    again, _ = load_policy(str(ckpt / "model"))
    with torch.no_grad():
        assert torch.equal(again(ids).logits, a)


def test_resume_matches_uninterrupted_run(tmp_path: Path) -> None:
    straight = train(_toy_cfg(tmp_path, "name=straight", "train.steps=3"), quiet=True)
    train(_toy_cfg(tmp_path, "name=resumed", "train.steps=1"), quiet=True)
    resumed = train(_toy_cfg(tmp_path, "name=resumed", "train.steps=3"), quiet=True, resume=True)
    assert resumed.rewards == straight.rewards
    assert len(set(straight.rewards)) > 1  # the policy really changed between steps
    assert resumed.eval_before is not None and straight.eval_before is not None
    assert resumed.eval_before.mean_reward == straight.eval_before.mean_reward
    a = latest_checkpoint(tmp_path / "straight" / "checkpoints")
    b = latest_checkpoint(tmp_path / "resumed" / "checkpoints")
    assert a is not None and b is not None
    ma, _ = load_policy(str(a / "model"))
    mb, _ = load_policy(str(b / "model"))
    for (n, pa), (_, pb) in zip(ma.named_parameters(), mb.named_parameters(), strict=True):
        assert torch.equal(pa, pb), n


def test_a_curriculum_run_resumes_exactly_and_logs_its_figures(tmp_path: Path) -> None:
    """Learnability sampling with the prefilter: the estimates, skip counters and draw
    counter travel in the checkpoint, so the resumed run draws what the straight one did."""
    extra = ["curriculum.strategy=learnability", "curriculum.prefilter=0.6", "eval.before_training=false"]
    straight = train(_toy_cfg(tmp_path, "name=straight", "train.steps=3", *extra), quiet=True)
    train(_toy_cfg(tmp_path, "name=resumed", "train.steps=1", *extra), quiet=True)
    resumed = train(_toy_cfg(tmp_path, "name=resumed", "train.steps=3", *extra), quiet=True, resume=True)
    assert resumed.rewards == straight.rewards

    def steps(name: str) -> list[dict]:
        rows = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        return [r for r in rows if r["event"] == "step"]

    def drawn(name: str) -> list[tuple[int, str]]:
        rows = [json.loads(line) for line in (tmp_path / name / "trajectories.jsonl").read_text().splitlines()]
        return [(r["step"], r["task_id"]) for r in rows]

    assert drawn("resumed") == drawn("straight")
    for row in steps("straight"):
        assert {"curriculum/informative", "curriculum/calibration_error", "curriculum/retired"} <= set(row)
        assert row["curriculum/domain_share/toy-length"] == 1.0


def test_eval_sources_are_evaluated_whole_before_and_after(tmp_path: Path) -> None:
    from rlvr.trace.parquet import read_table

    suite = write_toy_tasks(tmp_path / "Extra-Suite.jsonl")
    s = train(_toy_cfg(tmp_path, "name=suites", "train.steps=1", f"eval.sources=[{suite}]"), quiet=True)
    before, after = s.suites["extra_suite"]
    assert before is not None and after is not None
    assert before.num_tasks == 3  # not split; eval.num_tasks (3 here) caps it like the held-out split
    rows = [json.loads(line) for line in (tmp_path / "suites" / "metrics.jsonl").read_text().splitlines()]
    assert [(r["when"], r.get("suite")) for r in rows if r["event"] == "eval"] == [
        ("before", None),
        ("before", "extra_suite"),
        ("after", None),
        ("after", "extra_suite"),
    ]
    evals = read_table(str(tmp_path / "suites" / "traces"), "evals").to_pylist()
    assert sorted((e["phase"], e["suite"]) for e in evals) == [
        ("after", ""),
        ("after", "extra_suite"),
        ("before", ""),
        ("before", "extra_suite"),
    ]
    summary = json.loads((tmp_path / "suites" / "summary.json").read_text())
    assert summary["suites"]["extra_suite"]["after"]["num_tasks"] == before.num_tasks


def test_lora_trains_adapters_only_and_resumes_exactly(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from rlvr.rollout.lora import apply_lora, is_lora, trainable_fraction

    lora = ["model.lora={r: 4, alpha: 8}", "eval.before_training=false"]
    straight = train(_toy_cfg(tmp_path, "name=lora", "train.steps=3", *lora), quiet=True)
    train(_toy_cfg(tmp_path, "name=lora-resumed", "train.steps=1", *lora), quiet=True)
    resumed = train(_toy_cfg(tmp_path, "name=lora-resumed", "train.steps=3", *lora), quiet=True, resume=True)
    assert resumed.rewards == straight.rewards and len(set(straight.rewards)) > 1
    a = latest_checkpoint(tmp_path / "lora" / "checkpoints")
    b = latest_checkpoint(tmp_path / "lora-resumed" / "checkpoints")
    assert a is not None and b is not None
    ad_a, ad_b = load_file(str(a / "adapter.safetensors")), load_file(str(b / "adapter.safetensors"))
    assert ad_a.keys() == ad_b.keys() and all(torch.equal(ad_a[k], ad_b[k]) for k in ad_a)
    # the merged model in model/ equals base + adapters, and differs from the base
    base, tok = load_policy("tiny-random", seed=0)
    adapted = apply_lora(
        load_policy("tiny-random", seed=0)[0],
        4,
        8,
        0.0,
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    )
    assert is_lora(adapted) and trainable_fraction(adapted) < 0.2
    from rlvr.rollout.lora import load_adapter_state

    load_adapter_state(adapted, ad_a)
    merged, _ = load_policy(str(a / "model"))
    ids = torch.tensor([tok("def f(x):")["input_ids"]])
    with torch.no_grad():
        m, la, o = merged(ids).logits, adapted(ids).logits, base(ids).logits
    assert torch.allclose(m, la, atol=1e-5) and not torch.allclose(m, o, atol=1e-4)
    # base weights were frozen: the merged model differs only by the low-rank updates
    assert not any(p.requires_grad for n, p in adapted.named_parameters() if "lora_" not in n)


def test_progress_names_each_phase_and_generation_speed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a step the display hears what is going on: sequences generated, replies
    executed, groups scored, micro-batches learned, each counting up to its total."""
    from rlvr.train.progress import Progress

    heard: list[tuple[str, str, int, int]] = []
    monkeypatch.setattr(Progress, "phase", lambda self, *a: heard.append(a))
    train(
        _cfg(tmp_path, "name=ph", "train.steps=1", "eval.before_training=false", "train.micro_batch_size=1"), quiet=True
    )
    by_phase: dict[str, list[tuple[int, int]]] = {}
    for source, name, done, total in heard:
        by_phase.setdefault(f"{source}/{name}", []).append((done, total))
    assert set(by_phase) == {"rollout/generating", "rollout/executing", "rollout/scoring", "learner/learning"}
    assert by_phase["rollout/generating"][-1] == (4, 4) and by_phase["rollout/executing"][-1] == (4, 4)
    learning = by_phase["learner/learning"]
    assert [d for d, _ in learning] == sorted(d for d, _ in learning) and learning[-1][0] == learning[-1][1]
    row = json.loads((tmp_path / "ph" / "metrics.jsonl").read_text().splitlines()[0])
    assert row["time/gen_tokens_per_s"] > row["time/tokens_per_s"] > 0  # generation alone is faster than the whole step


def test_checkpoints_without_optimizer_state(tmp_path: Path) -> None:
    """train.save_optimizer=false: the checkpoint holds no AdamW moments (a third of the
    size for a full fine-tune) and still resumes, with a fresh optimizer."""
    full = train(_toy_cfg(tmp_path, "name=full", "train.steps=1", "eval.before_training=false"), quiet=True)
    lean_cfg = _toy_cfg(
        tmp_path, "name=lean", "train.steps=1", "eval.before_training=false", "train.save_optimizer=false"
    )
    train(lean_cfg, quiet=True)
    size = {r: (tmp_path / r / "checkpoints" / "step-000001" / "trainer.pt").stat().st_size for r in ("full", "lean")}
    assert size["lean"] * 10 < size["full"]
    blob = torch.load(tmp_path / "lean" / "checkpoints" / "step-000001" / "trainer.pt", weights_only=False)
    assert "optimizer" not in blob["learner"] and "scheduler" in blob["learner"]
    resumed = train(
        _toy_cfg(tmp_path, "name=lean", "train.steps=2", "eval.before_training=false", "train.save_optimizer=false"),
        quiet=True,
        resume=True,
    )
    assert len(resumed.rewards) == 2 and resumed.rewards[0] == full.rewards[0]
