"""The repository agent's tools, over an episode's own tree.

An episode's tree is the pristine tree with the task's broken file and the agent's edits
written over it (`Workspace`: an overlay; the pristine tree is never written). The tools:

    list       the files under a directory, to a depth
    read       a file's lines in a bounded window (at most `READ_WINDOW` lines a call)
    search     a regular expression over the files (matching a glob) under a path
    edit       replace one exact snippet of a file; refused when the snippet is missing or
               ambiguous, when the file is protected (a test, the test configuration, a
               file the suite collects tests from), or when a Python file stops parsing
    run_tests  a selection of tests, or the task's covering tests; the task's held-out
               tests are always deselected, so their names and output never reach the agent
    submit     the end of the episode: the whole suite judges the tree (rlvr.repos.reward)

`list`, `read`, `search` and `run_tests` run in the sandbox on a copy of the episode's
tree (`list`, `read` and `search` as a small script under the repository environment's
interpreter, so a pathological pattern costs the sandbox's time limit, not the trainer's
process). `edit` runs here: it is text replacement on the overlay and a parse, and the
only file it reads from disk is the pristine tree's, through a path that must stay inside
it. Every argument is checked first; a bad one is a `ToolError` whose message names it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlvr.repos.coverage import is_protected
from rlvr.repos.store import Repo
from rlvr.repos.suite import SUITE_LIMITS, Baseline, SuiteRun, run_suite
from rlvr.sandbox import Limits, SandboxPool
from rlvr.sandbox.command import Job, JobResult, run_job
from rlvr.tasks.pyparse import parse

READ_WINDOW = 120  # most lines one read returns
LIST_ENTRIES = 400  # most paths one list returns
SEARCH_MATCHES = 60  # most matching lines one search returns
MAX_FILE_BYTES = 2 * 2**20  # a file edit may work on
PROBE_LIMITS = replace(SUITE_LIMITS, timeout_s=15.0, memory_mb=512, output_bytes=256 * 1024)


class ToolError(ValueError):
    """A tool call that cannot be carried out; the message says why, for the agent."""


def plain_path(what: str, rel: Any, *, allow_root: bool = False) -> str:
    """A relative path inside the tree, or ToolError naming the argument."""
    if not isinstance(rel, str):
        raise ToolError(f"'{what}' must be a string path relative to the repository root")
    rel = rel.strip().removeprefix("./").rstrip("/")
    if rel in ("", "."):
        if allow_root:
            return "."
        raise ToolError(f"'{what}' must name a file, relative to the repository root")
    parts = rel.split("/")
    if rel.startswith("/") or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise ToolError(f"'{what}' {rel!r} is not a plain path relative to the repository root (no '/', '.', '..')")
    return rel


@dataclass
class Workspace:
    """An episode's tree: the pristine tree, with `files` written over it and `deleted`
    removed. Starts as the task's unfixed tree."""

    repo: Repo
    files: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    edited: list[str] = field(default_factory=list)  # paths the agent changed, in order

    def text(self, rel: str) -> str:
        """The file as the episode sees it now."""
        if rel in self.files:
            return self.files[rel]
        if rel in self.deleted:
            raise ToolError(f"{rel} was deleted in this episode")
        root = Path(self.repo.tree).resolve()
        path = (root / rel).resolve()
        if root not in path.parents or not path.is_file():
            raise ToolError(f"no file {rel} in the repository")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ToolError(f"{rel} is over {MAX_FILE_BYTES // 2**20} MiB: not editable here")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{rel} is not UTF-8 text") from None

    def edits(self) -> dict[str, str]:
        """What the episode changed beyond the pristine tree (the broken file included)."""
        return dict(self.files)


# Runs inside the jail, under the repository environment's interpreter, at the copy's
# root. Reads one JSON request from argv[1] and prints plain text; "!" starts an error.
PROBE = r"""
import fnmatch, json, os, re, sys
req = json.loads(sys.argv[1])
SKIP = {".git", "__pycache__", ".tox", ".nox", ".venv", "node_modules", ".mypy_cache", ".pytest_cache", ".eggs"}
def files(root):
    if os.path.isfile(root):
        yield root
        return
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP and not x.endswith(".egg-info"))
        for n in sorted(names):
            if not n.endswith((".pyc", ".pyo", ".so")):
                yield os.path.normpath(os.path.join(d, n))
op, path = req["op"], req["path"]
if not os.path.exists(path):
    print(f"! no file or directory {path}")
elif op == "list":
    if not os.path.isdir(path):
        print(f"! {path} is a file, not a directory")
    base = path.rstrip("/").count("/") + (path != ".")
    seen = set()
    for f in files(path):
        parts = f.split("/")
        cut = "/".join(parts[: base + req["depth"]])
        shown = cut + ("/" if cut != f else "")
        if shown not in seen:
            seen.add(shown)
            print(shown)
elif op == "read":
    if os.path.isdir(path):
        print(f"! {path} is a directory (list it)")
    else:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
        start, end = req["start"], min(req["end"], len(lines))
        print(f"{path}: lines {start}-{end} of {len(lines)}")
        for k in range(start, end + 1):
            print(f"{k:5d}| {lines[k - 1]}")
elif op == "search":
    try:
        rx = re.compile(req["pattern"])
    except re.error as e:
        print(f"! not a valid regular expression: {e}")
        sys.exit(0)
    for f in files(path):
        if not fnmatch.fnmatch(os.path.basename(f), req["glob"]):
            continue
        try:
            with open(f, encoding="utf-8") as fh:
                for k, line in enumerate(fh, 1):
                    if rx.search(line):
                        print(f"{f}:{k}: {line.rstrip()[:200]}")
        except (UnicodeDecodeError, OSError):
            continue
"""


