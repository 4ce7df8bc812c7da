"""The repository agent's reference episode (rlvr.repos.reference): the edits that undo a
broken file, worked by hand, each unique where the `edit` tool meets it; the calls around
them. The episode played in the sandbox is in tests/integration/test_repo_agent.py."""

from __future__ import annotations

from pathlib import Path

from rlvr.repos.mine import RepoTask
from rlvr.repos.reference import line_edits, locate, reference_calls, unseen_paths


def _replay(broken: str, pristine: str) -> list[tuple[int, int, str, str]]:
    """line_edits, checked as the edit tool applies them: each `old` once in the text."""
    edits = line_edits(broken, pristine)
    text = broken
    for _, _, old, new in edits:
        assert text.count(old) == 1, (old, text)
        text = text.replace(old, new)
    assert text == pristine
    return edits


def test_one_changed_line() -> None:
    assert _replay("a\nb = 1 + x\nc\n", "a\nb = 1 - x\nc\n") == [(2, 2, "b = 1 + x\n", "b = 1 - x\n")]


def test_a_line_found_twice_is_widened_until_unique() -> None:
    got = _replay("x = 1\ny = 2\nx = 1\nz\n", "x = 1\ny = 2\nx = 0\nz\n")
    assert got == [(3, 3, "y = 2\nx = 1\nz\n", "y = 2\nx = 0\nz\n")]


def test_insertions_take_a_line_of_context_and_later_lines_follow_the_earlier_edits() -> None:
    got = _replay("a\nc\nd\nf\n", "a\nb\nc\nd\ne\nf\n")
    assert got == [(2, 2, "a\nc\n", "a\nb\nc\n"), (5, 5, "d\nf\n", "d\ne\nf\n")]


def test_deletions_and_many_regions() -> None:
    _replay("a\nb\nb\nc\n", "a\nb\nc\n")
    pristine = "".join(f"line {i}\n" if i % 5 else "pass\n" for i in range(40))
    broken = pristine.replace("line 12\n", "line 12 broken\n").replace("line 31\n", "").replace("line 7\n", "pass\n")
    assert len(_replay(broken, pristine)) == 3


def _task(**kw: object) -> RepoTask:
    base: dict[str, object] = {
        "id": "t", "repo": "r", "source": "s", "digest": "d", "file": "pkg/m.py", "mutations": [],
        "fail_to_pass": ["tests/test_m.py::test_f"], "covering": [], "pass_to_pass": 0, "operators": [], "order": 1,
    }  # fmt: skip
    return RepoTask.from_dict({**base, **kw})


_TRACE = "tests/test_m.py:3: in test_f\n    f()\npkg/m.py:10: in f\n    raise ValueError\nE   ValueError: bad"


def test_the_file_is_found_from_the_prompts_traceback_at_tier_0_and_a_test_run_above(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    pristine = "".join(f"v{i} = {i}\n" for i in range(1, 21))
    (tmp_path / "pkg/m.py").write_text(pristine)
    broken = {"pkg/m.py": pristine.replace("v10 = 10\n", "v10 = 11\n")}
    task = _task(messages={"tests/test_m.py::test_f": _TRACE})
    edit = {"tool": "edit", "path": "pkg/m.py", "old": "v10 = 11\n", "new": "v10 = 10\n"}
    around = {"tool": "read", "path": "pkg/m.py", "start": 1, "end": 20}  # line 10 +-12, within the file's 20
    end = [{"tool": "run_tests"}, {"tool": "submit"}]
    assert reference_calls(task, tmp_path, broken, tier=0) == [around, edit, *end]  # the region was in that read
    assert reference_calls(task, tmp_path, broken, tier=1) == [{"tool": "run_tests"}, around, edit, *end]
    # the frame is in a held-out test's failure only: never shown, so not used; no function known: list
    held = _task(
        fail_to_pass=["tests/test_m.py::test_f", "tests/test_m.py::test_g"],
        messages={"tests/test_m.py::test_g": _TRACE},
    )
    how, calls = locate(held, 0, ["tests/test_m.py::test_g"], broken)
    assert how == "list" and calls == [{"tool": "run_tests"}, {"tool": "list", "depth": 2}, around]
    assert reference_calls(held, tmp_path, broken, 0, ["tests/test_m.py::test_g"]) == [*calls, edit, *end]


def test_an_assertion_only_failure_searches_for_the_broken_functions_definition(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    pristine = (
        "".join(f"v{i} = {i}\n" for i in range(1, 5))
        + "def f():\n"
        + "".join(f"    v{i} = {i}\n" for i in range(6, 41))
    )
    (tmp_path / "pkg/m.py").write_text(pristine)
    broken = {"pkg/m.py": pristine.replace("v30 = 30\n", "v30 = 31\n")}
    task = _task(mutations=[{"function": "m.f", "line": 30}], messages={"tests/test_m.py::test_f": "E   assert 1 == 2"})
    assert reference_calls(task, tmp_path, broken, tier=0) == [
        {"tool": "run_tests"},
        {"tool": "search", "pattern": "def f\\b", "path": "."},
        {"tool": "read", "path": "pkg/m.py", "start": 5, "end": 29},  # from the definition down
        {"tool": "read", "path": "pkg/m.py", "start": 24, "end": 36},  # the region lies below that read
        {"tool": "edit", "path": "pkg/m.py", "old": "    v30 = 31\n", "new": "    v30 = 30\n"},
        {"tool": "run_tests"},
        {"tool": "submit"},
    ]


def test_calls_read_around_each_edit_then_test_and_submit(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    pristine = "".join(f"v{i} = {i}\n" for i in range(1, 41))
    (tmp_path / "pkg/m.py").write_text(pristine)
    broken = pristine.replace("v30 = 30\n", "v30 = 31\n")
    calls = reference_calls(_task(), tmp_path, {"pkg/m.py": broken})
    assert calls == [
        {"tool": "run_tests"},
        {"tool": "list", "depth": 2},
        {"tool": "read", "path": "pkg/m.py", "start": 1, "end": 25},
        {"tool": "read", "path": "pkg/m.py", "start": 24, "end": 36},
        {"tool": "edit", "path": "pkg/m.py", "old": "v30 = 31\n", "new": "v30 = 30\n"},
        {"tool": "run_tests"},
        {"tool": "submit"},
    ]
    # a fix that creates a file, or one the broken tree lacks: no episode of edits says it
    assert reference_calls(_task(broken={"pkg/new.py": "x = 1\n"}), tmp_path, {"pkg/new.py": "x = 1\n"}) is None
    assert reference_calls(_task(), tmp_path, {}) is None
    assert reference_calls(_task(), tmp_path, {"pkg/m.py": pristine}) is None  # nothing to fix


def test_unseen_paths_are_those_no_earlier_message_showed() -> None:
    def said(role: str, content: str) -> dict[str, str]:
        return {"role": role, "content": content}

    messages = [
        said("system", "tools"),
        said("user", "pkg/m.py:3: in f"),
        said("assistant", '{"tool": "read", "path": "pkg/m.py"}'),
        said("user", "[read] ..."),
        said(
            "assistant",
            'look: {"tool": "edit", "path": "pkg/other.py", "old": "a", "new": "b"} {"tool": "read", "path": "x.py"}',
        ),
        said("user", "Error: no file pkg/other.py"),  # the guess echoed back
        said("assistant", '{"tool": "read", "path": "pkg/other.py"}'),
        said("user", "pkg/late.py"),
        said("assistant", '{"tool": "read", "path": "pkg/late.py"}'),
    ]
    assert unseen_paths(messages) == ["pkg/other.py"]  # once; only a reply's first call runs
