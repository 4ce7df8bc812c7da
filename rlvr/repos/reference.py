"""A repository task's reference fix as the episode an agent plays through the tools:
first it finds the broken file from what the episode has shown, then, for each changed
region of each broken file, a `read` of the lines around it and an `edit` that restores
the pristine text, then `run_tests` and `submit`. The supervised stage trains on it
(rlvr.sft.data: the environment's turns between the calls are context, not trained), so a
policy sees the tool format and a whole repair before RL.

Every path the episode reads is meant to have been shown to it first, so a policy
trained on it learns to look before it names a file rather than to guess one (a policy
trained on episodes that opened the right file at once read invented paths). What is
computed here cannot see the tools' caps (a search's match limit, an answer cut by the
observation budget), so the supervised stage plays each episode and leaves out one that
still names a file before an answer showed it (`unseen_paths`, the environment's
`reference_problem`). Where it looks, in order (`locate`):

- **prompt**: a tier-0 prompt shows the visible failing tests' tracebacks; the deepest
  frame in a library file the fix changes is read first, around its line.
- **tests**: otherwise `run_tests` first; its failures (the same excerpts, longer) name
  the frame the same way. The task's mined failure messages say statically what that run
  shows.
- **search**: no such frame (a wrong value caught only by an assertion): `run_tests`, then
  a `search` for the definition of the function the bug is in, read from its line.
- **list**: no function known (a change mined from history): `run_tests`, then `list`
  the files down to the deepest changed file's depth.

A fix that changes a file the located read did not name gets a `list` first (down to the
deepest changed file), so that every file it reads has been shown.

Edits are computed from the broken and the pristine files (a line diff), not from how the
task was made, so mutated, mined-from-history and user tasks all get one; each edit's
`old` is widened by whole lines until it occurs exactly once in the file as it stands at
that point of the episode, as the `edit` tool requires. A region the first read already
showed is not read again. Nothing runs here: the files are read from the repository's
cached tree.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.envs.toolcalls import tool_calls
from rlvr.repos.coverage import is_library_file
from rlvr.repos.mine import RepoTask
from rlvr.repos.store import show
from rlvr.repos.tools import failure_excerpt

CONTEXT = 6
"""Lines shown on each side of a changed region by the reference's `read`."""
AROUND = 12
"""Lines shown on each side of the frame (or definition) the episode located the bug by."""
PROMPT_LINES, RUN_LINES = 6, 12
"""The failure excerpt's length in a tier-0 prompt and in `run_tests`' answer (rlvr.repos.agent, tools)."""
FRAME = re.compile(r"^([\w./-]+\.py):(\d+):", re.MULTILINE)
"""A traceback frame or search hit: `path.py:LINE:` (path, line)."""


def line_edits(broken: str, pristine: str) -> list[tuple[int, int, str, str]]:
    """The edits that turn `broken` into `pristine`, in the order they are applied:
    (first line, last line) of `old`, the lines a `read` should show (1-based, in the file
    as it stands before that edit), `old` (unique in that text) and `new`."""
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
        out.append((lo + 1, max(lo + 1, hi), old, new))
        current[a:b] = repl
        shift += len(repl) - (i2 - i1)
    return out


def deepest_frame(messages: Sequence[str], files: Sequence[str], lines: int) -> tuple[str, int] | None:
    """(path, line) of the innermost traceback frame in one of `files` that the failure
    excerpts of `messages` show (`lines` long, as the agent sees them); None without one."""
    for message in messages:
        frames = [(f, int(n)) for f, n in FRAME.findall(failure_excerpt(message, lines)) if is_library_file(f)]
        if frames and frames[-1][0] in files:
            return frames[-1]
    return None