def _probe(ws: Workspace, pool: SandboxPool, request: dict[str, Any]) -> JobResult:
    job = Job(
        argv=[os.path.join(ws.repo.env_path, "bin", "python"), "-I", "-c", PROBE, json.dumps(request)],
        tree=ws.repo.tree,
        files=ws.edits(),
        delete=sorted(ws.deleted),
    )
    return run_job(job, PROBE_LIMITS, pool)


def _probe_text(ws: Workspace, pool: SandboxPool, request: dict[str, Any]) -> tuple[str, float]:
    got = _probe(ws, pool, request)
    if got.status == "timeout":
        raise ToolError(f"{request['op']} took longer than {PROBE_LIMITS.timeout_s:.0f} s and was stopped")
    if got.status != "ok" or got.exit_code != 0:
        raise RuntimeError(f"the {request['op']} tool failed to run: {got.status} {got.error} {got.stderr[-300:]}")
    out = got.stdout
    if out.startswith("! "):
        raise ToolError(out[2:].strip())
    return out, got.wall_time_s


def _int(args: dict[str, Any], key: str, default: int, low: int = 1) -> int:
    v = args.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ToolError(f"'{key}' must be an integer of at least {low}")
    return v


def list_files(ws: Workspace, pool: SandboxPool, args: dict[str, Any]) -> tuple[str, float]:
    path = plain_path("path", args.get("path", "."), allow_root=True)
    depth = _int(args, "depth", 2)
    out, took = _probe_text(ws, pool, {"op": "list", "path": path, "depth": min(depth, 8)})
    lines = out.splitlines()
    if not lines:
        return f"{path}: no files", took
    more = f"\n[{len(lines) - LIST_ENTRIES} more entries: list a subdirectory]" if len(lines) > LIST_ENTRIES else ""
    return "\n".join(lines[:LIST_ENTRIES]) + more, took


def read_file(ws: Workspace, pool: SandboxPool, args: dict[str, Any]) -> tuple[str, float]:
    path = plain_path("path", args.get("path"))
    start = _int(args, "start", 1)
    end = _int(args, "end", start + READ_WINDOW - 1)
    if end < start:
        raise ToolError(f"'end' ({end}) is before 'start' ({start})")
    shown_end = min(end, start + READ_WINDOW - 1)
    out, took = _probe_text(ws, pool, {"op": "read", "path": path, "start": start, "end": shown_end})
    if shown_end < end:
        out += f"[at most {READ_WINDOW} lines a read: continue with start={shown_end + 1}]\n"
    return out.rstrip("\n"), took


def search(ws: Workspace, pool: SandboxPool, args: dict[str, Any]) -> tuple[str, float]:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("'pattern' must be a non-empty regular expression")
    path = plain_path("path", args.get("path", "."), allow_root=True)
    glob = args.get("glob", "*.py")
    if not isinstance(glob, str) or not glob or "/" in glob:
        raise ToolError("'glob' must be a file-name pattern such as *.py (no '/')")
    out, took = _probe_text(ws, pool, {"op": "search", "pattern": pattern, "path": path, "glob": glob})
    lines = out.splitlines()
    if not lines:
        return f"no line matches {pattern!r} in {glob} files under {path}", took
    more = f"\n[{len(lines) - SEARCH_MATCHES} more matches: narrow the pattern or the path]"
    return "\n".join(lines[:SEARCH_MATCHES]) + (more if len(lines) > SEARCH_MATCHES else ""), took


