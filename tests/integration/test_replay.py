"""`rlvr replay`: re-judging a recorded step (the same verdicts; what another reward config
would have given; flaky tests found by repeating) and re-running a step's update from the
checkpoint before it (identical on CPU; a changed batch is caught)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.config import load_config
from rlvr.train.loop import train
from tests.integration.helpers import tiny_run, use_scripted_policy, write_add_tasks

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"


def _train(tmp_path: Path, name: str, tasks: Path, *extra: str) -> Path:
    train(load_config(QUICK, tiny_run(tmp_path, tasks, name, "train.lr=1e-3", *extra)), quiet=True)
    return tmp_path / name


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 steps of a scripted policy (half right, half wrong: real advantages), a checkpoint
    after every step."""
    tmp = tmp_path_factory.mktemp("replay")
    with pytest.MonkeyPatch.context() as mp:
        use_scripted_policy(mp)
        return _train(tmp, "r", write_add_tasks(tmp / "add.jsonl"), "train.steps=4", "train.checkpoint_every=1",
                      "train.keep_checkpoints=10")  # fmt: skip


def _metrics(run: Path, step: int) -> dict[str, float]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return next(r for r in rows if r.get("step") == step)


def test_an_update_replays_identically_from_the_checkpoint_before_it(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _metrics(run, 3)["train/grad_norm"] > 0  # a real update, so the comparison means something
    assert main(["replay", str(run), "--step", "3", "--train", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["identical"] and out["from"] == "step-000002" and out["trajectories"] == 4
    checks = {c["what"]: c for c in out["checks"]}
    assert checks["loss"]["original"] == checks["loss"]["replayed"] != 0
    assert checks["grad_norm"]["original"] == checks["grad_norm"]["replayed"]
    assert checks["weights"]["equal"] and out["weights_checked_against"] == "checkpoint step-000003"
    assert main(["replay", str(run), "--step", "1", "--train"]) == 0  # from the initial model
    assert "replayed from the initial model" in capsys.readouterr().out


def test_without_the_next_checkpoint_the_logged_fingerprint_is_compared(tmp_path: Path, run: Path) -> None:
    copy = tmp_path / "r"
    shutil.copytree(run, copy)
    shutil.rmtree(copy / "checkpoints" / "step-000004")
    assert main(["replay", str(copy), "--step", "4", "--train"]) == 0
    shutil.rmtree(copy / "checkpoints" / "step-000002")
    assert main(["replay", str(copy), "--step", "3", "--train"]) == 2  # nothing to start from: says which exist


def test_a_changed_batch_is_reported_as_different(
    tmp_path: Path, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "r"
    shutil.copytree(run, copy)
    lines = (copy / "trajectories.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec["step"] == 3 and not rec.get("dropped"):
            rec["reward"]["total"] = 1.0 - rec["reward"]["total"]  # as if it had been judged the other way
            lines[i] = json.dumps(rec)
            break
    (copy / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["replay", str(copy), "--step", "3", "--train"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT" in out and "NOT identical" in out


def test_rejudging_gives_the_recorded_verdicts_and_shows_what_another_reward_would_give(
    tmp_path: Path, run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(run), "--step", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judged"] == 4 and out["changed"] == [] and out["flaky"] == []
    other = tmp_path / "double.yaml"
    other.write_text("reward:\n  terms:\n    - {name: completion, weight: 2.0}\n")
    assert main(["replay", str(run), "--step", "2", "--config", str(other)]) == 0
    text = capsys.readouterr().out
    assert "reward 1.0000 -> 2.0000" in text  # the right answers; the components did not move
    assert "2 differ (reward 2)" in text


def test_repeating_finds_a_flaky_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    use_scripted_policy(monkeypatch)
    tasks = write_add_tasks(tmp_path / "flaky.jsonl", extra_test="assert __import__('random').random() < 0.5")
    run = _train(tmp_path, "f", tasks, "train.steps=1")
    assert main(["replay", str(run), "--step", "1", "--repeat", "12", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    flaky_tests = {name for j in out["flaky"] for name in j["flaky"]}
    assert "assert __import__('random').random() < 0.5" in flaky_tests


def test_bad_replay_requests_are_one_line_errors(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(run), "--step", "99"]) == 2
    assert "no trajectories of step 99 (steps logged: 1..4)" in capsys.readouterr().err
    assert main(["replay", str(run), "--step", "2", "--task", "py/nope"]) == 2
    assert main(["replay", str(run), "--step", "2", "--train", "--task", "py/add_1"]) == 2
    assert main(["replay", str(run.parent), "--step", "2"]) == 2
    assert "not a run directory" in capsys.readouterr().err
