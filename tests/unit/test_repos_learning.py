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
    texts = ["sys", "the task: m.py fails", *pairs]
    return [{"role": r, "content": t} for r, t in zip(roles, texts, strict=False)]


def test_an_episode_that_reads_edits_tests_and_submits() -> None:
    turns = _turns('{"tool": "read", "path": "m.py"}', "[read]\n1 x\n[29 tool calls left]",
                   '{"tool": "edit", "path": "m.py", "old": "a", "new": "b"}', "[edit]\nedited\n[28 tool calls left]",
                   '{"tool": "run_tests"}', "[run_tests]\n1 passed\n[27 tool calls left]",
                   '{"tool": "submit"}')  # fmt: skip
    got = episode_use(turns, "eos")
    assert got == {"replies": 4, "valid": 4, "tools": ["read", "edit", "run_tests"], "errors": {}, "submitted": True,
                   "path_calls": 2, "unseen": 0}  # fmt: skip


def test_replies_that_are_no_tool_call_or_an_unknown_tool_are_not_valid() -> None:
    turns = _turns("let me think", '[no tool]\nNo tool call found. Reply with one JSON object\n[29 tool calls left]',
                   '{"tool": "fix"}', "[fix]\nUnknown tool 'fix'; the tools are list, read\n[28 tool calls left]",
                   '{"tool": "list"}', "[list]\nsetup.py\n[27 tool calls left]")  # fmt: skip
    got = episode_use(turns, "turns")
    assert got == {"replies": 3, "valid": 1, "tools": ["list"], "errors": {}, "submitted": False, "path_calls": 0,
                   "unseen": 0}  # fmt: skip


def test_a_call_answered_with_an_error_is_valid_but_did_nothing() -> None:
    """A read or edit of a file that does not exist is a well-formed call: counted valid,
    never as a tool that ran (the bench's edited share counts edits that applied)."""
    turns = _turns('{"tool": "read", "path": "src/pkg/pkg.py"}',
                   "[read]\nError: no file or directory src/pkg/pkg.py\n[29 tool calls left]",
                   '{"tool": "edit", "path": "src/pkg/pkg.py", "old": "a", "new": "b"}',
                   "[edit]\n[one tool call a reply: ran the first of 2]\nError: no file src/pkg/pkg.py in the "
                   "repository\n[28 tool calls left]")  # fmt: skip
    got = episode_use(turns, "turns")  # a guessed path named twice: its error echo shows nothing
    assert got == {"replies": 2, "valid": 2, "tools": [], "errors": {"read": 1, "edit": 1}, "submitted": False,
                   "path_calls": 2, "unseen": 2}  # fmt: skip


def test_a_last_reply_the_episode_s_end_left_unanswered_is_judged_by_its_call() -> None:
    """An episode ended by its turns or context stores no answer to its last reply: a
    well-formed call there is still valid, a submit there is cut (no verdict), and prose
    is not valid."""
    opened = _turns('{"tool": "list"}', "[list]\nsetup.py\n[29 tool calls left]")
    for last, valid in (('{"tool": "run_tests"}', 2), ("I will now fix it", 1)):
        got = episode_use([*opened, {"role": "assistant", "content": last}], "turns")
        assert got["replies"] == 2 and got["valid"] == valid and got["tools"] == ["list"]
    cut = episode_use([*opened, {"role": "assistant", "content": '{"tool": "submit"}'}], "context")
    assert cut["valid"] == 2 and cut["submitted"] is False


def test_the_grounded_run_reads_back_with_its_reloaded_row(capsys) -> None:  # type: ignore[no-untyped-def]
    """bench/results/repos_learning_grounded.json (docs/repos.md's second table): the
    base, SFT and reloaded rows, the reloaded evaluation agreeing with the in-process one
    on every share, and the figures the docs quote."""
    import json
    from pathlib import Path

    from repos_learning import report

    saved = json.loads((Path(__file__).parents[2] / "bench/results/repos_learning_grounded.json").read_text())
    arms = saved["arms"]
    assert set(arms) == {"base", "sft", "sft (reloaded)"} and saved["rl_steps"] == 0
    shares = ("valid_call_share", "read_share", "edited_share", "tested_share", "submitted_share")
    assert all(arms["sft"][k] == arms["sft (reloaded)"][k] for k in shares)
    assert arms["sft"]["read_share"] == 6 / 16 and arms["sft"]["edited_share"] == 1 / 16
    assert (arms["sft"]["unseen_paths"], arms["sft"]["path_calls"]) == (12, 62)
    report(saved)
    assert "sft (reloaded)" in capsys.readouterr().out
