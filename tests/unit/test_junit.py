"""JUnit XML reports read into per-test verdicts (rlvr.repos.junit), on hand-written
reports in the shapes pytest (xunit1 and xunit2), jest-junit and nested reporters write."""

from __future__ import annotations

import pytest

from rlvr.repos.junit import ReportError, node_id, parse

PYTEST_XUNIT1 = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py" line="1" time="0.010"/>
<testcase classname="tests.test_a.TestBox" name="test_in[1-2]" file="tests/test_a.py" line="9" time="0.250">
  <failure message="assert 3 == 4">def test_in(...)</failure></testcase>
<testcase classname="tests.test_a" name="test_err" file="tests/test_a.py" time="0">
  <error message="failed on setup with &quot;KeyError&quot;">trace</error></testcase>
<testcase classname="tests.test_a" name="test_skip" file="tests/test_a.py" time="0">
  <skipped type="pytest.skip" message="not today">reason</skipped></testcase>
<testcase classname="tests.sub.test_b.TestX.TestY" name="test_deep" file="tests/sub/test_b.py" time="0.5"/>
</testsuite></testsuites>
"""


def test_pytest_xunit1_cases_become_node_ids_with_their_outcomes() -> None:
    got = {v.test: (v.outcome, v.duration_s, v.message) for v in parse(PYTEST_XUNIT1)}
    assert got == {
        "tests/test_a.py::test_ok": ("passed", 0.01, ""),
        # the message, then the body (pytest's traceback)
        "tests/test_a.py::TestBox::test_in[1-2]": ("failed", 0.25, "assert 3 == 4\ndef test_in(...)"),
        "tests/test_a.py::test_err": ("error", 0.0, 'failed on setup with "KeyError"\ntrace'),
        "tests/test_a.py::test_skip": ("skipped", 0.0, "not today\nreason"),
        "tests/sub/test_b.py::TestX::TestY::test_deep": ("passed", 0.5, ""),
    }


def test_a_doctest_file_s_case_is_its_pytest_node_id() -> None:
    assert (
        node_id("docs.usage.compare.rst", "compare.rst", "docs/usage/compare.rst")
        == "docs/usage/compare.rst::compare.rst"
    )
    assert node_id("pkg.mod", "pkg.mod.f", "pkg/mod.py") == "pkg/mod.py::pkg.mod.f"  # a doctest in a module


def test_node_ids_without_a_file_are_classname_and_name() -> None:
    assert node_id("tests.test_a", "test_x", None) == "tests.test_a::test_x"
    assert node_id("", "adds numbers", None) == "adds numbers"
    assert node_id("other.module", "t", "tests/test_a.py") == "tests/test_a.py::t"


def test_a_single_testsuite_root_and_nested_suites_are_read() -> None:
    jest = (
        '<testsuite name="math" tests="2"><testcase classname="math adds" name=" adds 1 + 2" time="0.003"/>'
        '<testcase classname="math adds" name="adds big" time="0.001"><failure message="Expected 4">x</failure>'
        "</testcase></testsuite>"
    )
    assert [(v.test, v.outcome) for v in parse(jest)] == [
        ("math adds::adds 1 + 2", "passed"),
        ("math adds::adds big", "failed"),
    ]
    nested = (
        '<testsuites><testsuite name="all"><testsuite name="file1"><testcase classname="c" name="a"/></testsuite>'
        '<testsuite name="file2"><testcase classname="c" name="b"><error message="boom"/></testcase></testsuite>'
        "</testsuite></testsuites>"
    )
    assert [(v.test, v.outcome) for v in parse(nested)] == [("c::a", "passed"), ("c::b", "error")]


def test_a_case_reported_twice_keeps_its_last_verdict() -> None:
    rerun = (
        '<testsuite><testcase classname="c" name="t"><failure message="first"/></testcase>'
        '<testcase classname="c" name="u"/><testcase classname="c" name="t"/></testsuite>'
    )
    assert [(v.test, v.outcome) for v in parse(rerun)] == [("c::u", "passed"), ("c::t", "passed")]


@pytest.mark.parametrize(
    "text, why",
    [
        ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY f SYSTEM "file:///etc/passwd">]><testsuite/>', "document type"),
        ("<!entity x 'y'><testsuite/>", "document type"),
        ("<testsuite><testcase", "not JUnit XML"),
        ("", "not JUnit XML"),
    ],
)
def test_entity_declarations_and_broken_reports_are_refused_with_a_reason(text: str, why: str) -> None:
    with pytest.raises(ReportError, match=why):
        parse(text)
