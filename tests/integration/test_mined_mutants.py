"""`rlvr tasks mine-mutants RUN`: a run's failing solutions become realistic mutants of
the test-writing tasks (rlvr.tasks.generators.minedmutants), checked in the real sandbox:
kept only when a source test or a drawn input tells them apart, never when the program
crashes before its tests, never twice or as a copy of a mutant the task has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rlvr.config import load_config
from rlvr.envs.scoring import score_completion
from rlvr.tasks import load_tasks
from rlvr.tasks.loader import write_tasks

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "```python\n"


def _row(task_id: str, reply: str, passed: int, total: int = 11, status: str = "ok") -> str:
    turns = [{"role": "user", "content": "..."}, {"role": "assistant", "content": PREFIX + reply + "\n```"}]
    execution = {"status": status, "passed": passed, "total": total}
    return json.dumps({"task_id": task_id, "status": "ok", "turns": turns, "execution": execution})


def test_a_runs_failing_solutions_become_mutants_the_gold_tests_still_catch(tmp_path: Path) -> None:
    tasks = tmp_path / "tw.jsonl"
    tw = [t for t in load_tasks("bundled:test_writing") if t.id in ("tw/add_2", "tw/add_3")]
    write_tasks(tw, tasks)
    before = {t.id: len(t.tests["mutants"]) for t in tw}
    plus_20 = "def add_2(x):\n    return x + 20"
    rows = [
        _row("py/add_2", plus_20, 0),
        _row("py/add_2", plus_20 + "  # again", 0),  # the same tree: counted once, first by frequency
        _row("py/add_2", "def add_2(x):\n    if x > 99:\n        return x\n    return x + 2", 10),  # only 100
        _row("py/add_2", "def add_2(x):\n    return x - 2", 0),  # a mutant the task already has
        _row("py/add_2", "import no_such_module\ndef add_2(x):\n    return x + 7", 0),  # crashes at import
        _row("py/add_2", "def add_2(x):\n    return 2 + x", 3),  # equivalent (a mislabelled row): dropped
        _row("py/add_2", "def plus_two(x):\n    return x + 5", 0),  # does not define add_2
        _row("py/add_2", "def add_2(x):\n    return x + 4", 11),  # passed every test: not a failure
        _row("py/add_2", "def add_2(x):\n    return x + 6", 0, status="timeout"),  # did not run to the end
        _row("py/add_2#canary/x", "def add_2(x):\n    return x + 8", 0),
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").write_text("\n".join(rows) + "\n")
    r = subprocess.run([sys.executable, "-m", "rlvr.cli", "tasks", "mine-mutants", str(run), "--tasks", str(tasks)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"4 candidate mutants from {run}; 2 added (train); dropped: does not run 1, presumed equivalent 1",
        f"2 tasks written to {tasks}",
    ]
    after = {t.id: t for t in load_tasks(str(tasks))}
    assert len(after["tw/add_3"].tests["mutants"]) == before["tw/add_3"]  # no reply reached add_3: unchanged
    mined = [m for m in after["tw/add_2"].tests["mutants"] if m["id"].startswith("mined@")]
    assert [(m["family"], m["source"]) for m in mined] == [
        ("train", plus_20 + "\n"),
        ("train", "def add_2(x):\n    if x > 99:\n        return x\n    return x + 2\n"),
    ]
    assert len(after["tw/add_2"].tests["mutants"]) == before["tw/add_2"] + 2
    # the gold tests still catch every mutant, the mined ones included: full kill share
    gold = str(after["tw/add_2"].metadata["reference_tests"])
    t = score_completion(after["tw/add_2"], f"{PREFIX}{gold}\n```", load_config())
    assert t.reward is not None and t.reward.components["kill_share"] == 1.0
    # and the covering tests were chosen again: the reference reply still catches every mutant
    cover = str(after["tw/add_2"].metadata["covering_tests"])
    assert cover != str(tw[0].metadata["covering_tests"])
    t = score_completion(after["tw/add_2"], f"{PREFIX}{cover}\n```", load_config())
    assert t.reward is not None and t.reward.components["kill_share"] == 1.0
    # mining the same run again adds nothing: the mined programs are now the task's own
    r = subprocess.run([sys.executable, "-m", "rlvr.cli", "tasks", "mine-mutants", str(run), "--tasks", str(tasks)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert r.stdout.splitlines()[0].startswith(f"2 candidate mutants from {run}; 0 added")


def test_mine_mutants_names_what_is_wrong_in_one_line(tmp_path: Path) -> None:
    def rlvr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rlvr.cli", "tasks", "mine-mutants", *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip

    r = rlvr(str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip() == (
        "rlvr: error: --out: bundled:test_writing is not a file to rewrite; name where the tasks go"
    )
    r = rlvr(str(tmp_path), "--out", str(tmp_path / "o.jsonl"))
    assert r.returncode == 2 and r.stderr.strip() == (
        f"rlvr: error: {tmp_path}: no trajectories.jsonl (not a run directory, or it recorded none)"
    )
