"""`rlvr export` (issue 13 part 7): preference pairs and SFT rows from a trace store built
from hand-made trajectories whose rewards make every pair and margin checkable by hand.

The store (step: group = task, samples as (reward, what)):
    1: g1 = t1 python   1.0 pass 3/3 · 0.5 · 0.5 · 0.0
    1: g2 = t2 python   0.9 flagged · 0.4 (1/2) · failed episode · 0.1 (0/2)
    2: g3 = t1 python   0.2 flagged · 0.8 two attempts, pass 2/2 · 1.0 pass 2/2
    2: g4 = t3 math     1.0 · 1.0 (completion 1, no tests: a tie, no pair)
    3: g5 = t2 python   dropped: 0.7 pass 2/2 · 0.4 (0/2)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from datasets import load_dataset

from rlvr.trace.export import export, parse_steps
from rlvr.trace.parquet import TraceStore
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, TestResult, TestStatus, Trajectory, Turn

RLVR = Path(sys.executable).parent / "rlvr"
SYSTEM = {"role": "system", "content": "You write Python."}


def _user(task: str) -> dict[str, str]:
    return {"role": "user", "content": f"Solve {task}."}


def _traj(
    task: str,
    group: str,
    reward: float | None,
    *,
    domain: str = "python",
    tests: tuple[int, int] | None = (0, 2),
    flags: tuple[str, ...] = (),
    completion: float | None = None,
    feedback: bool = False,
    status: str = "ok",
    reply: str = "",
) -> Trajectory:
    turns = [Turn("system", SYSTEM["content"]), Turn("user", _user(task)["content"])]
    if feedback:
        turns += [Turn("assistant", "def f(): pass", [1, 2], trainable=True), Turn("user", "test_a failed")]
    turns.append(Turn("assistant", reply or f"def f(): return {reward}", [3, 4, 5], trainable=True))
    execution = None
    if tests is not None:
        passed, total = tests
        verdicts = [
            TestResult(f"test_{i}", TestStatus.PASSED if i < passed else TestStatus.FAILED) for i in range(total)
        ]
        execution = ExecutionResult(RunStatus.OK, verdicts)
    comps = {"completion": completion if completion is not None else (tests[0] / tests[1] if tests else 0.0)}
    return Trajectory(
        task_id=task,
        domain=domain,
        group_id=group,
        turns=turns,
        execution=execution,
        reward=None if reward is None else RewardBreakdown(reward, {**comps, "format": 1.0}, flags=list(flags)),
        status=status,
        error="sandbox down" if status == "error" else "",
    )


@pytest.fixture
def store(tmp_path: Path) -> str:
    uri = str(tmp_path / "traces")
    s = TraceStore(uri)
    g1 = [_traj("t1", "g1", 1.0, tests=(3, 3))] + [_traj("t1", "g1", r) for r in (0.5, 0.5, 0.0)]
    g2 = [
        _traj("t2", "g2", 0.9, flags=("exit_early",), tests=(2, 2)),
        _traj("t2", "g2", 0.4, tests=(1, 2)),
        _traj("t2", "g2", None, status="error", tests=None),
        _traj("t2", "g2", 0.1),
    ]
    s.write_step(1, [(t, True) for t in g1 + g2], {"reward/mean": 0.4})
    g3 = [
        _traj("t1", "g3", 0.2, flags=("assert_override",), tests=(2, 2)),
        _traj("t1", "g3", 0.8, tests=(2, 2), feedback=True),
        _traj("t1", "g3", 1.0, tests=(2, 2)),
    ]
    g4 = [_traj("t3", "g4", 1.0, domain="math", tests=None, completion=1.0, reply=f"42 ({i})") for i in range(2)]
    s.write_step(2, [(t, True) for t in g3 + g4], {})
    g5 = [_traj("t2", "g5", 0.7, tests=(2, 2)), _traj("t2", "g5", 0.4)]
    s.write_step(3, [(t, False) for t in g5], {})
    return uri


def _load(path: Path, cache: Path) -> list[dict[str, Any]]:
    kind = "json" if path.suffix == ".jsonl" else "parquet"
    return load_dataset(kind, data_files=str(path), split="train", cache_dir=str(cache)).to_list()


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["step"], row["group_id"], row["chosen_sample"], row["rejected_sample"], row["margin"])


def test_preference_pairs_every_ordered_pair_with_a_margin_largest_first(store: str, tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    summary = export(store, "preference", str(out))
    rows = _load(out, tmp_path / "cache")
    assert [_key(r) for r in rows] == [
        (1, "g1", 0, 3, 1.0),
        (1, "g1", 0, 1, 0.5),
        (1, "g1", 0, 2, 0.5),
        (1, "g1", 1, 3, 0.5),
        (1, "g1", 2, 3, 0.5),
        (1, "g2", 1, 3, 0.3),  # the flagged 0.9 is never chosen, the failed episode never used
        (2, "g3", 2, 0, 0.8),  # the flagged 0.2 may be rejected
        (2, "g3", 1, 0, 0.6),
        (2, "g3", 2, 1, 0.2),
        (3, "g5", 0, 1, 0.3),  # 0.7 - 0.4 is 0.3 (not 0.29999999999999993); dropped groups by default
    ]
    assert (summary.rows, summary.groups, summary.used) == (10, 5, 4)
    assert summary.skipped["failed episodes"] == 1
    assert summary.skipped["groups without a pair"] == 1  # g4: a tie
    assert "wrote 10 preference pairs" in summary.line(str(out))
    first = rows[0]
    assert set(first) >= {"prompt", "chosen", "rejected", "margin", "chosen_reward", "rejected_reward"}
    assert first["prompt"] == [SYSTEM, _user("t1")]
    assert first["chosen"] == [{"role": "assistant", "content": "def f(): return 1.0"}]
    assert first["rejected"] == [{"role": "assistant", "content": "def f(): return 0.0"}]
    assert (first["chosen_reward"], first["rejected_reward"]) == (1.0, 0.0)
    assert json.loads(first["chosen_components"]) == {"completion": 1.0, "format": 1.0}
    assert json.loads(first["rejected_components"]) == {"completion": 0.0, "format": 1.0}
    assert (first["task_id"], first["domain"]) == ("t1", "python")
    multi = rows[7]  # g3: the two-attempt reply is chosen, with its feedback turn
    assert multi["prompt"] == [SYSTEM, _user("t1")]
    assert [m["role"] for m in multi["chosen"]] == ["assistant", "user", "assistant"]
    assert multi["chosen"][1]["content"] == "test_a failed"
    assert not any(r["chosen_reward"] == 0.9 for r in rows)


def test_preference_options_margin_cap_steps_trained_only_and_parquet(store: str, tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    export(store, "preference", str(out), min_margin=0.3)
    margins = [r["margin"] for r in _load(out, tmp_path / "c1")]
    assert margins == [1.0, 0.5, 0.5, 0.5, 0.5, 0.3, 0.8, 0.6, 0.3]  # g3's 0.2 gone; 0.3 kept despite float error
    summary = export(store, "preference", str(out), max_pairs_per_group=2)
    rows = _load(out, tmp_path / "c2")
    assert [_key(r)[:4] for r in rows if r["group_id"] == "g1"] == [(1, "g1", 0, 3), (1, "g1", 0, 1)]
    assert summary.skipped["pairs over the cap"] == 3 + 1
    assert rows[0]["prompt"] == [SYSTEM, _user("t1")] and isinstance(rows[0]["chosen"][0], dict)
    export(store, "preference", str(out), steps=(2, 3))
    assert {r["step"] for r in _load(out, tmp_path / "c3")} == {2, 3}
    summary = export(store, "preference", str(out), trained_only=True)
    assert 3 not in {r["step"] for r in _load(out, tmp_path / "c4")}
    assert summary.rows == 9 and summary.skipped["dropped trajectories"] == 2


def test_sft_the_best_passing_reply_per_task(store: str, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    summary = export(store, "sft", str(out))
    rows = _load(out, tmp_path / "cache")
    got = {r["task_id"]: (r["step"], r["group_id"], r["sample"], r["reward"]) for r in rows}
    assert got == {
        "t1": (1, "g1", 0, 1.0),  # 1.0 at steps 1 and 2: the earliest step wins
        "t2": (3, "g5", 0, 0.7),  # the flagged 0.9 (all tests passed) is never taken; found in a dropped group
        "t3": (2, "g4", 0, 1.0),  # math: no tests, completion 1
    }
    assert rows[0]["messages"] == [SYSTEM, _user("t1"), {"role": "assistant", "content": "def f(): return 1.0"}]
    assert (rows[0]["domain"], rows[2]["domain"]) == ("python", "math")
    assert (summary.rows, summary.groups) == (3, 3) and summary.skipped["flagged"] == 2
    out_pq = tmp_path / "sft.parquet"
    summary = export(store, "sft", str(out_pq), trained_only=True)
    rows = _load(out_pq, tmp_path / "c2")
    assert sorted(r["task_id"] for r in rows) == ["t1", "t3"]
    assert summary.skipped["tasks without a passing reply"] == 1  # t2's only pass was dropped
    assert rows[0]["messages"][-1]["role"] == "assistant"


def test_multi_turn_sft_row_keeps_only_the_judged_reply(tmp_path: Path) -> None:
    uri = str(tmp_path / "s")
    TraceStore(uri).write_step(1, [(_traj("t9", "g", 0.9, tests=(2, 2), feedback=True), True)], {})
    export(uri, "sft", str(tmp_path / "o.jsonl"))
    (row,) = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
    assert row["messages"][-1]["content"] == "def f(): return 0.9" and row["attempts"] == 2


def test_trl_reads_the_layout_when_installed(store: str, tmp_path: Path) -> None:
    data_utils = pytest.importorskip("trl.data_utils")
    export(store, "preference", str(tmp_path / "p.jsonl"))
    export(store, "sft", str(tmp_path / "s.jsonl"))
    pref = _load(tmp_path / "p.jsonl", tmp_path / "c")[0]
    sft = _load(tmp_path / "s.jsonl", tmp_path / "c")[0]
    assert data_utils.is_conversational(pref) and data_utils.is_conversational(sft)


def test_steps_argument() -> None:
    assert parse_steps(None) is None
    assert parse_steps("2:5") == (2, 5) and parse_steps("3") == (3, 3)
    assert parse_steps("4:") == (4, None) and parse_steps(":7") == (None, 7) and parse_steps(":") == (None, None)
    from rlvr.config import ConfigError

    for bad in ("a:b", "5:2", "", "-1", "1:2:3"):
        with pytest.raises(ConfigError):
            parse_steps(bad)


def _rlvr(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RLVR), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_cli_writes_and_reports_and_refuses_bad_input_in_one_line(store: str, tmp_path: Path) -> None:
    ok = _rlvr("export", store, "--format", "preference", "--out", "out/p.jsonl", "--steps", "1", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == (
        "wrote 6 preference pairs to out/p.jsonl from 2 of 2 groups "
        "(skipped: failed episodes: 1, flagged (never chosen): 1)\n"
    )
    assert len((tmp_path / "out" / "p.jsonl").read_text().splitlines()) == 6
    assert not list((tmp_path / "out").glob("*.tmp"))
    bad_format = _rlvr("export", store, "--format", "csv", "--out", "x.jsonl", cwd=tmp_path)
    assert bad_format.returncode == 2 and "invalid choice: 'csv'" in bad_format.stderr
    for args, words in [
        (["missing_run", "--format", "sft", "--out", "x.jsonl"], "missing_run: not a run directory"),
        ([store, "--format", "sft", "--out", "x.csv"], "must end in .jsonl or .parquet"),
        (
            [store, "--format", "sft", "--out", "x.jsonl", "--steps", "7:9"],
            "no trajectories in steps 7:9 (steps: 1..3)",
        ),
        ([store, "--format", "sft", "--out", "x.jsonl", "--min-margin", "0.5"], "apply to --format preference"),
    ]:
        r = _rlvr("export", *args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("rlvr: error: ") and words in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_a_tool_episode_judged_as_a_whole_keeps_every_turn(tmp_path: Path) -> None:
    uri = str(tmp_path / "tool")
    t = _traj(
        "trade-1", "g", 1.0, domain="trading", tests=None, completion=1.0, feedback=True, reply='{"tool": "done"}'
    )
    TraceStore(uri).write_step(1, [(t, True)], {})
    export(uri, "sft", str(tmp_path / "o.jsonl"))
    (row,) = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "user", "assistant"]
    assert row["messages"][-1]["content"] == '{"tool": "done"}'
