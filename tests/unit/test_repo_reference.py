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
    assert got == [(2, 4, "y = 2\nx = 1\nz\n", "y = 2\nx = 0\nz\n")]  # the lines of `old`, widened


def test_insertions_take_a_line_of_context_and_later_lines_follow_the_earlier_edits() -> None:
    got = _replay("a\nc\nd\nf\n", "a\nb\nc\nd\ne\nf\n")
    assert got == [(1, 2, "a\nc\n", "a\nb\nc\n"), (4, 5, "d\nf\n", "d\ne\nf\n")]


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


def test_a_fix_in_two_files_lists_them_before_reading_the_one_no_answer_named(tmp_path: Path) -> None:
    """A test run names pkg/a.py; the fix also changes pkg/sub/b.py, which no answer has
    named, so a listing down to its depth comes first. A second region of a file is read
    again after the file's first edit (the located read's line numbers no longer hold)."""
    (tmp_path / "pkg/sub").mkdir(parents=True)
    a = "".join(f"v{i} = {i}\n" for i in range(1, 21))
    b = "".join(f"w{i} = {i}\n" for i in range(1, 6))
    (tmp_path / "pkg/a.py").write_text(a)
    (tmp_path / "pkg/sub/b.py").write_text(b)
    broken = {"pkg/a.py": a.replace("v10 = 10\n", "v10 = 11\n").replace("v14 = 14\n", "v14 = 15\n"),
              "pkg/sub/b.py": b.replace("w3 = 3\n", "w3 = 4\n")}  # fmt: skip
    task = _task(broken=broken, messages={"tests/test_m.py::test_f": "pkg/a.py:10: in f\nE   ValueError"})
    assert reference_calls(task, tmp_path, broken, tier=1) == [
        {"tool": "run_tests"},
        {"tool": "read", "path": "pkg/a.py", "start": 1, "end": 20},
        {"tool": "list", "depth": 3},
        {"tool": "edit", "path": "pkg/a.py", "old": "v10 = 11\n", "new": "v10 = 10\n"},
        {"tool": "read", "path": "pkg/a.py", "start": 8, "end": 20},
        {"tool": "edit", "path": "pkg/a.py", "old": "v14 = 15\n", "new": "v14 = 14\n"},
        {"tool": "read", "path": "pkg/sub/b.py", "start": 1, "end": 9},
        {"tool": "edit", "path": "pkg/sub/b.py", "old": "w3 = 4\n", "new": "w3 = 3\n"},
        {"tool": "run_tests"},
        {"tool": "submit"},
    ]


def test_the_search_reads_the_definition_the_bug_is_in(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    pristine = "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 2\n"
    (tmp_path / "pkg/m.py").write_text(pristine)
    broken = {"pkg/m.py": pristine.replace("return 2", "return 3")}
    task = _task(mutations=[{"function": "B.f", "line": 7}])
    how, calls = locate(task, 1, [], broken)
    assert how == "search" and calls[-1] == {"tool": "read", "path": "pkg/m.py", "start": 6, "end": 7}


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
        said("assistant", '{"tool": "read", "path": "./pkg/m.py"}'),  # the same path
        said("user", "[read] ..."),
        said(
            "assistant",
            'look: {"tool": "edit", "path": "pkg/other.py", "old": "a", "new": "b"} {"tool": "read", "path": "x.py"}',
        ),
        said("user", "Error: no file pkg/other.py"),  # the guess echoed back shows nothing
        said("assistant", '{"tool": "read", "path": "pkg/other.py"}'),
        said("user", "pkg/late.py"),
        said("assistant", '{"tool": "read", "path": "pkg/late.py"}'),
        said("user", "[read] ..."),
        said("assistant", '{"tool": "edit", "path": "pkg/late.py", "old": "a", "new": "b"}'),  # shown before: still
        said("user", "[edit] ..."),
        said("assistant", '{"tool": "read", "path": "m.py"}'),  # only a part of pkg/m.py: not shown
        said("assistant", '{"name": "read", "arguments": {"path": "y.py"}}'),  # the function-call shape too
    ]
    assert unseen_paths(messages) == ["pkg/other.py", "pkg/other.py", "m.py", "y.py"]  # only a reply's first call runs
