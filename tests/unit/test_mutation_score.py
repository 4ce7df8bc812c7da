"""The test-writing reward (rlvr/rewards/mutation_score.py) against hand-worked cases, and
the reading of a reply's tests (rlvr/rewards/test_guards.py)."""

from __future__ import annotations

import pytest

from rlvr.rewards.mutation_score import FAILS_REFERENCE, Outcome, kills, score
from rlvr.rewards.test_guards import MAX_TESTS, read_tests

P, F, T = Outcome("pass", 0.01), Outcome("fail", 0.01), Outcome("timeout", 1.0)


def test_kill_share_plus_a_tenth_of_the_useful_tests() -> None:
    # tests t0, t1, t2; mutants a (killed by t0 and t1), b (by t2), c (by none)
    ref = [[P, P, P], [P, P, P]]
    got = score(ref, {"a": [F, F, P], "b": [P, P, F], "c": [P, P, P]}, limit_s=1.0)
    # killed 2 of 3; useful: t0 (a), t2 (b); t1 kills only a, which t0 already did
    assert got.reward == pytest.approx(2 / 3 + 0.1 * 2 / 3)
    assert got.killed == ["a", "b"] and got.useful == [0, 2] and got.reason == "scored"
    assert got.details()["kill_share"] == pytest.approx(2 / 3)


def test_a_test_failing_on_the_reference_in_either_run_costs_half() -> None:
    got = score([[P, P], [P, F]], {"a": [F, F]}, limit_s=1.0)
    assert got.reward == FAILS_REFERENCE and got.failing_on_reference == [1]
    assert score([[P, T], [P, P]], {"a": [F, F]}, 1.0).reward == FAILS_REFERENCE  # a timeout is not a pass


def test_no_tests_and_no_mutants_score_zero() -> None:
    assert score([[], []], {"a": []}, 1.0).reason == "no_tests"
    assert score([[], []], {"a": []}, 1.0).reward == 0.0
    assert score([[P], [P]], {}, 1.0).reward == 0.0


def test_a_timeout_kills_only_when_the_reference_was_quick() -> None:
    assert kills(T, reference_seconds=0.2, limit_s=1.0)  # under a quarter of the limit
    assert not kills(T, reference_seconds=0.3, limit_s=1.0)
    assert not kills(P, 0.0, 1.0) and kills(F, 0.9, 1.0)
    slow_ref = [[Outcome("pass", 0.1)], [Outcome("pass", 0.4)]]  # the slower run decides
    assert score(slow_ref, {"a": [T]}, limit_s=1.0).killed == []
    assert score([[P], [P]], {"a": [T]}, limit_s=1.0).killed == ["a"]


def test_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="one outcome per test"):
        score([[P, P]], {"a": [F]}, 1.0)
    with pytest.raises(ValueError, match="expected one of"):
        Outcome("crash")


# ---- reading the reply ------------------------------------------------------------------


def test_asserts_and_test_functions_are_tests_the_rest_is_setup() -> None:
    code = """import math
LIMIT = 10

def helper(x):
    return x

assert f(2) == 4
assert True

def test_zero():
    assert f(0) == 0

def test_raises():
    with pytest.raises(ValueError):
        f(-1)

def test_needs_fixture(tmp_path):
    assert f(1) == 1

def test_no_call():
    assert helper(1) == 1

def test_no_assert():
    f(3)

class TestF:
    def test_a(self):
        assert f(1) == 1
"""
    r = read_tests(code, "f")
    assert r.error is None and r.findings == []
    assert [t.name for t in r.tests] == ["assert at line 7", "test_zero", "test_raises"]
    assert r.tests[1].source.endswith("test_zero()") and r.tests[0].source == "assert f(2) == 4"
    assert [line for line, _ in r.ignored] == [8, 17, 20, 23, 26]
    why = dict(r.ignored)
    assert why[8] == "does not call f" and "takes arguments" in why[17] and "asserts nothing" in why[23]
    assert "import math" in r.setup and "def helper" in r.setup
    # the ignored test functions and classes stay defined (a helper may be named test_*), never run
    assert "def test_needs_fixture" in r.setup and "class TestF" in r.setup and "assert True" not in r.setup