def edit(ws: Workspace, base: Baseline, args: dict[str, Any]) -> str:
    """Replace the one occurrence of `old` in `path` by `new`."""
    path = plain_path("path", args.get("path"))
    old, new = args.get("old"), args.get("new")
    if not isinstance(old, str) or not old:
        raise ToolError("'old' must be the exact, non-empty text to replace (copy it from a read)")
    if not isinstance(new, str):
        raise ToolError("'new' must be the replacement text (a string; empty to delete the snippet)")
    if is_protected(path, base.test_files()):
        raise ToolError(f"{path} is a test or configures the tests: it may not be changed")
    text = ws.text(path)
    count = text.count(old)
    if count == 0:
        raise ToolError(f"'old' does not occur in {path}; read the lines again and copy them exactly")
    if count > 1:
        raise ToolError(f"'old' occurs {count} times in {path}; include more lines so that it is unique")
    changed = text.replace(old, new, 1)
    if path.endswith(".py"):
        try:
            parse(changed)
        except SyntaxError as e:
            raise ToolError(f"refused: {path} would not parse ({e.msg}, line {e.lineno}); nothing changed") from None
        except (ValueError, RecursionError, MemoryError) as e:
            raise ToolError(f"refused: {path} would not parse ({type(e).__name__}); nothing changed") from None
    ws.files[path] = changed
    ws.edited.append(path)
    line = text[: text.index(old)].count("\n") + 1
    return f"{path}: replaced {old.count(chr(10)) + 1} line(s) at line {line} with {new.count(chr(10)) + 1} line(s)"


def check_selection(tests: Any) -> list[str]:
    """Test ids to run: node ids or files, never an option."""
    if tests is None:
        return []
    if isinstance(tests, str):
        tests = [tests]
    if not isinstance(tests, list) or not all(isinstance(t, str) and t.strip() for t in tests) or len(tests) > 50:
        raise ToolError("'tests' must be a list of at most 50 test ids (path::name) or test files")
    out = []
    for t in tests:
        t = t.strip()
        plain_path("tests", t.split("::")[0])
        if t.startswith("-") or "\0" in t:
            raise ToolError(f"'tests': {t!r} is not a test id")
        out.append(t)
    return out


def run_tests(
    ws: Workspace,
    pool: SandboxPool,
    base: Baseline,
    selection: Sequence[str],
    held_out: Sequence[str],
    limits: Limits = SUITE_LIMITS,
) -> tuple[str, SuiteRun]:
    """Run `selection` with the held-out tests deselected; the report names only what ran."""
    hidden = set(held_out)
    if ws.repo.override.get("command"):  # its own pipeline runs whole; what it says of held-out tests is dropped
        run = run_suite(ws.repo, pool, files=ws.edits(), delete=sorted(ws.deleted), limits=limits)
        run.output = ""
    else:
        run = run_suite(
            ws.repo,
            pool,
            tests=selection,
            files=ws.edits(),
            delete=sorted(ws.deleted),
            deselect=held_out,
            limits=limits,
        )
    if run.status == "timeout":
        return f"the tests did not finish within {limits.timeout_s:.0f} s (an endless loop?)", run
    verdicts = {t: v for t, v in run.verdicts.items() if t not in hidden}
    if run.status != "ok":
        tail = "\n".join(line for line in run.output.splitlines()[-15:] if not any(h in line for h in hidden))
        return stable_text(f"the tests could not run ({run.error or run.status}):\n{tail}"), run
    if not verdicts:
        return "no test ran: check the test ids (path::name, as pytest names them)", run
    counts: dict[str, int] = {}
    for v in verdicts.values():
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    lines = [", ".join(f"{n} {k}" for k, n in sorted(counts.items()))]
    for t, v in verdicts.items():
        if v.outcome in ("failed", "error"):
            lines.append(f"{v.outcome.upper()} {t}\n{failure_excerpt(stable_text(v.message))}")
    return "\n".join(lines), run


_ADDRESS = re.compile(
    r"(?P<hex>(?:\bat|\bthread|\bid=) ?0x)[0-9a-fA-F]{6,16}\b"  # <f at 0x7efc16f896c0>, Current thread 0x00007f...
    r"|(?P<dec>\bid=')\d{6,}(?=')"  # <MagicMock id='140234567890123'>
    r"|(?P<tail>\.\.\.)(?=[0-9a-f]{0,15}\d)[0-9a-f]{6,16}(?=>)"  # pytest's shortened repr: ...07d2468ba0>
    r"|(?P<took>\bin )\d+\.\d+s\b"  # a run's duration: 1 failed in 0.12s
)


def stable_text(text: str) -> str:
    """A test run's text without what changes from one run of the same code to the next:
    the memory addresses and ids in object reprs, the address tail pytest leaves in a
    shortened repr, and the run's duration. The agent reads it as context, so two
    evaluations of the same weights would otherwise diverge (greedy decoding follows the
    text) and an episode could not be replayed."""
    return _ADDRESS.sub(lambda m: m["tail"] or (m["hex"] or m["dec"] or m["took"] or "") + "...", text)


_FRAME_LINE = re.compile(r"^[\w./-]+\.py:\d+:")


def failure_excerpt(message: str, lines: int = 12) -> str:
    """The informative part of a failure: the frames pytest's short traceback names
    (`path:line: in function`) and its `E` lines; the end of the text when it has none."""
    text = message.strip().splitlines()
    keep = [ln for ln in text if ln.startswith("E ") or _FRAME_LINE.match(ln)] or text[-lines:]
    if len(keep) > lines:  # the innermost frames and the error matter most
        keep = keep[-lines:]
    return "\n".join(ln[:240] for ln in keep)
