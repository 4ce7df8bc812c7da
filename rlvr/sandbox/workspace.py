"""The in-sandbox side of a command run: a copy of a read-only tree, edited, and a command.

Runs in PID 1 of the run (see harness.run, language "command"), after the jail is in
place and privileges are dropped. The job (built and checked by the supervisor,
rlvr.sandbox.command) names a directory that the jail shows read-only; it is copied into
the run's own /sandbox/repo, the job's files are written over the copy and its deletions
made, and the command runs there with the job's environment on top of the sandbox's
allow-listed one. Its stdout and stderr are the run's; afterwards the files the job asks
for are reported (capped), so a verdict can be read from, say, a JUnit XML report outside
the sandbox. Events, one JSON line each:
  {"e": "error", "i": 0, "msg"}                       the job could not be prepared
  {"e": "loaded"}                                    the tree is in place
  {"e": "command", "exit", "wall_s"}                 the command ended (exit code or -signal)
  {"e": "timeout", "i": 0}                           the command ran out of time and was killed
  {"e": "file", "path", "text", "truncated"}         a collected file (after the command)
  {"e": "missing", "path"}                           a collected file that was not written
Nothing of the copy survives the run: /sandbox is the run's own tmpfs.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Any

TREE = "repo"  # the copy, relative to the run's work dir
FILE_CAP = 4 << 20  # a collected file is cut at 4 MiB


def _copy_tree(src: str, dst: str) -> int:
    """Copy a directory (files, directories, symlinks as they are); returns files copied."""
    n = 0
    os.mkdir(dst)
    for entry in os.scandir(src):
        s, d = entry.path, os.path.join(dst, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(s), d)
        elif entry.is_dir():
            n += _copy_tree(s, d)
        elif entry.is_file():
            mode = entry.stat().st_mode
            fin = os.open(s, os.O_RDONLY | os.O_CLOEXEC)
            fout = os.open(d, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, stat.S_IMODE(mode) | 0o600)
            try:
                size = os.fstat(fin).st_size
                while size > 0:
                    sent = os.sendfile(fout, fin, None, size)
                    if sent == 0:
                        break
                    size -= sent
            finally:
                os.close(fin)
                os.close(fout)
            st = entry.stat()
            os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))  # compiled caches stay valid
            n += 1
    return n


def _inside(root: str, rel: str) -> str:
    """`rel` under `root`, refusing absolute paths, '..' and paths through a symlink."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in rel:
        raise ValueError(f"{rel!r} is not a plain relative path")
    cur = root
    for p in parts[:-1]:
        cur = os.path.join(cur, p)
        if os.path.islink(cur):
            raise ValueError(f"{rel!r} goes through a symlink")
    return os.path.join(root, *parts)


def prepare(job: dict[str, Any]) -> str:
    """Copy the job's tree into the work dir and apply its edits; returns the copy's path."""
    root = os.path.join(os.getcwd(), TREE)
    _copy_tree(job["tree"], root)
    for rel in job.get("delete", []):
        path = _inside(root, rel)
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
    for rel, text in job.get("files", {}).items():
        path = _inside(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.islink(path):
            os.unlink(path)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def run_job(job: dict[str, Any], emit: Any, deadline: float, wait: Any) -> None:
    """Prepare the tree, run the command until `deadline` (time.monotonic), report."""
    try:
        root = prepare(job)
        cwd = _inside(root, job["cwd"]) if job.get("cwd") else root
    except (OSError, ValueError, KeyError, TypeError) as e:
        emit({"e": "error", "i": 0, "msg": f"could not prepare the tree: {type(e).__name__}: {e}"})
        return
    emit({"e": "loaded"})
    env = {**os.environ, **job.get("env", {})}
    argv = list(job["argv"])
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.closerange(3, 1 << 16)  # the events and 'done' descriptors stay the harness's own
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        except BaseException as e:
            os.write(2, f"could not start {argv[0]!r}: {e}\n".encode())
        finally:
            os._exit(127)
    status = wait(pid, deadline)
    if status is None:
        emit({"e": "timeout", "i": 0})
    else:
        emit({"e": "command", "exit": status, "wall_s": time.monotonic() - t0})
    for rel in job.get("collect", []):
        try:
            path = _inside(os.getcwd(), rel)
            with open(path, "rb") as f:
                data = f.read(FILE_CAP + 1)
        except (OSError, ValueError):
            emit({"e": "missing", "path": rel})
            continue
        text = data[:FILE_CAP].decode("utf-8", "replace")
        emit({"e": "file", "path": rel, "text": text, "truncated": len(data) > FILE_CAP})