def test_calls_of_the_tests_are_dropped_and_helpers_named_test_kept() -> None:
    code = """def test_pair(a, b):
    return (a, b)

def test_one():
    assert f(*test_pair(1, 2)) == 3

test_one()
if __name__ == "__main__":
    test_one()
"""
    r = read_tests(code, "f")
    assert [t.name for t in r.tests] == ["test_one"] and "def test_pair" in r.setup and "test_one()" not in r.setup
    assert [why for _, why in r.ignored][1:] == ["a call of a test function: the tests are run for you"] * 2


@pytest.mark.parametrize("code", ["assert f(1) or True\n", "assert (f(2), 0)[1] == 0\n", "assert [0, f(3)][0] == 0\n"])
def test_an_assert_that_cannot_fail_on_the_result_is_not_a_test(code: str) -> None:
    r = read_tests(code, "f")
    assert r.tests == [] and "asserts nothing about f's result" in r.ignored[0][1]


def test_a_reply_that_redefines_the_entry_point_or_does_not_parse_is_refused() -> None:
    assert "line 1 defines f" in (read_tests("def f(x):\n    return x\nassert f(1) == 1\n", "f").error or "")
    assert "defines f" in (read_tests("from mymod import g as f\nassert f(1) == 1\n", "f").error or "")
    assert "do not parse (line 1)" in (read_tests("assert f(1) ==\n", "f").error or "")
    assert "characters long" in (read_tests("#" * 20_000, "f").error or "")


def test_tests_past_the_cap_are_ignored() -> None:
    r = read_tests("".join(f"assert f({i}) == {i}\n" for i in range(MAX_TESTS + 3)), "f")
    assert len(r.tests) == MAX_TESTS and [w for _, w in r.ignored] == [f"over the cap of {MAX_TESTS} tests"] * 3


@pytest.mark.parametrize(
    ("code", "name", "line"),
    [
        ("import inspect\nassert 'x' in inspect.getsource(f)\n", "test_introspection", 1),
        ("assert f.__code__.co_consts[0] == 1\n", "test_introspection", 1),
        ("import dis as d\nassert f(1) == 1\n", "test_introspection", 1),
        ("assert f(1) == 1\nassert 'return' in open('solution.py').read()\n", "test_introspection", 2),
        ("import sys\nassert 'solution' in sys.modules and f(1)\n", "test_introspection", 2),
        ("assert globals()['f'](1) == 1 and f(1)\n", "test_introspection", 1),
        ("import random\nassert f(random.randint(0, 9)) >= 0\n", "unseeded_random", 2),
        ("from random import choice\nassert f(choice([1, 2])) > 0\n", "unseeded_random", 2),
        ("import random\nassert f(random.Random().random()) >= 0\n", "unseeded_random", 2),
        ("import os\nassert f(len(os.urandom(4))) == 4\n", "unseeded_random", 2),
        ("import time\ndef test_fast():\n    t = time.perf_counter()\n    f(1)\n"
         "    assert time.perf_counter() - t < 1\n", "timing_assertion", 3),
        ("from time import monotonic as now\nassert f(1) and now() > 0\n", "timing_assertion", 2),
        # found by a review: computed and spelled-out attribute names, builtins, frames, files, clocks
        ("assert getattr(f, '__co' + 'de__') and f(1)\n", "test_introspection", 1),
        ("import operator\nassert operator.attrgetter('__code__.co_code')(f) and f(1)\n", "test_introspection", 2),
        ("import sys\nassert getattr(sys, '_getframe')(0) and f(1)\n", "test_introspection", 2),
        ("import builtins as b\nassert b.eval('f(1)') == f(1)\n", "test_introspection", 2),
        ("assert __builtins__ and f(1)\n", "test_introspection", 1),
        ("import traceback\nassert traceback.walk_stack(None) and f(1)\n", "test_introspection", 1),
        ("def test_a():\n    try:\n        1 / 0\n    except Exception as e:\n"
         "        assert e.__traceback__.tb_frame and f(1)\n", "test_introspection", 5),
        ("import solution\nassert f(1)\n", "test_introspection", 1),
        ("import os\nassert os.read(os.open('/proc/self/maps', 0), 9) and f(1)\n", "test_introspection", 2),
        ("import time\nassert time.clock_gettime(1) and f(1)\n", "timing_assertion", 2),
        ("import os\nassert os.times() and f(1)\n", "timing_assertion", 2),
        ("import resource\nassert resource.getrusage(0) and f(1)\n", "timing_assertion", 2),
        ("import random\nrandom.seed(None)\nassert f(random.randint(0, 9)) >= 0\n", "unseeded_random", 3),
        ("import random\nassert f(getattr(random, 'randint')(0, 9)) >= 0\n", "unseeded_random", 2),
        # the import system's state: where a copy of the code under test could be found
        ("from sys import modules\nassert f(1) and modules\n", "test_introspection", 1),
        ("import sys\nassert f(1) and sys.meta_path\n", "test_introspection", 2),
        ("import pkgutil\nassert f(1)\n", "test_introspection", 1),
        ("import m\nassert f(1) == m.spec.loader.exec_module(m)\n", "test_introspection", 2),
        # line numbers: a mutant that removes a statement can move them
        ("import pytest\ndef test_a():\n    with pytest.raises(ValueError) as e:\n        f(-1)\n"
         "    assert e.traceback[-1].lineno == 7\n", "test_introspection", 5),
        ("def test_b():\n    try:\n        f(-1)\n    except ValueError as e:\n"
         "        assert e.__traceback__.tb_lineno == 3\n", "test_introspection", 5),
    ],
)  # fmt: skip
def test_each_guard_fires_with_its_line(code: str, name: str, line: int) -> None:
    found = [(h.name, h.line) for h in read_tests(code, "f").findings]
    assert (name, line) in found, found


