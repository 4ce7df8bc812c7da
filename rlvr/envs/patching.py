"""Unified diffs written by a model, applied to a repository held as data (path -> text).

Pure text work, nothing runs: the patch is parsed, every path it touches is checked by
the caller, and each hunk is located by its content rather than trusted line numbers
(models miscount them): at the stated line if it matches there, else the match nearest
to it, else the same search ignoring trailing whitespace. A hunk that matches nowhere
fails the whole patch with the file and hunk named; nothing is half-applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_FENCE = re.compile(r"```[ \t]*(?:diff|patch|udiff)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


class PatchError(ValueError):
    """A patch that cannot be parsed or applied; the message names the file and hunk."""


@dataclass
class Hunk:
    old_start: int
    lines: list[tuple[str, str]] = field(default_factory=list)  # (' ' | '-' | '+', text)

    def old(self) -> list[str]:
        return [t for tag, t in self.lines if tag != "+"]

    def new(self) -> list[str]:
        return [t for tag, t in self.lines if tag != "-"]


@dataclass
class FilePatch:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return str(self.new_path or self.old_path)


def extract_patch(reply: str) -> str:
    """The reply's diff: a ```diff / ```patch block (or an untagged block that looks like a
    diff), else the text from the first `diff --git` or `--- ` line on."""
    for m in _FENCE.finditer(reply):
        if re.search(r"^(---|\+\+\+|@@) ", m.group(1), re.M):
            return str(m.group(1))
    m2 = re.search(r"^(diff --git |--- )", reply, re.M)
    return reply[m2.start() :] if m2 else ""


def _clean_path(raw: str) -> str | None:
    raw = raw.split("\t")[0].strip()
    if raw == "/dev/null":
        return None
    if raw[:2] in ("a/", "b/"):
        raw = raw[2:]
    parts = raw.split("/")
    if not raw or raw.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in raw:
        raise PatchError(f"path {raw!r} is not a plain relative path inside the repository")
    return raw


def parse_patch(text: str) -> list[FilePatch]:
    lines = text.split("\n")
    patches: list[FilePatch] = []
    cur: FilePatch | None = None
    hunk: Hunk | None = None
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            cur = FilePatch(_clean_path(ln[4:]), _clean_path(lines[i + 1][4:]))
            if cur.old_path is None and cur.new_path is None:
                raise PatchError("a file patch with /dev/null on both sides")
            patches.append(cur)
            hunk = None
            i += 2
            continue
        m = _HUNK.match(ln)
        if m:
            if cur is None:
                raise PatchError("a hunk (@@ ... @@) before any '--- a/FILE' / '+++ b/FILE' header")
            hunk = Hunk(int(m.group(1)))
            cur.hunks.append(hunk)
        elif hunk is not None and ln[:1] in (" ", "-", "+"):
            hunk.lines.append((ln[0], ln[1:]))
        elif hunk is not None and ln == "" and i + 1 < len(lines) and lines[i + 1][:1] in (" ", "-", "+"):
            hunk.lines.append((" ", ""))  # a blank context line whose leading space was lost
        elif ln.startswith("diff --git") or ln.startswith("index ") or ln.startswith("\\"):
            pass
        elif hunk is not None:
            hunk = None  # prose after a hunk ends it
        i += 1
    if not patches:
        raise PatchError("no file patch found: expected '--- a/FILE' and '+++ b/FILE' lines followed by @@ hunks")
    for p in patches:
        if p.old_path is not None and p.new_path is not None and not p.hunks:
            raise PatchError(f"{p.path}: a file patch without any @@ hunk")
    return patches


def _find(lines: list[str], block: list[str], near: int, loose: bool) -> int | None:
    if not block:
        return min(max(near, 0), len(lines))
    norm = (lambda s: s.rstrip()) if loose else (lambda s: s)
    want = [norm(x) for x in block]
    hits = [i for i in range(len(lines) - len(block) + 1) if [norm(x) for x in lines[i : i + len(block)]] == want]
    return min(hits, key=lambda i: abs(i - near)) if hits else None


def apply_patch(files: dict[str, str], patches: list[FilePatch]) -> dict[str, str]:
    """The repository after the patch (a new dict; `files` is not changed)."""
    out = dict(files)
    for p in patches:
        if p.old_path is None:  # created
            if p.new_path in out:
                raise PatchError(f"{p.new_path}: the patch creates a file that already exists")
            body = [t for h in p.hunks for t in h.new()]
            out[str(p.new_path)] = "\n".join(body) + "\n" if body else ""
            continue
        if p.old_path not in out:
            raise PatchError(f"{p.old_path}: no such file in the repository")
        if p.new_path is None:
            del out[p.old_path]
            continue
        text = out.pop(p.old_path)
        ends_nl = text.endswith("\n")
        lines = text.split("\n")
        if ends_nl:
            lines = lines[:-1]
        for k, h in enumerate(p.hunks, 1):
            old = h.old()
            at = _find(lines, old, h.old_start - 1, loose=False)
            if at is None:
                at = _find(lines, old, h.old_start - 1, loose=True)
            if at is None:
                first = next((t for t in old if t.strip()), "")
                raise PatchError(f"{p.old_path}: hunk {k} does not match the file (its first line: {first.strip()!r})")
            lines[at : at + len(old)] = h.new()
        out[p.path] = "\n".join(lines) + ("\n" if ends_nl or lines else "")
    return out


def make_patch(before: dict[str, str], after: dict[str, str], context: int = 3) -> str:
    """A unified diff from one repository state to another (for reference solutions)."""
    import difflib

    chunks = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        if not a and not b:  # an empty file created or deleted: headers alone
            chunks += ["--- /dev/null\n" if a is None else f"--- a/{path}\n"]
            chunks += ["+++ /dev/null\n" if b is None else f"+++ b/{path}\n"]
            continue
        chunks += difflib.unified_diff(
            (a or "").splitlines(keepends=True),
            (b or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if a is not None else "/dev/null",
            tofile=f"b/{path}" if b is not None else "/dev/null",
            n=context,
        )
    return "".join(chunks)
