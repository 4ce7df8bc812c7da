"""rlvr.repos.deps and the SOURCE / override parsing of rlvr.repos: what a repository's
suite needs, read from hand-written project files in every place projects keep it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.repos.deps import project_name, suite_requirements
from rlvr.repos.source import RepoError, parse_source
from rlvr.repos.store import Override, _pythonpath


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_pyproject_dependencies_test_extras_and_dependency_groups(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": """
[project]
name = "Demo_Pkg"
dependencies = ["attrs>=22", "tomli; python_version < '3.11'"]
[project.optional-dependencies]
test = ["pytest>=7", "demo-pkg[extra]", "hypothesis"]
docs = ["sphinx"]
[dependency-groups]
lint = ["ruff"]
dev = [{include-group = "lint"}, "coverage"]
"""
        },
    )
    found = suite_requirements(tmp_path)
    assert found.name == "Demo_Pkg" and project_name(tmp_path) == "Demo_Pkg"
    # tomli's marker is false on 3.11; sphinx is a docs extra; the self-reference is dropped
    assert found.requirements == ["attrs>=22", "coverage", "hypothesis", "pytest>=7", "ruff"]
    assert found.sources["pyproject.toml group dev"] == ["ruff", "coverage"]


def test_setup_cfg_setup_py_tox_and_requirement_files_with_includes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.cfg": "[metadata]\nname = legacy\n[options]\ninstall_requires =\n    six\n"
            "[options.extras_require]\ntesting =\n    pytest-mock\n    legacy[other]\n",
            "setup.py": "from setuptools import setup\nTESTS = ['nose2', 'mock>=4']\n"
            "setup(name='legacy', tests_require=TESTS, extras_require={'dev': ['flake8'], 'x': ['numpy']})\n",
            "tox.ini": "[testenv]\ndeps =\n    py3: freezegun\n    -rrequirements/base.txt\n",
            "requirements/base.txt": "# shared\nrequests==2.0  # pinned\n",
            "requirements-test.txt": "-r requirements/base.txt\n-e .\nhttps://example.com/x.whl\n"
            "pkg @ https://example.com/pkg.tar.gz\nnot a requirement!\n",
        },
    )
    found = suite_requirements(tmp_path, extra=["pytest==8.0"])
    assert found.name == "legacy"
    assert found.requirements == [
        "coverage",
        "flake8",
        "freezegun",
        "mock>=4",
        "nose2",
        "pytest==8.0",
        "pytest-mock",
        "requests==2.0",
        "six",
    ]
    assert any("a URL requirement" in s and "pkg @" in s for s in found.skipped)
    assert any("not a requirement: not a requirement!" in s for s in found.skipped)
    assert "numpy" not in found.requirements  # extra 'x' is not a test extra


NOXFILE = """
import nox
TEST_DEPS = ["pytest-xdist", "freezegun>=1"]

@nox.session(python=["3.10", "3.11"])
def tests(session):
    session.install("-e", ".[test]")
    session.install(*TEST_DEPS, "hypothesis")
    session.install("-r", "requirements/ci.txt")
    session.run("pytest")

@nox.session(name="unit-fast")
def fast(session):
    session.install("-rrequirements/extra.txt", "--upgrade", "mock", ".")

@nox.session
def lint(session):
    session.install("ruff")

def helper(session):
    session.install("not-a-session")
