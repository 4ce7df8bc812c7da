"""A repository task's reference fix as the episode an agent plays through the tools:
for each changed region of each broken file, a `read` of the lines around it and an
`edit` that restores the pristine text, then `run_tests` and `submit`. The supervised
stage trains on it (rlvr.sft.data: the environment's turns between the calls are context,
not trained), so a policy sees the tool format and a whole repair before RL.

Edits are computed from the broken and the pristine files (a line diff), not from how the
task was made, so mutated, mined-from-history and user tasks all get one; each edit's
`old` is widened by whole lines until it occurs exactly once in the file as it stands at
that point of the episode, as the `edit` tool requires. Nothing runs here: the files are
read from the repository's cached tree.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rlvr.repos.mine import RepoTask
from rlvr.repos.store import show

CONTEXT = 6
"""Lines shown on each side of a changed region by the reference's `read`."""


def line_edits(broken: str, pristine: str) -> list[tuple[int, int, str, str]]:
    """The edits that turn `broken` into `pristine`, in the order they are applied:
    (first line, last line) of the region a `read` should show (1-based, in the file as
    it stands before that edit), `old` (unique in that text) and `new`."""
    src, dst = broken.splitlines(keepends=True), pristine.splitlines(keepends=True)
    current = list(src)
    out: list[tuple[int, int, str, str]] = []
    shift = 0  # lines the edits so far added (or removed) above the next region
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, src, dst, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        a, b, repl = i1 + shift, i2 + shift, dst[j1:j2]
        text = "".join(current)
        up = 0 if b > a else 1
        while True:
            lo, hi = max(0, a - up), min(len(current), b + up)
            old = "".join(current[lo:hi])
            if (old and text.count(old) == 1) or (lo == 0 and hi == len(current)):
                break
            up += 1
        new = "".join(current[lo:a] + repl + current[b:hi])
        out.append((a + 1, max(a + 1, b), old, new))
        current[a:b] = repl
        shift += len(repl) - (i2 - i1)
    return out


def reference_calls(task: RepoTask, tree: Path, unfixed: dict[str, str]) -> list[dict[str, Any]] | None:
    """The reference episode's tool calls, or None when an edit cannot express the fix
    (a file the fix creates or deletes, or an empty broken file)."""
    calls: list[dict[str, Any]] = []
    for path in task.changed_files():
        pristine_path = tree / path
        if path not in unfixed or not pristine_path.is_file() or not unfixed[path]:
            return None
        for first, last, old, new in line_edits(unfixed[path], pristine_path.read_text(encoding="utf-8")):
            if not old:
                return None
            calls.append({"tool": "read", "path": path, "start": max(1, first - CONTEXT), "end": last + CONTEXT})
            calls.append({"tool": "edit", "path": path, "old": old, "new": new})
    if not calls:
        return None
    return [*calls, {"tool": "run_tests"}, {"tool": "submit"}]


def reference_episode(spec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The reference calls of a `repo_agent` task (its `tests`), from the repository's
    cached tree (RepoError when it is not built here)."""
    repo = show(str(spec["repo"]), Path(spec["cache"]) if spec.get("cache") else None)
    task = RepoTask.from_dict(spec["task"])
    return reference_calls(task, Path(repo.tree), task.unfixed(Path(repo.tree)))
