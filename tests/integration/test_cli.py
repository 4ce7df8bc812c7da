"""The `rlvr` command as a user runs it: a subprocess with a tiny budget."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
TINY = [
    "model.name_or_path=tiny-random",
    "generation.max_new_tokens=6",
    "algo.group_size=2",
    "train.prompts_per_step=2",
    "eval.num_tasks=3",
]


def rlvr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


def test_train_then_eval_a_checkpoint(tmp_path: Path) -> None:
    """As people write command lines: --config, flags first and overrides after them, and
    `eval --checkpoint RUN_DIR` taking the run's latest checkpoint."""
    r = rlvr(
        "train", "--config", "examples/quickstart.yaml", "--quiet",
        *TINY, "train.steps=2", "train.checkpoint_every=1", f"output_dir={tmp_path}", "name=cli",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "held-out pass@1 (3 tasks, greedy)" in r.stdout and "at the start" in r.stdout and "at the end" in r.stdout
    ckpt = tmp_path / "cli" / "checkpoints" / "step-000002"
    assert (ckpt / "model" / "model.safetensors").is_file()
    assert (tmp_path / "cli" / "checkpoints" / "step-000001").is_dir()
    for where in (tmp_path / "cli", ckpt):  # the run directory means its latest checkpoint
        e = rlvr("eval", "examples/quickstart.yaml", "--checkpoint", str(where), "--json", *TINY)
        assert e.returncode == 0, e.stderr
        out = json.loads(e.stdout.strip().splitlines()[-1])
        assert out["model"] == str(ckpt / "model")
        assert out["num_tasks"] == 3 and 0.0 <= out["pass_at_1"] <= 1.0


def test_version_and_sandbox_exit_codes(tmp_path: Path) -> None:
    r = rlvr("--version")
    assert r.returncode == 0 and r.stdout.startswith("rlvr ")
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps({"format": "assert", "tests": ["assert f(1) == 2", "assert f(2) == 3"]}))
    for body, code, first in (("return x + 1", 0, "OK: 2/2"), ("return x", 1, "OK: 0/2")):
        (tmp_path / "f.py").write_text(f"def f(x):\n    {body}\n")
        r = rlvr("sandbox", "run", str(tmp_path / "f.py"), "--tests", str(tests))
        assert r.returncode == code, r.stdout + r.stderr
        assert r.stdout.startswith(first), r.stdout


def test_a_sandbox_that_cannot_start_is_one_line_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr import cli
    from rlvr.sandbox.pool import SandboxError, SandboxPool

    def refuse(self: SandboxPool) -> SandboxPool:
        raise SandboxError("the sandbox server did not start")

    monkeypatch.setattr(SandboxPool, "start", refuse)
    (tmp_path / "f.py").write_text("def f(x):\n    return x\n")
    (tmp_path / "t.json").write_text(json.dumps({"format": "assert", "tests": ["assert f(1) == 1"]}))
    assert cli.main(["sandbox", "run", str(tmp_path / "f.py"), "--tests", str(tmp_path / "t.json")]) == 3
    err = capsys.readouterr().err
    assert err.startswith("rlvr: sandbox error: the sandbox server did not start") and "Traceback" not in err