@pytest.mark.parametrize(
    "code",
    [
        "import random\nrandom.seed(0)\nassert f(random.randint(0, 9)) >= 0\n",
        "import random\ndef test_a():\n    rng = random.Random(7)\n    assert f(rng.randint(0, 9)) >= 0\n",
        "import random\ndef test_a():\n    random.seed(3)\n    assert f(random.random()) >= 0\n",
        "import math\nassert math.isclose(f(0.5), 0.25)\n",
        "import pytest\ndef test_a():\n    with pytest.raises(TypeError):\n        f(None)\n",
    ],
)
def test_honest_tests_raise_no_finding(code: str) -> None:
    r = read_tests(code, "f")
    assert r.findings == [] and r.error is None and r.tests


def test_a_seed_inside_one_test_does_not_seed_the_next() -> None:
    code = (
        "import random\ndef test_a():\n    random.seed(1)\n    assert f(random.random()) >= 0\n"
        "def test_b():\n    assert f(random.random()) >= 0\n"
    )
    assert [(h.name, h.line) for h in read_tests(code, "f").findings] == [("unseeded_random", 6)]


def test_the_review_s_frame_walking_reply_is_flagged() -> None:
    """A reply that looked for the harness's list of scripts in the stack, to pick out the
    reference as the most frequent program (possible only while every program ran in one
    sandbox run; each now has its own run, and the reading is flagged anyway)."""
    code = """import traceback
def _is_reference():
    for fr, _ in traceback.walk_stack(None):
        loc = getattr(fr, "f_" + "locals")
        if "probes" in loc:
            return True
    return True
assert (f(0), _is_reference())[1]
"""
    r = read_tests(code, "f")
    assert {h.name for h in r.findings} == {"test_introspection"} and r.tests == []


SHOWN = "def factorial(n):\n    r = 1\n    for i in range(2, n - 1):\n        r *= i\n    return r\n"


