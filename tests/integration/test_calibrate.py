"""`rlvr tasks calibrate`: a model's sampled replies to each training task, scored as a
training step scores them, recorded on the task; the file it writes trains."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rlvr.rollout.factory as factory_mod
from rlvr.config import load_config
from rlvr.rollout.calibrate import sample_calibrations
from rlvr.tasks import load_tasks, split_tasks
from rlvr.tasks.calibration import of

from .helpers import ScriptedPolicy, write_add_tasks

ROOT = Path(__file__).parents[2]


def rlvr(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rlvr.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)  # fmt: skip


def test_each_task_records_what_its_sampled_replies_earned(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tiny,  # type: ignore[no-untyped-def]
) -> None:
    """The scripted policy answers every other row right: each task's 4 replies are
    right, wrong, right, wrong, so its record says so, and its credit (0.5) is level 2's."""
    model, tok = tiny
    policy = ScriptedPolicy(tok, hack_from=None).bind(model)
    monkeypatch.setattr(factory_mod, "make_engine", lambda cfg, model, tok, **kw: policy)
    cfg = load_config("examples/quickstart.yaml", [f"tasks.source={write_add_tasks(tmp_path / 'add.jsonl', n=5)}"])
    tasks = load_tasks(cfg.tasks.source)
    result = sample_calibrations(None, tok, tasks, cfg, samples=4, model_name="scripted", set_level=True,
                                 batch_tasks=2)  # fmt: skip
    assert result.measured == 5 and result.failed_replies == 0 and policy.calls == 3
    for t in result.tasks:
        cal = of(t)
        assert cal is not None and cal.model == "scripted"
        assert cal.solved == (True, False, True, False), t.id
        assert cal.rewards[0] == cal.rewards[2] == 1.0 and cal.rewards[1] == cal.rewards[3] <= 0.0, cal.rewards
        assert t.difficulty == 2
    assert [t.id for t in result.tasks] == [t.id for t in tasks]


def test_the_command_writes_every_task_and_the_file_trains(tmp_path: Path) -> None:
    src = write_add_tasks(tmp_path / "add.jsonl", n=12)
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    rows[0]["difficulty"] = rows[1]["difficulty"] = 5  # past the range: written, not measured
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "calibrated" / "add_cal.jsonl"
    tiny = ["model.name_or_path=tiny-random", "generation.max_new_tokens=6", f"tasks.source={src}"]
    r = rlvr("tasks", "calibrate", "examples/quickstart.yaml", *tiny, "--samples", "2", "--levels",
             "--out", str(out), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    written = load_tasks(str(out))
    assert [t.id for t in written] == [r["id"] for r in rows]
    assert [t.difficulty for t in written[:2]] == [5, 5] and all(of(t) is None for t in written[:2])
    train, held_out = split_tasks(written[2:], 0.2)
    assert train and held_out
    assert report["written"] == 12 and report["measured"] == len(train) and report["split"] == "train"
    assert all(of(t) is not None and of(t).samples == 2 for t in train)  # type: ignore[union-attr]
    assert all(of(t) is None and t.difficulty == 1 for t in held_out)  # held out: as they were
    assert report["none_earned"] == len(train) and all(t.difficulty == 4 for t in train)  # a random model earns 0
    assert report["outside_range"] == len(train)  # level 4 is past the default tasks.max_difficulty (3)
    run = rlvr("train", "examples/quickstart.yaml", "--quiet", "model.name_or_path=tiny-random",
               "generation.max_new_tokens=6", f"tasks.source={out}", "algo.group_size=2", "train.prompts_per_step=2",
               "train.steps=1", "eval.before_training=false", "eval.after_training=false",
               "curriculum.strategy=learnability", "tasks.max_difficulty=4", f"output_dir={tmp_path}",
               "name=cal")  # fmt: skip
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--samples", "0"], "--samples: 0 is not a positive number"),
        (["tasks.source=bundled:no_such_set"], "no bundled task set 'no_such_set'"),
        (["domains=[{name: json_extract, source: 'bundled:json_extract'}]"], "calibrate one task set at a time"),
    ],
)
def test_bad_input_gets_one_line(tmp_path: Path, extra: list[str], says: str) -> None:
    r = rlvr("tasks", "calibrate", "examples/quickstart.yaml", "--out", str(tmp_path / "x.jsonl"), *extra)
    assert r.returncode == 2, r.stdout + r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "x.jsonl").exists()
