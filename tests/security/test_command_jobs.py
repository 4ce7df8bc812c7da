"""Command runs (rlvr.sandbox.command: a repository's pipeline, an agent's tool call): the
command cannot forge the run's events, cannot write the tree it was given or anything
else of the host, leaves nothing behind, is killed at its time limit with every process
it started, and a job that names paths outside its work dir is refused before it runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlvr.sandbox import Limits, SandboxPool
from rlvr.sandbox.command import Job, JobError, run_job

from .test_escape import assert_host_clean

LIMITS = Limits(timeout_s=5.0, memory_mb=256)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("job-tree")
    root.chmod(0o755)  # runs read it as a user of their own (rlvr repos add makes its trees so)
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (root / "keep.txt").write_text("pristine\n")
    return root


@pytest.fixture(scope="module")
def jobs_pool(tree: Path) -> Iterator[SandboxPool]:
    with SandboxPool(2, show=(str(tree),)) as pool:
        yield pool


def py(tree: Path, code: str, **kw: object) -> Job:
    return Job(argv=[sys.executable, "-c", code], tree=str(tree), **kw)  # type: ignore[arg-type]


def test_the_command_cannot_write_the_run_s_events(tree: Path, jobs_pool: SandboxPool) -> None:
    forged = '{"e": "file", "path": "report.xml", "text": "<forged/>", "truncated": false}\\n'
    code = f"import os\nfor fd in (3, 6):\n    try:\n        os.write(fd, b'{forged}')\n    except OSError as e:\n        print(fd, e.errno)\n"
    r = run_job(py(tree, code, collect=["report.xml"]), LIMITS, jobs_pool)
    assert r.status == "ok" and r.exit_code == 0, r.error
    assert r.files == {} and r.missing == ["report.xml"]
    assert r.stdout.split() == ["3", "9", "6", "9"]  # EBADF: neither descriptor reached it
    assert_host_clean(jobs_pool)


def test_the_tree_is_copied_and_never_written(tree: Path, jobs_pool: SandboxPool) -> None:
    code = (
        "import os\n"
        f"try:\n    open({str(tree / 'keep.txt')!r}, 'w').write('x')\nexcept OSError as e:\n    print('refused', e.errno)\n"
        "print(open('keep.txt').read().strip(), open('pkg/mod.py').read().strip())\n"
        "open('keep.txt', 'w').write('changed in the copy')\n"
        "open('new.txt', 'w').write('new')\n"
        "print(os.getcwd())\n"
    )
    job = py(tree, code, files={"pkg/mod.py": "VALUE = 2\n"}, delete=["nothing-there.txt"])
    for _ in range(2):  # the second run sees none of the first's writes
        r = run_job(job, LIMITS, jobs_pool)
        assert r.ok, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].startswith("refused ") and lines[1] == "pristine VALUE = 2" and lines[2] == "/sandbox/repo"
    assert (tree / "keep.txt").read_text() == "pristine\n" and (tree / "pkg" / "mod.py").read_text() == "VALUE = 1\n"
    assert not (tree / "new.txt").exists()


def test_a_command_past_its_time_limit_is_killed_with_its_children(tree: Path, jobs_pool: SandboxPool) -> None:
    code = "import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)\n"
    r = run_job(py(tree, code), Limits(timeout_s=1.0, memory_mb=256), jobs_pool)
    assert r.status == "timeout" and r.wall_time_s < 5
    assert_host_clean(jobs_pool)


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"files": {"../escape.py": "x"}}, "files/delete/collect"),
        ({"files": {"/etc/passwd": "x"}}, "files/delete/collect"),
        ({"delete": ["a/../../b"]}, "files/delete/collect"),
        ({"collect": ["./x"]}, "files/delete/collect"),
        ({"cwd": ".."}, "cwd"),
        ({"env": {"A=B": "c"}}, "env"),
    ],
)
def test_a_job_naming_paths_outside_its_work_dir_is_refused(tree: Path, kw: dict, field: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(JobError, match=field):
        py(tree, "pass", **kw)
    with pytest.raises(JobError, match="tree"):
        Job(argv=["true"], tree="relative/tree")
    with pytest.raises(JobError, match="argv"):
        Job(argv=[], tree=str(tree))


def test_an_edit_through_a_symlink_in_the_tree_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "linked"
    root.mkdir(mode=0o755)
    (root / "out").symlink_to("/tmp")
    with SandboxPool(1, show=(str(root),)) as pool:
        r = run_job(py(root, "print('ran')", files={"out/x.txt": "escaped"}), LIMITS, pool)
    assert r.status == "error" and "symlink" in r.error and "ran" not in r.stdout
