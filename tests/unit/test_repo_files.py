"""Which files of a repository mining may mutate and which a reply may not touch."""

from __future__ import annotations

from rlvr.repos.coverage import is_library_file, is_protected
from rlvr.repos.suite import Baseline


def _base(**kw: list[str]) -> Baseline:
    parts = {k: kw.get(k, []) for k in ("passing", "flaky", "failing", "skipped")}
    return Baseline(3, durations={}, run_wall_s=[], run_cpu_s=[], unstable=kw.get("unstable", []), **parts)


def test_library_files_are_the_projects_modules_not_its_docs_tests_or_build_scripts() -> None:
    for rel in ("toolz/itertoolz.py", "src/semver/version.py", "isodate.py", "pkg/docs_helpers.py"):
        assert is_library_file(rel), rel
    for rel in (
        "docs/conf.py",  # Sphinx's configuration (semver's was covered and mutated)
        "doc/source/conf.py",
        "examples/demo.py",
        "benchmarks/bench_sort.py",
        "setup.py",
        "tests/helpers.py",
        "test_foo.py",
        "pkg/conftest.py",
        "src/pkg/data.json",
        "_rlvr_coverage.py",
    ):
        assert not is_library_file(rel), rel


def test_a_file_the_suite_collects_tests_from_is_protected_whatever_its_kind() -> None:
    base = _base(
        passing=["docs/usage.rst::usage.rst", "tests/test_a.py::test_x"],
        unstable=["README.md::README.md"],
        skipped=["src/pkg/mod.py::pkg.mod.helper"],  # a doctest module: its tests are in the source
    )
    assert base.test_files() == {"docs/usage.rst", "tests/test_a.py", "README.md", "src/pkg/mod.py"}
    held = base.test_files()
    assert is_protected("docs/usage.rst", held) and is_protected("README.md", held)
    assert not is_protected("docs/usage.rst") and not is_protected("docs/other.rst", held)
    assert is_protected("tests/test_b.py") and is_protected("pytest.ini") and not is_protected("src/pkg/core.py", held)
    # a library module collected for its doctests holds the bugs to fix: it stays editable
    assert not is_protected("src/pkg/mod.py", held)
