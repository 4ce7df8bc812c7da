"""The `rlvr` command as a user runs it: a subprocess with a tiny budget."""

import json
import subprocess
import sys
from pathlib import Path

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
    r = rlvr("train", "examples/quickstart.yaml", *TINY, "train.steps=2", f"output_dir={tmp_path}", "name=cli")
    assert r.returncode == 0, r.stderr
    assert "pass@1" in r.stdout and "before" in r.stdout and "after" in r.stdout
    ckpt = tmp_path / "cli" / "checkpoints" / "step-000002"
    assert (ckpt / "model" / "model.safetensors").is_file()
    e = rlvr("eval", "examples/quickstart.yaml", *TINY, "--checkpoint", str(ckpt), "--json")
    assert e.returncode == 0, e.stderr
    out = json.loads(e.stdout.strip().splitlines()[-1])
    assert out["num_tasks"] == 3 and 0.0 <= out["pass_at_1"] <= 1.0


def test_bad_config_fails_fast_with_the_key() -> None:
    r = rlvr("train", "examples/quickstart.yaml", "train.stpes=3")
    assert r.returncode == 2
    assert "train.stpes" in r.stderr and "steps" in r.stderr
    r = rlvr("train", "examples/quickstart.yaml", "algo.clip_low=2")
    assert r.returncode == 2 and "algo.clip_low" in r.stderr
    r = rlvr("eval", "examples/quickstart.yaml", "--checkpoint", "/nonexistent")
    assert r.returncode == 2 and "no model found" in r.stderr


def test_help_lists_documented_keys() -> None:
    r = rlvr("train", "--help")
    assert r.returncode == 0
    assert "algo.clip_high" in r.stdout and "DAPO clip-higher" in r.stdout
    r = rlvr("config", "examples/quickstart.yaml", "train.steps=3")
    assert r.returncode == 0 and "steps: 3" in r.stdout