"""


def test_noxfile_test_sessions_install_what_their_literal_calls_name(tmp_path: Path) -> None:
    """Sessions named for tests (by function or `name=`) are read, lint sessions and
    plain functions are not; `*NAME` follows a module-level list, `-r` (either spelling)
    a requirements file, and the project itself (`-e .[test]`, `.`) is left out."""
    write(tmp_path, {"noxfile.py": NOXFILE, "requirements/ci.txt": "requests\n", "requirements/extra.txt": "attrs\n"})
    found = suite_requirements(tmp_path)
    assert found.requirements == [
        "attrs", "coverage", "freezegun>=1", "hypothesis", "mock", "pytest", "pytest-xdist", "requests",
    ]  # fmt: skip
    assert found.sources["noxfile.py"] == ["pytest-xdist", "freezegun>=1", "hypothesis", "mock"]
    assert found.sources["requirements/ci.txt"] == ["requests"] and found.skipped == []
    write(tmp_path, {"noxfile.py": "def tests(session:\n"})
    assert suite_requirements(tmp_path).skipped == ["noxfile.py: not valid Python"]


def test_nox_options_take_their_values_and_computed_arguments_take_nothing_with_them(tmp_path: Path) -> None:
    """A computed constraint file leaves the package after it a package; the values of
    pip's options are not requirements; a requirements file outside the tree, or a `-r`
    with nothing after it, is refused with a line; an unhashable literal is no crash."""
    noxfile = """
from nox import session
ODD = {[1]: 2}  # unhashable: literal_eval raises TypeError

@session
def test(s):
    s.install("-c", f"constraints-{s.python}.txt", "pytest-mock")
    s.install("--find-links", "dist", "-i", "https://mirror.example/simple", "--requirement=req.txt")
    s.install("-r", "../outside.txt", "six")
    s.install("toml", "-r")
"""
    write(tmp_path / "repo", {"noxfile.py": noxfile, "req.txt": "idna\n"})
    write(tmp_path, {"outside.txt": "evil\n"})
    found = suite_requirements(tmp_path / "repo")
    assert found.sources["noxfile.py"] == ["pytest-mock", "six", "toml"]
    assert "idna" in found.requirements and "dist" not in found.requirements and "evil" not in found.requirements
    assert found.skipped == [
        "noxfile.py: -r ../outside.txt: not a requirements file in the tree",
        "noxfile.py: -r: not a requirements file in the tree",
    ]


def test_pytest_and_coverage_are_added_when_nothing_names_them_and_a_missing_include_is_said(tmp_path: Path) -> None:
    write(tmp_path, {"requirements-dev.txt": "-r missing.txt\n"})
    found = suite_requirements(tmp_path)
    assert found.requirements == ["coverage", "pytest"] and found.sources == {"default": ["pytest", "coverage"]}
    assert found.skipped == ["missing.txt: an included requirements file is missing"]
    assert found.name is None


def test_a_src_layout_puts_src_on_the_path(tmp_path: Path) -> None:
    write(tmp_path / "a", {"src/pkg/__init__.py": "", "tests/test_x.py": ""})
    write(tmp_path / "b", {"pkg/__init__.py": "", "src/notes.txt": ""})
    assert _pythonpath(tmp_path / "a") == "src" and _pythonpath(tmp_path / "b") == "."


def test_sources_parse_and_bad_ones_say_why(tmp_path: Path) -> None:
    assert parse_source("toolz==1.2.0").kind == "sdist"
    assert parse_source(str(tmp_path)).kind == "dir"
    (tmp_path / ".git").mkdir()
    src = parse_source(f"{tmp_path}@v1.0")
    assert (src.kind, src.rev) == ("git", "v1.0") and parse_source(str(tmp_path)).rev == "HEAD"
    with pytest.raises(RepoError, match=r"neither an existing directory .* nor a pinned registry sdist"):
        parse_source("toolz>=1")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(RepoError, match="is a file"):
        parse_source(str(tmp_path / "f.txt"))
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RepoError, match="a revision needs a git repository"):
        parse_source(f"{plain}@main")


def test_override_files_are_checked(tmp_path: Path) -> None:
    (tmp_path / "o.yaml").write_text("packages: [numpy]\naddopts: -x\nskip: [tests/test_a.py::test_slow]\n")
    ov = Override.load(tmp_path / "o.yaml")
    assert (ov.packages, ov.addopts, ov.skip) == (["numpy"], "-x", ["tests/test_a.py::test_slow"])
    (tmp_path / "bad.yaml").write_text("pakages: [numpy]\n")
    valid = "addopts, command, junit, packages, show, skip"
    with pytest.raises(RepoError, match=rf"unknown keys \['pakages'\]; valid: {valid}"):
        Override.load(tmp_path / "bad.yaml")
