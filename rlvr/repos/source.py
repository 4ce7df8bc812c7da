"""Where a repository comes from, and its pristine tree in the cache.

SOURCE is a directory, a local git repository at a revision (`PATH` or `PATH@REV`), or a
registry sdist pinned as `name==version`. An sdist is fetched once with
`pip download --no-deps --no-binary :all:` (sdists ship their test suites; wheels
usually do not); its sha256 is written to the lock file at the first fetch and every
later fetch, from the cache or the registry, must match it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


class RepoError(ValueError):
    """A repository that cannot be added or built: one line that names the problem."""


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9._+!-]*)$")
_IGNORED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".venv", "venv", ".tox", ".nox", "build", "dist")


@dataclass(frozen=True)
class Source:
    kind: str  # "sdist" | "dir" | "git"
    text: str  # as the user gave it
    name: str = ""  # sdist: the distribution's name
    version: str = ""  # sdist: the pinned version
    path: str = ""  # dir, git: the absolute path
    rev: str = ""  # git: the revision asked for


def parse_source(text: str) -> Source:
    path, _, rev = text.partition("@") if "@" in text and not Path(text).exists() else (text, "", "")
    p = Path(path).expanduser()
    if p.exists():
        if not p.is_dir():
            raise RepoError(f"SOURCE {text!r} is a file; give a directory, a git repository or name==version")
        if (p / ".git").exists():
            return Source("git", text, path=str(p.resolve()), rev=rev or "HEAD")
        if rev:
            raise RepoError(f"SOURCE {text!r}: a revision needs a git repository, and {path} is not one")
        return Source("dir", text, path=str(p.resolve()))
    m = _PIN.match(text.strip())
    if m:
        return Source("sdist", text, name=m.group(1), version=m.group(2))
    raise RepoError(
        f"SOURCE {text!r} is neither an existing directory or git repository (PATH[@REV]) "
        "nor a pinned registry sdist (name==version)"
    )


@dataclass(frozen=True)
class Fetched:
    source: Source
    slug: str  # the repository's directory name in the cache
    digest: str  # sdist: its sha256; git: the commit; dir: a hash of its files
    tree: Path


def fetch(source: Source, cache: Path, lock_path: Path) -> Fetched:
    """The source's pristine tree under `cache/repos/SLUG/tree` (replaced when the
    source changed: a new commit, edited files)."""
    if source.kind == "sdist":
        archive, digest = _sdist(source, cache, lock_path)
        slug = f"{source.name.lower()}-{source.version}"
        tree = cache / "repos" / slug / "tree"
        if not tree.exists():
            _unpack(archive, tree)
        return Fetched(source, slug, digest, tree)
    if source.kind == "git":
        commit = git(source.path, "rev-parse", "--verify", f"{source.rev}^{{commit}}").strip()
        slug = f"{Path(source.path).name}-{commit[:10]}"
        tree = cache / "repos" / slug / "tree"
        if not tree.exists():
            tar = subprocess.run(
                ["git", "-C", source.path, "archive", "--format=tar", commit], capture_output=True, check=False
            )
            if tar.returncode != 0:
                raise RepoError(f"git archive of {source.path}@{commit[:10]} failed: {last_line(tar.stderr)}")
            with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
                _extract_tar(t, tree)
        return Fetched(source, slug, commit, tree)
    digest = _dir_digest(Path(source.path))
    slug = f"{Path(source.path).name}-{digest[:10]}"
    tree = cache / "repos" / slug / "tree"
    if not tree.exists():
        tmp = tree.with_name("tree.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(source.path, tmp, ignore=_IGNORED, symlinks=True)
        tmp.rename(tree)
    return Fetched(source, slug, digest, tree)


def _sdist(source: Source, cache: Path, lock_path: Path) -> tuple[Path, str]:
    pin = f"{source.name}=={source.version}"
    where = cache / "sdists" / pin.replace("==", "-")
    archive = _archive_in(where)
    if archive is None:
        where.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", pin]
        done = subprocess.run([*cmd, "-d", str(where)], capture_output=True, text=True, check=False)
        archive = _archive_in(where)
        if done.returncode != 0 or archive is None:
            raise RepoError(f"pip could not fetch the sdist {pin}: {last_line(done.stderr) or 'no archive came back'}")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    lock = _read_lock(lock_path)
    known = lock.get(pin)
    if known is None:
        lock[pin] = {"file": archive.name, "sha256": digest}
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = lock_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"sdists": dict(sorted(lock.items()))}, indent=1) + "\n")
        os.replace(tmp, lock_path)
    elif known.get("sha256") != digest:
        raise RepoError(
            f"{pin}: the sdist's sha256 {digest[:16]}... differs from the lock file's "
            f"{str(known.get('sha256'))[:16]}... ({lock_path}); refusing a changed archive"
        )
    return archive, digest


def _read_lock(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        sdists = data["sdists"]
        if not isinstance(sdists, dict):
            raise TypeError
        return sdists
    except (ValueError, KeyError, TypeError):
        raise RepoError(f"the lock file {path} is not rlvr's ({{'sdists': {{pin: {{file, sha256}}}}}})") from None


def _archive_in(where: Path) -> Path | None:
    if not where.is_dir():
        return None
    found = sorted(p for p in where.iterdir() if p.name.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz")))
    return found[0] if found else None


def _unpack(archive: Path, tree: Path) -> None:
    tmp = tree.with_name("tree.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if info.filename.startswith("/") or ".." in Path(info.filename).parts:
                    raise RepoError(f"{archive.name}: a member escapes the archive ({info.filename})")
            z.extractall(tmp)
    else:
        with tarfile.open(archive) as t:
            _extract_tar(t, tmp)
    entries = list(tmp.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp  # sdists wrap in name-version/
    if top is not tmp:
        top.rename(tmp.with_name("tree.top"))
        tmp.rmdir()
        tmp.with_name("tree.top").rename(tree)
    else:
        tmp.rename(tree)


def _extract_tar(tar: tarfile.TarFile, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    tar.extractall(dest, filter="data")  # refuses absolute paths, `..`, devices, links out


def _dir_digest(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _IGNORED(dirpath, [d]))
        for f in sorted(set(filenames) - _IGNORED(dirpath, filenames)):
            p = Path(dirpath) / f
            h.update(str(p.relative_to(root)).encode() + b"\0")
            if p.is_file() and not p.is_symlink():
                h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def git(path: str, *args: str) -> str:
    """`git -C path ARGS`'s output, or RepoError with git's last line."""
    done = subprocess.run(["git", "-C", path, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RepoError(f"git {' '.join(args)} in {path} failed: {last_line(done.stderr)}")
    return done.stdout


def last_line(err: str | bytes) -> str:
    text = err.decode(errors="replace") if isinstance(err, bytes) else err
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
