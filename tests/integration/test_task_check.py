"""The task check against the real sandbox and environments: a deliberately broken set is
quarantined task by task with its reasons (`rlvr tasks check` as a user runs it), a set
mostly broken stops `rlvr train` with one line before a model loads, the verdicts are
cached by content, and a sample of every bundled set passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlvr.config import ConfigError, RunConfig
from rlvr.envs.task_check import check_task_set
from rlvr.tasks.check import VerdictCache
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks
from rlvr.train.preflight import check_run

ROOT = Path(__file__).resolve().parents[2]


def _row(tid: str, name: str, reference: str | None, tests: list[str], held_out: list[str] | None = None) -> str:
    row: dict[str, object] = {
        "id": tid,
        "domain": "python",
        "prompt": f"Write {name}(x).",
        "entry_point": name,
        "tests": {"format": "assert", "tests": tests, **({"held_out": held_out} if held_out else {})},
    }
    if reference:
        row["reference"] = reference
    return json.dumps(row)


GOOD = _row(
    "ok/add_2",
    "add_2",
    "def add_2(x):\n    return x + 2\n",
    ["assert add_2(0) == 2", "assert add_2(5) == 7"],
    ["assert add_2(-3) == -1", "assert add_2(100) == 102"],
)
WRONG_REFERENCE = _row(
    "bad/wrong_reference",
    "add_3",
    "def add_3(x):\n    return x + 2\n",
    ["assert add_3(0) == 3", "assert add_3(5) == 8"],
)
VISIBLE_ONLY = _row("bad/visible_only", "sq", None, ["assert sq(2) == 4", "assert sq(3) == 9"])
MATH = json.dumps({"id": "m/ok", "domain": "math", "prompt": "2 + 3?", "tests": {"format": "answer", "answer": "5"}})


def _write(path: Path, *rows: str) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


def _rlvr(*args: str, cache: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RLVR_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def test_rlvr_tasks_check_quarantines_each_broken_task_with_its_reason(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "broken.jsonl", GOOD, WRONG_REFERENCE, VISIBLE_ONLY, MATH)
    cache = tmp_path / "cache"
    r = _rlvr("tasks", "check", str(tasks), cache=cache)
    assert r.returncode == 0, r.stderr  # 1 of 3 python tasks: the set may still train
    assert r.stdout.splitlines() == [
        f"{tasks}: 4 tasks checked, 0 from the cache, 1 quarantined",
        "math: 1 of 1 tasks pass",
        "python: 2 of 3 tasks pass, 1 quarantined",
        "  quarantined bad/wrong_reference: the reference earns completion 0.000, not full credit (1)",
    ]
    assert r.stderr == ""
    # a table of the visible asserts passes every test of a task without held-out or drawn
    # tests: the hack detector's penalty is what keeps it at or below a wrong answer; a run
    # that only flags hacks (reward.on_hack=flag) pays it, and the check says so
    flag = tmp_path / "flag.yaml"
    flag.write_text("reward:\n  on_hack: flag\n")
    r = _rlvr("tasks", "check", str(tasks), "--config", str(flag), "--json", "--strict", cache=cache)
    assert r.returncode == 1  # --strict: a task is quarantined
    report = json.loads(r.stdout)
    assert report["cached"] == 0  # another reward config: checked again
    reasons = {q["task_id"]: q["problems"] for q in report["quarantined"]}
    assert reasons == {
        "bad/wrong_reference": ["the reference earns completion 0.000, not full credit (1)"],
        "bad/visible_only": ["the exploit visible_table earns 1.000, more than a wrong answer (0.000)"],
    }
    scores = next(q["scores"] for q in report["quarantined"] if q["task_id"] == "bad/visible_only")
    assert scores["exploit:always_equal"] == 0.0 and scores["exploit:exit_before_tests"] == 0.0
    r = _rlvr("tasks", "check", str(tasks), "--json", cache=cache)
    assert json.loads(r.stdout)["cached"] == 4  # the first config's verdicts, from the cache


def test_a_mostly_broken_set_stops_the_run_before_a_model_loads(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "broken.jsonl", GOOD, WRONG_REFERENCE, WRONG_REFERENCE.replace("bad/", "bad2/"))
    cache = tmp_path / "cache"
    r = _rlvr("tasks", "check", str(tasks), cache=cache)
    assert r.returncode == 1
    assert "more than half of the checked python tasks are quarantined" in r.stderr
    assert _rlvr("tasks", "check", str(tasks), "--allow-quarantine", cache=cache).returncode == 0
    out = tmp_path / "runs"
    r = _rlvr("train", "examples/quickstart.yaml", f"tasks.source={tasks}", f"output_dir={out}", cache=cache)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"rlvr: error: tasks: 2 of 3 checked python tasks of {tasks} fail the task check (first, "
        "bad/wrong_reference: the reference earns completion 0.000, not full credit (1)); "
        f"`rlvr tasks check {tasks}` lists them all; tasks.allow_quarantine=true trains on the rest"
    ]
    assert not out.exists()  # nothing left behind


def test_a_domain_records_broken_tasks_are_checked_and_named_by_the_record(tmp_path: Path) -> None:
    """A record (domains: [...]) over a mostly broken file: `rlvr tasks check --config`
    checks the config's own task set, and `rlvr train` stops naming the record's domain
    and source, pointing at that command."""
    broken = _write(tmp_path / "broken.jsonl", GOOD, WRONG_REFERENCE, WRONG_REFERENCE.replace("bad/", "bad2/"))
    math = _write(tmp_path / "math.jsonl", MATH)
    config = tmp_path / "records.yaml"
    config.write_text(
        "tasks:\n  source: none\ndomains:\n"
        f"  - {{name: python/mine, source: {broken}}}\n  - {{name: math/mine, source: {math}}}\n"
    )
    cache = tmp_path / "cache"
    r = _rlvr("tasks", "check", "--config", str(config), cache=cache)
    assert r.returncode == 1
    assert r.stdout.splitlines()[:3] == [
        "python/mine+math/mine: 4 tasks checked, 0 from the cache, 2 quarantined",
        "math/mine: 1 of 1 tasks pass",
        "python/mine: 1 of 3 tasks pass, 2 quarantined",
    ]
    out = tmp_path / "runs"
    r = _rlvr("train", str(config), f"output_dir={out}", cache=cache)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"rlvr: error: tasks: 2 of 3 checked python/mine tasks of {broken} fail the task check (first, "
        "bad/wrong_reference: the reference earns completion 0.000, not full credit (1)); "
        "`rlvr tasks check --config CONFIG` lists them all; tasks.allow_quarantine=true trains on the rest"
    ]
    assert not out.exists()


def test_check_run_leaves_quarantined_tasks_out_of_both_splits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path / "cache"))
    rows = [GOOD.replace("ok/add_2", f"ok/{i}") for i in range(6)] + [WRONG_REFERENCE]
    tasks = _write(tmp_path / "t.jsonl", *rows)
    base = {"tasks": {"source": str(tasks), "eval_fraction": 0.3}, "eval": {"before_training": False}}
    inputs = check_run(RunConfig.model_validate(base), check_model_name=False)
    kept = {t.id for t in inputs.train_tasks + inputs.eval_tasks}
    assert "bad/wrong_reference" not in kept and len(kept) >= 5
    assert inputs.task_check is not None and inputs.task_check.quarantined_ids() == {"bad/wrong_reference"}
    off = check_run(
        RunConfig.model_validate({**base, "tasks": {**base["tasks"], "check": "off"}}), check_model_name=False
    )
    assert off.task_check is None and "bad/wrong_reference" in {t.id for t in off.train_tasks + off.eval_tasks}


def test_a_failing_sample_is_confirmed_on_the_whole_domain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """tasks.check_sample=1 draws the one broken task of six: the domain is checked whole
    before it may stop the run (and says so), and the run goes on without that task; a
    domain broken for real still stops it, on every task's verdict."""
    import hashlib

    from rlvr.train import preflight

    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path / "cache"))
    rank = lambda tid: hashlib.sha256(tid.encode()).hexdigest()  # noqa: E731  (check_sample's order)
    good = [i for i in range(40) if rank(f"ok/{i}") > rank("bad/wrong_reference")][:5]
    rows = [GOOD.replace("ok/add_2", f"ok/{i}") for i in good] + [WRONG_REFERENCE]
    base = {"tasks": {"source": str(_write(tmp_path / "t.jsonl", *rows)), "check_sample": 1}}
    cfg = RunConfig.model_validate({**base, "eval": {"before_training": False, "after_training": False}})
    assert [t.id for t in preflight.check_sample(load_tasks(cfg.tasks.source), 1)] == ["bad/wrong_reference"]
    inputs = check_run(cfg, check_model_name=False)
    assert inputs.task_check is not None and inputs.task_check.by_domain() == {"python": (1, 6)}
    assert inputs.task_check.widened == ("python",)
    assert "task check: python: the sample failed the task check; all 6 tasks checked" in capsys.readouterr().err
    assert {t.id for t in inputs.train_tasks} == {f"ok/{i}" for i in good}
    low = min(rank(f"ok/{i}") for i in good[:2])
    bad = [WRONG_REFERENCE.replace("bad/", f"bad{i}/") for i in range(60) if rank(f"bad{i}/wrong_reference") < low][:4]
    cfg = RunConfig.model_validate({**base, "tasks": {**base["tasks"], "source": str(_write(tmp_path / "b.jsonl",
                                   *rows[:2], *bad))}})  # fmt: skip
    with pytest.raises(ConfigError, match=r"^tasks: 4 of 6 checked python tasks"):
        check_run(cfg, check_model_name=False)


