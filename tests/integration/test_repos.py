"""`rlvr repos add|list|show` as a user runs them, on a fixture directory, a git
repository at a revision and a real registry sdist (toolz, fetched once per run): the
environment is built once and found the second time, it runs the repository's own
suite, and the lock file refuses a changed archive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

RLVR = [sys.executable, "-m", "rlvr.cli"]


def rlvr(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*RLVR, *args], capture_output=True, text=True, timeout=600)
    if ok:
        assert done.returncode == 0, done.stderr[-2000:]
    return done


def add(cache: Path, *args: str) -> dict[str, Any]:
    rec: dict[str, Any] = json.loads(rlvr("repos", "add", *args, "--cache", str(cache), "--json").stdout)
    return rec


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("repos-cache")


def mini(root: Path, answer: int = 42) -> Path:
    files = {
        "pyproject.toml": '[project]\nname = "mini"\nversion = "0.1"\n'
        '[project.optional-dependencies]\ntest = ["pytest", "iniconfig"]\n',
        "src/mini/__init__.py": f"def answer():\n    return {answer}\n",
        "tests/test_mini.py": "from mini import answer\n\ndef test_answer():\n    assert answer() == 42\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run_suite(rec: dict[str, Any], tests: str) -> subprocess.CompletedProcess[str]:
    tree = Path(rec["tree"])
    env = {**os.environ, "PYTHONPATH": str(tree / rec["pythonpath"])}
    python = str(Path(rec["env_path"]) / "bin" / "python")
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests]
    return subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def test_a_directory_builds_once_runs_its_suite_and_is_a_cache_hit_the_second_time(cache: Path, tmp_path: Path) -> None:
    src = mini(tmp_path / "mini")
    first = add(cache, str(src))
    assert first["kind"] == "dir" and first["name"] == "mini" and first["pythonpath"] == "src"
    assert first["requirements"] == ["coverage", "iniconfig", "pytest"]
    assert "passed" in run_suite(first, "tests").stdout.splitlines()[-1]
    t0 = time.perf_counter()
    again = add(cache, str(src))
    assert again["env_cached"] and again["env_key"] == first["env_key"] and again["slug"] == first["slug"]
    assert time.perf_counter() - t0 < 10
    (src / "src/mini/__init__.py").write_text("def answer():\n    return 41\n")  # an edit: a new tree, same env
    edited = add(cache, str(src))
    assert edited["slug"] != first["slug"] and edited["env_cached"] and edited["env_key"] == first["env_key"]
    assert run_suite(edited, "tests").returncode == 1
    assert not list(Path(edited["tree"]).parent.glob("*.tmp"))


def test_a_git_repository_at_a_revision(cache: Path, tmp_path: Path) -> None:
    repo = mini(tmp_path / "gitmini")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    mini(repo, answer=7)
    subprocess.run([*git, "commit", "-qam", "v2"], check=True)
    v1 = add(cache, f"{repo}@v1")
    commit = subprocess.run([*git, "rev-parse", "v1"], capture_output=True, text=True, check=True).stdout.strip()
    assert v1["kind"] == "git" and v1["digest"] == commit
    assert "return 42" in (Path(v1["tree"]) / "src/mini/__init__.py").read_text()
    head = add(cache, str(repo))
    assert head["digest"] != commit and "return 7" in (Path(head["tree"]) / "src/mini/__init__.py").read_text()
    done = rlvr("repos", "add", f"{repo}@nosuchrev", "--cache", str(cache), ok=False)
    assert done.returncode == 2 and done.stderr.startswith("rlvr: error: git rev-parse")
    assert done.stderr.count("\n") == 1


def test_a_registry_sdist_is_locked_by_its_sha256_and_runs_its_own_suite(cache: Path) -> None:
    rec = add(cache, "toolz==1.2.0")
    assert rec["kind"] == "sdist" and rec["name"] == "toolz" and "pytest" in rec["requirements"]
    lock = json.loads((cache / "repos.lock").read_text())
    assert lock["sdists"]["toolz==1.2.0"]["sha256"] == rec["digest"]
    out = run_suite(rec, "toolz/tests/test_itertoolz.py").stdout.splitlines()[-1]
    assert "passed" in out and "failed" not in out
    assert add(cache, "toolz==1.2.0")["env_cached"]
    lock["sdists"]["toolz==1.2.0"]["sha256"] = "0" * 64
    (cache / "other.lock").write_text(json.dumps(lock))
    done = rlvr("repos", "add", "toolz==1.2.0", "--cache", str(cache), "--lock", str(cache / "other.lock"), ok=False)
    assert done.returncode == 2 and "differs from the lock file" in done.stderr and done.stderr.count("\n") == 1


def test_list_and_show_read_the_cache(cache: Path, tmp_path: Path) -> None:
    add(cache, str(mini(tmp_path / "listed")))
    listed = json.loads(rlvr("repos", "list", "--cache", str(cache), "--json").stdout)
    assert "listed" in {r["source"].rsplit("/", 1)[-1] for r in listed}
    assert "env" in rlvr("repos", "list", "--cache", str(cache)).stdout
    shown = json.loads(rlvr("repos", "show", "mini", "--cache", str(cache), "--json").stdout)
    assert shown["name"] == "mini"
    done = rlvr("repos", "show", "nope", "--cache", str(cache), ok=False)
    assert done.returncode == 2 and "no repository 'nope' in the cache; cached:" in done.stderr
    empty = rlvr("repos", "list", "--cache", str(tmp_path / "none")).stdout
    assert empty.startswith("no repositories cached")
