"""bench/repos_learning.py: which tasks it picks, and how it reads an episode's tool use
(on hand-made rows and turns; the bench's smoke run is an integration test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from repos_learning import episode_use, pick_tasks


def _row(repo: str, n: int, split: str, tier: int) -> dict:
    return {"id": f"{repo}/f.py/{n}@t{tier}", "metadata": {"split": split}, "tests": {"repo": repo, "tier": tier}}


ROWS = ([_row(r, n, "train", n % 2) for r in ("a", "b", "c") for n in range(6)]
        + [_row(r, n, "eval", n % 2) for r in ("x", "y") for n in range(6)])  # fmt: skip


def test_pick_spreads_over_projects_and_keeps_held_out_tasks_at_their_tier() -> None:
    picked = pick_tasks(ROWS, train=5, held_out=4, tier=0)
    train, held = picked[:5], picked[5:]
    assert [r["tests"]["repo"] for r in train] == ["a", "b", "c", "a", "b"]
    assert all(r["metadata"]["split"] == "train" for r in train)
    assert [r["tests"]["repo"] for r in held] == ["x", "y", "x", "y"]
    assert all(r["metadata"]["split"] == "eval" and r["tests"]["tier"] == 0 for r in held)


def test_a_larger_pick_keeps_a_smaller_one_s_tasks() -> None:
    small = {r["id"] for r in pick_tasks(ROWS, train=3, held_out=2, tier=1)}
    large = {r["id"] for r in pick_tasks(ROWS, train=9, held_out=6, tier=1)}
    assert small < large


def test_asking_for_more_held_out_tasks_than_the_tier_has_is_one_line() -> None:
    with pytest.raises(SystemExit, match="only 6 held-out tasks at tier 0; --eval-tasks 7"):
        pick_tasks(ROWS, train=1, held_out=7, tier=0)


def _turns(*pairs: str) -> list[dict]:
    roles = ["system", "user"] + ["assistant", "user"] * len(pairs)
    texts = ["sys", "the task", *pairs]
    return [{"role": r, "content": t} for r, t in zip(roles, texts, strict=False)]


def test_an_episode_that_reads_edits_tests_and_submits() -> None:
    turns = _turns('{"tool": "read"}', "[read]\n1 x\n[29 tool calls left]",
                   '{"tool": "edit"}', "[edit]\nedited\n[28 tool calls left]",
                   '{"tool": "run_tests"}', "[run_tests]\n1 passed\n[27 tool calls left]",
                   '{"tool": "submit"}')  # fmt: skip
    got = episode_use(turns, "stop")
    assert got == {"replies": 4, "valid": 4, "tools": ["read", "edit", "run_tests"], "submitted": True}


def test_replies_that_are_no_tool_call_or_an_unknown_tool_are_not_valid() -> None:
    turns = _turns("let me think", '[no tool]\nNo tool call found. Reply with one JSON object\n[29 tool calls left]',
                   '{"tool": "fix"}', "[fix]\nUnknown tool 'fix'; the tools are list, read\n[28 tool calls left]",
                   '{"tool": "list"}', "[list]\nsetup.py\n[27 tool calls left]")  # fmt: skip
    got = episode_use(turns, "stop")
    assert got == {"replies": 3, "valid": 1, "tools": ["list"], "submitted": False}


def test_an_episode_cut_by_its_budget_did_not_submit() -> None:
    turns = _turns('{"tool": "read"}', "[read]\nx\n[0 tool calls left]", '{"tool": "submit"}')
    assert episode_use(turns, "budget")["submitted"] is False
    assert episode_use(turns, "stop")["submitted"] is True
