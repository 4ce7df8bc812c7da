"""The pytest test format: plugins and conftest off, skip/xfail fail, counts enforced."""

import pytest

from rlvr.sandbox import Limits, execute
from rlvr.sandbox.spec import SpecError
from rlvr.types import TestStatus

SOLUTION = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_negative():\n    assert add(-1, -1) == -2\n\n"
    "class TestMore:\n    def test_zero(self):\n        assert add(0, 0) == 0\n"
)
LIMITS = Limits(timeout_s=20)


def run(code: str, source: str, **extra: object):  # type: ignore[no-untyped-def]
    return execute(code, {"format": "pytest", "source": source, **extra}, LIMITS)


def test_passing_and_failing_tests() -> None:
    r = run(SOLUTION, TESTS)
    assert (r.passed, r.total) == (3, 3), [t.message for t in r.tests]
    r = run("def add(a, b):\n    return a - b\n", TESTS)
    assert r.passed == 1 and r.total == 3  # only add(0, 0) survives


def test_skip_and_xfail_count_as_failures() -> None:
    src = (
        "import pytest\nfrom solution import add\n\n"
        "def test_ok():\n    assert add(1, 1) == 2\n\n"
        "def test_skipped():\n    pytest.skip('no')\n\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert add(1, 1) == 3\n"
    )
    r = run(SOLUTION, src)
    assert [t.status for t in r.tests] == [TestStatus.PASSED, TestStatus.FAILED, TestStatus.FAILED]


def test_the_submission_cannot_skip_or_hide_tests() -> None:
    # A solution that skips the whole module at import: zero collected, every test fails.
    hostile = "import pytest\npytest.skip('nothing to see', allow_module_level=True)\n" + SOLUTION
    r = run(hostile, TESTS)
    assert r.passed == 0 and r.total == 3
    # One that deletes tests from the module it is imported into still fails the count.
    hiding = "import sys\n" + SOLUTION + "sys.modules.pop('test_solution', None)\n"
    r = run(hiding, TESTS)
    assert r.total == 3


def test_expected_count_and_parametrize() -> None:
    src = (
        "import pytest\nfrom solution import add\n\n"
        "@pytest.mark.parametrize('x', [1, 2])\ndef test_p(x):\n    assert add(x, 0) == x\n"
    )
    with pytest.raises(SpecError, match="parametrized"):
        run(SOLUTION, src)
    assert run(SOLUTION, src, expected_tests=2).passed == 2
    r = run(SOLUTION, src, expected_tests=3)
    assert r.passed == 0 and "collected 2 tests, expected 3" in r.error