def locate(
    task: RepoTask, tier: int, held_out: Sequence[str], broken: dict[str, str]
) -> tuple[str, list[dict[str, Any]]]:
    """How the reference finds the bug from what it has been shown: (how, the calls),
    the calls ending with a read of a file some earlier answer named (module docstring)."""
    files = task.changed_files()
    visible = [task.messages[t] for t in task.fail_to_pass if t not in set(held_out) and task.messages.get(t)]
    if tier == 0 and (hit := deepest_frame(visible, files, PROMPT_LINES)):
        return "prompt", [_read(hit[0], hit[1] - AROUND, hit[1] + AROUND, broken)]
    first: list[dict[str, Any]] = [{"tool": "run_tests"}]
    if hit := deepest_frame(visible, files, RUN_LINES):
        return "tests", [*first, _read(hit[0], hit[1] - AROUND, hit[1] + AROUND, broken)]
    function = next((str(m.get("function") or "") for m in task.mutations if m.get("function")), "")
    name = function.split(".")[-1]
    if name and task.file in broken:
        text = broken[task.file]
        defs = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(_def(name), text, re.MULTILINE)]
        bug = min((int(m.get("line") or 0) for m in task.mutations), default=0)
        line = max((d for d in defs if d <= bug), default=defs[0] if defs else 0)  # the def the bug is in
        if line:
            found = {"tool": "search", "pattern": rf"def {name}\b", "path": "."}
            return "search", [*first, found, _read(task.file, line, line + 2 * AROUND, broken)]
    deepest = max(f.count("/") for f in files) + 1
    return "list", [*first, {"tool": "list", "depth": deepest}, _read(files[0], 1, 2 * AROUND + 1, broken)]


def _def(name: str) -> str:
    return rf"^[ \t]*(?:async[ \t]+)?def {re.escape(name)}\b"


def _read(path: str, start: int, end: int, broken: dict[str, str]) -> dict[str, Any]:
    last = max(1, broken.get(path, "").count("\n"))
    return {"tool": "read", "path": path, "start": max(1, min(start, last)), "end": max(1, min(end, last))}


def reference_calls(
    task: RepoTask, tree: Path, unfixed: dict[str, str], tier: int = 1, held_out: Sequence[str] = ()
) -> list[dict[str, Any]] | None:
    """The reference episode's tool calls for a task shown at `tier` with `held_out`
    tests never named, or None when an edit cannot express the fix (a file the fix
    creates or deletes, or an empty broken file)."""
    regions: list[tuple[str, int, int, str, str]] = []
    for path in task.changed_files():
        pristine_path = tree / path
        if path not in unfixed or not pristine_path.is_file() or not unfixed[path]:
            return None
        for first, last, old, new in line_edits(unfixed[path], pristine_path.read_text(encoding="utf-8")):
            if not old:
                return None
            regions.append((path, first, last, old, new))
    if not regions:
        return None
    _, calls = locate(task, tier, held_out, unfixed)
    seen = calls[-1]  # the located read: its line numbers hold until its file is first edited
    if any(path != seen["path"] for path, *_ in regions) and not any(c["tool"] == "list" for c in calls):
        # the fix changes files no answer has named yet: a listing down to the deepest shows them
        calls.append({"tool": "list", "depth": max(path.count("/") for path, *_ in regions) + 1})
    for path, first, last, old, new in regions:
        if not (path == seen["path"] and seen["start"] <= first and last <= seen["end"]):
            calls.append({"tool": "read", "path": path, "start": max(1, first - CONTEXT), "end": last + CONTEXT})
        calls.append({"tool": "edit", "path": path, "old": old, "new": new})
        if path == seen["path"]:
            seen = {"path": ""}
    return [*calls, {"tool": "run_tests"}, {"tool": "submit"}]


def reference_episode(spec: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The reference calls of a `repo_agent` task (its `tests`), from the repository's
    cached tree (RepoError when it is not built here)."""
    repo = show(str(spec["repo"]), Path(spec["cache"]) if spec.get("cache") else None)
    task = RepoTask.from_dict(spec["task"])
    tree = Path(repo.tree)
    return reference_calls(task, tree, task.unfixed(tree), int(spec.get("tier", 0)), list(spec.get("held_out", [])))


def unseen_paths(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The path of each read or edit call (as the environment reads a reply: its first
    call) that no earlier message had shown: a policy could only have guessed it. The
    answer to a call naming a path does not show that path (an error echoing a guess back
    is not a look), and a path counts as shown only as a whole (`m.py` is not shown by
    `pkg/m.py`; `./m.py` is `m.py`)."""
    shown: list[tuple[str, str]] = []  # (text, the path the call it answers named)
    asked = ""
    out: list[str] = []
    for m in messages:
        if m["role"] != "assistant":
            shown.append((str(m["content"]), asked))
            continue
        calls, _ = tool_calls(str(m["content"]))
        call = calls[0] if calls else {}
        path = call.get("path")
        asked = _plain(path) if isinstance(path, str) and call.get("tool") in ("read", "edit") else ""
        if asked and not any(echo != asked and _names(text, asked) for text, echo in shown):
            out.append(asked)
    return out


def _plain(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def _names(text: str, path: str) -> bool:
    return re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w/-])", text) is not None