def test_a_closed_output_pipe_is_not_a_crash() -> None:
    """`rlvr config --keys | head -1`: the reader leaves early; rlvr stops quietly (141)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlvr.cli", "config", "--keys"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        bufsize=0,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before rlvr has written anything: its first write finds no reader
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in proc.stderr.read()


def test_a_hub_id_loads_from_the_local_hugging_face_cache(tmp_path: Path) -> None:
    """`model.name_or_path: org/name` resolves through $HF_HOME/hub when the model was
    downloaded before (here a tiny model laid out as the hub cache lays out a download)."""
    import os

    from rlvr.rollout.models import TINY as TINY_MODEL
    from rlvr.rollout.models import load_policy

    snapshot = tmp_path / "hf" / "hub" / "models--acme--tiny-coder" / "snapshots" / ("0" * 40)
    model, tok = load_policy(TINY_MODEL, seed=3)
    model.save_pretrained(str(snapshot))
    tok.save_pretrained(str(snapshot))
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    args = ["config", "examples/quickstart.yaml", "model.name_or_path=acme/tiny-coder"]
    cmd = [sys.executable, "-c", "from rlvr.rollout.models import load_policy; m, _ = load_policy('acme/tiny-coder'); "
           "print(sum(p.numel() for p in m.parameters()))"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) == sum(p.numel() for p in model.parameters())
    r = subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert r.returncode == 0 and "name_or_path: acme/tiny-coder" in r.stdout


def test_bad_config_fails_fast_with_the_key() -> None:
    r = rlvr("train", "examples/quickstart.yaml", "train.stpes=3")
    assert r.returncode == 2
    assert "train.stpes" in r.stderr and "steps" in r.stderr
    r = rlvr("train", "examples/quickstart.yaml", "algo.clip_low=2")
    assert r.returncode == 2 and "algo.clip_low" in r.stderr
    r = rlvr("eval", "examples/quickstart.yaml", "--checkpoint", "/nonexistent")
    assert r.returncode == 2 and "--checkpoint /nonexistent: no such directory" in r.stderr


def test_help_lists_documented_keys() -> None:
    r = rlvr("train", "--help")
    assert r.returncode == 0
    assert "algo.clip_high" in r.stdout and "DAPO clip-higher" in r.stdout
    r = rlvr("config", "examples/quickstart.yaml", "train.steps=3")
    assert r.returncode == 0 and "steps: 3" in r.stdout


def test_score_prints_breakdown_and_flags(tmp_path) -> None:  # type: ignore[no-untyped-def]
    task = {
        "id": "py/double",
        "domain": "python",
        "prompt": "Write double(x).",
        "tests": {"format": "assert", "tests": ["assert double(3) == 6", "assert double(8) == 16"]},
        "reference": "def double(x):\n    return 2 * x\n",
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    good, hack = tmp_path / "good.txt", tmp_path / "hack.txt"
    good.write_text("```python\ndef double(x):\n    return 2 * x\n```")
    hack.write_text("```python\ndef double(x):\n    return {3: 6, 8: 16}[x]\n```")
    r = rlvr("score", str(tasks), str(good), "--config", "examples/code_rewards.yaml", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["components"]["completion"] == 1.0 and out["flags"] == []
    assert {"format", "security", "efficiency"} <= set(out["components"])
    assert out["execution"]["passed"] == 2
    r = rlvr("score", str(tasks), str(hack), "--config", "examples/code_rewards.yaml", "--json")
    out = json.loads(r.stdout)
    # a strong finding: capped at 0 less reward.hack_penalty (0.5)
    assert out["flags"] == ["hardcoded_tests"] and out["total"] == -0.5 and out["components"]["completion"] == 1.0
    r = rlvr("score", str(tasks), str(hack))  # the human-readable table
    assert r.returncode == 0 and "hardcoded_tests" in r.stdout
    r = rlvr("score", str(tasks), str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and "completion file not found" in r.stderr
    tasks.write_text(json.dumps(task) + "\n" + json.dumps({**task, "id": "py/other"}) + "\n")
    r = rlvr("score", str(tasks), str(good))
    assert r.returncode == 2 and "--task-id" in r.stderr
    r = rlvr("score", str(tasks), str(good), "--task-id", "py/other", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["task_id"] == "py/other"


def test_score_math_and_json_examples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rlvr.tasks import load_tasks

    m = load_tasks("bundled:math_word")[0]
    j = load_tasks("bundled:json_extract")[0]
    (tmp_path / "m.json").write_text(json.dumps(m.to_dict()))
    (tmp_path / "j.json").write_text(json.dumps(j.to_dict()))
    (tmp_path / "m.txt").write_text(f"Adding: \\boxed{{{m.tests['answer']}}}")
    (tmp_path / "j.txt").write_text("<answer>" + json.dumps(j.tests["expected"]) + "</answer>")
    r = rlvr("score", str(tmp_path / "m.json"), str(tmp_path / "m.txt"), "--config", "examples/math.yaml", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["components"] == {"completion": 1.0, "format": 1.0}
    r = rlvr(
        "score", str(tmp_path / "j.json"), str(tmp_path / "j.txt"), "--config", "examples/json_output.yaml", "--json"
    )
    out = json.loads(r.stdout)
    assert out["components"] == {"completion": 1.0, "format": 1.0}
    assert out["details"]["format"]["checks"] == {"tag:answer": True, "json_schema": True}


def test_eval_runs_on_every_bundled_domain() -> None:
    """`rlvr eval` machinery on each domain: tasks route to their environments, every
    episode is judged and scored (a tiny random model solves nothing)."""
    from rlvr.config import load_config
    from rlvr.rollout.evaluate import evaluate
    from rlvr.rollout.models import load_policy
    from rlvr.tasks import load_tasks

    cfg = load_config(
        ROOT / "examples" / "mixed.yaml", ["model.name_or_path=tiny-random", "generation.max_new_tokens=8"]
    )
    model, tok = load_policy("tiny-random")
    tasks = [t for src in cfg.tasks.source.split("+") for t in load_tasks(src)[:2]]
    r = evaluate(model, tok, tasks, cfg)
    assert r.num_tasks == 22 and len(r.trajectories) == 22
    domains = {"python", "cpp", "javascript", "repair", "data", "math", "reasoning", "json", "trading", "itops"}
    assert {t.domain for t in r.trajectories} == domains | {"repository"}
    assert all(t.status == "ok" and t.reward is not None for t in r.trajectories)
    assert all("completion" in t.reward.components for t in r.trajectories if t.reward)