@pytest.mark.parametrize(
    ("code", "line"),
    [
        # the shown code under another name, compared with the function under test
        ("def old(n):\n    r = 1\n    for i in range(2, n - 1):\n        r *= i\n    return r\n"
         "assert factorial(5) != old(5)\n", 1),
        # every name changed, a docstring and annotations added, nested in a test function
        ("def test_it():\n    def buggy(k: int) -> int:\n        \'\'\'the shown one\'\'\'\n        acc = 1\n"
         "        for j in range(2, k - 1):\n            acc *= j\n        return acc\n"
         "    assert factorial(6) != buggy(6)\n", 2),
        # a decorator changes nothing of what it computes
        ("import functools\n\n@functools.lru_cache\ndef f(n):\n    r = 1\n    for i in range(2, n - 1):\n"
         "        r *= i\n    return r\nassert factorial(4) != f(4)\n", 4),
        # statements that do nothing, and parameters the body never uses (a method's self)
        ("class C:\n    def old(self, n, unused=3):\n        r = 1\n        pass\n        for i in range(2, n - 1):\n"
         "            r *= i\n            ...\n        return r\nassert factorial(5) != C().old(5)\n", 2),
        # operands of * in the other order, and the comparison turned around
        ("def old(n):\n    r = 1\n    for i in range(2, -1 + n):\n        r *= i\n    return r\n"
         "assert factorial(5) != old(5)\n", None),
    ],
)  # fmt: skip
def test_a_copy_of_the_shown_code_is_found_with_its_line(code: str, line: int | None) -> None:
    from rlvr.rewards.shown_code import copied_code

    found = copied_code(code, SHOWN)
    if line is None:  # `-1 + n` is `n - 1` read another way: a subtraction is not reordered
        assert found == []
    else:
        assert [(f.name, f.line, f.severity) for f in found] == [("copies_shown_code", line, "strong")]


def test_commutative_operands_and_flipped_comparisons_are_read_in_one_order() -> None:
    from rlvr.rewards.shown_code import copied_code

    shown = "def f(a, b):\n    if a < b:\n        return a * 2 + b\n    return b\n"
    assert copied_code("def g(x, y):\n    if y > x:\n        return y + 2 * x\n    return y\n", shown)
    assert copied_code("def g(y, x):\n    if y > x:\n        return y + 2 * x\n    return y\n", shown)  # same shape
    assert not copied_code("def g(x, y):\n    if x < y:\n        return x - 2 + y\n    return y\n", shown)


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        ("assert factorial(5) == 120\n", SHOWN),
        # the fixed version as an oracle computes something else than the shown code
        ("def ref(n):\n    r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r\n"
         "assert factorial(5) == ref(5)\n", SHOWN),
        ("def broken(:\n", SHOWN),  # does not parse: nothing to compare
        # free names are compared as they are: min is not max, sorted is not sum
        ("def expected(a, b):\n    return min(a, b)\n", "def f(x, y):\n    return max(x, y)\n"),
        ("def expected(xs):\n    return sorted(xs)\n", "def f(v):\n    return sum(v)\n"),
        # a body that does nothing copies nothing
        ("def helper():\n    pass\n", "def f():\n    pass\n"),
    ],
)  # fmt: skip
def test_code_that_is_not_a_copy_is_not_flagged(code: str, shown: str) -> None:
    from rlvr.rewards.shown_code import copied_code

    assert copied_code(code, shown) == []


def test_a_paraphrased_copy_gets_past_the_static_guard() -> None:
    """The known leak, kept visible: a loop written as a comprehension is another tree."""
    from rlvr.rewards.shown_code import copied_code

    shown = "def squares(xs):\n    out = []\n    for x in xs:\n        out.append(x * x)\n    return out\n"
    assert copied_code("def old(v):\n    acc = []\n    for y in v:\n        acc.append(y * y)\n    return acc\n", shown)
    assert copied_code("def old(v):\n    return [y * y for y in v]\n", shown) == []


def test_the_modules_a_reply_imports_are_listed_once_in_order() -> None:
    """Warmed as the program loads (rlvr.envs.test_writing.warm_imports); relative imports
    name no module to warm."""
    code = (
        "import pytest\nfrom math import isclose\nimport os.path, pytest\nfrom . import sibling\n"
        "def test_a():\n    import fractions\n    assert f(1) == 1\n"
    )
    assert read_tests(code, "f").modules == ["pytest", "math", "os.path", "fractions"]


def test_warming_imports_binds_no_name_survives_a_missing_module_and_skips_heavy_ones() -> None:
    import sys

    from rlvr.envs.test_writing import warm_imports

    assert warm_imports([]) == "" and warm_imports(["torch", "pandas"]) == ""  # not the standard library
    sys.modules.pop("colorsys", None)  # imported again by the warming alone
    space: dict = {}
    exec(warm_imports(["colorsys", "no_such_module_for_rlvr", "torch"]), space)  # our own generated code
    assert set(space) == {"__builtins__"} and "colorsys" in sys.modules