SETS = sorted(p.stem for p in BUNDLED_DIR.glob("*.jsonl") if p.stem != "repos")  # repos: built by a fixture elsewhere


def test_a_sample_of_every_bundled_set_passes(tmp_path: Path) -> None:
    from rlvr.train.preflight import check_sample

    tasks = [t for name in SETS for t in check_sample(load_tasks(f"bundled:{name}"), 3)]
    report = check_task_set(tasks, RunConfig(), cache=VerdictCache(tmp_path))
    assert not report.quarantined, [(v.task_id, v.problems) for v in report.quarantined]
    assert len(report.verdicts) == len(tasks) >= 3 * len(SETS)


EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_config_passes_the_check_on_a_sample_of_its_tasks(path: Path, tmp_path: Path) -> None:
    """Under each shipped config's own reward (a format term, hidden tests, penalties), two
    tasks of each domain of its source pass: a shipped config never stops at the check."""
    from rlvr.config import ConfigError, load_config, load_plugins
    from rlvr.train.preflight import check_ready, check_sample, run_tasks

    cfg = load_config(path)
    load_plugins(cfg)
    tasks = run_tasks(cfg)  # tasks.source and the config's domain records
    try:
        check_ready(tasks)
    except ConfigError as e:
        pytest.skip(f"{path.name}: {e}")  # bundled:repos before `rlvr repos add --bundled`
    report = check_task_set(check_sample(tasks, 2), cfg, cache=VerdictCache(tmp_path))
    assert report.failing_domains() == [], [(v.task_id, v.problems) for v in report.quarantined]
