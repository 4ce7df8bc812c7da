"""rlvr.rewards.hidden_tests without a sandbox: the example calls read from a task's
asserts, the strategies drawn from them, the draw's determinism and disjointness, and
the tests built from an observer's values (a fake standing in for the sandbox)."""

from __future__ import annotations

import ast
import dataclasses
import string
from typing import Any

import pytest

from rlvr.rewards.exactness import integer_exact
from rlvr.rewards.hidden_tests import (
    MAGNITUDE_DIGITS,
    WIDEN,
    NotDrawable,
    constant_passes,
    draw_inputs,
    example_calls,
    hidden_tests,
    strategy_for,
)
from rlvr.tasks.shape_features import shapes
from rlvr.types import Task


def _task(tests: list[str], held: list[str] | None = None, entry: str = "f", ref: str = "def f(x):\n    return x\n"):
    spec: dict[str, Any] = {"format": "assert", "tests": tests}
    if held:
        spec["held_out"] = held
    return Task(id="t/1", domain="python", prompt="p (integers only)", tests=spec, entry_point=entry, reference=ref)


def _python_observer(code: str, exprs: list[str]) -> list[tuple[bool, Any]]:
    """Evaluates in this process: the unit tests' stand-in for rlvr.sandbox.api.observe."""
    env: dict[str, Any] = {}
    exec(code, env)
    out: list[tuple[bool, Any]] = []
    for e in exprs:
        try:
            out.append((True, eval(e, env)))
        except Exception as err:
            out.append((False, str(err)))
    return out


def test_example_calls_read_literal_arguments_and_refuse_other_shapes() -> None:
    t = _task(["assert f(1, 'a') == 2", "assert f(3, 'bc') == 4"], held=["assert f(9, 'z') == 1", "assert g(1) == 0"])
    assert example_calls(t) == ([(1, "a"), (3, "bc")], [(9, "z")])
    with pytest.raises(NotDrawable, match="not ENTRY"):
        example_calls(_task(["assert f(1) == 2", "assert sorted(f(2)) == [1]"]))
    with pytest.raises(NotDrawable, match="assert-format"):
        example_calls(Task(id="x", domain="python", prompt="p", tests={"format": "stdio", "cases": []}))


def test_draws_are_fixed_by_seed_and_step_and_never_repeat_a_visible_input() -> None:
    t = _task([f"assert f({i}) == {i}" for i in (0, 1, 2, 3, 50)])
    t = dataclasses.replace(t, prompt="Write f(x) for a non-negative integer x.")
    a = draw_inputs(t, seed=7, step=3, n=20)
    assert a == draw_inputs(t, seed=7, step=3, n=20)
    assert a != draw_inputs(t, seed=7, step=4, n=20)
    assert len(a) >= 20 and not {(0,), (1,), (2,), (3,), (50,)} & set(a)
    assert len(set(a)) == len(a)
    # fresh draws within the examples' range (wide enough here: no widening), up to WIDEN
    # times the span past it, or of up to MAGNITUDE_DIGITS digits, and edits of an example;
    # never below the smallest example, as none is negative; and inputs of a known shape
    # (rlvr.tasks.shapes: squares, powers of two, machine edges), past 2**52 + 1 (where
    # floats stop being exact) only as the reference has no float in it
    assert all(0 <= x < 10**MAGNITUDE_DIGITS or (x >= 0 and shapes((x,), [(0,)])) for (x,) in a)
    assert any(shapes((x,), [(0,)]) for (x,) in a if x > 10**MAGNITUDE_DIGITS)
    assert any(x > 2**64 for (x,) in a)
    # the draws made before shapes existed (the test-writing set was built from them) stay as they were
    assert all(0 <= x < 10**MAGNITUDE_DIGITS for (x,) in draw_inputs(t, seed=7, step=3, n=20, shaped_inputs=False))
    floats = Task(**{**t.__dict__, "reference": "def f(x):\n    return int(x / 1)\n"})
    assert all(0 <= x <= 2**52 + 1 for (x,) in draw_inputs(floats, seed=7, step=3, n=20))
    # where the prompt leaves the sign open, negative integers are drawn too (blind set 5's
    # 18: a closed form right for every n >= -2); the older draws stay non-negative
    silent = dataclasses.replace(t, prompt="Write f(x).")
    assert any(x < 0 for (x,) in draw_inputs(silent, seed=7, step=3, n=20))
    assert all(x >= 0 for (x,) in draw_inputs(silent, seed=7, step=3, n=20, shaped_inputs=False))
    assert any(x <= 50 for (x,) in a) and any(50 < x <= 203 for (x,) in a) and any(x > 10**6 for (x,) in a)
    neg = draw_inputs(_task([f"assert f({i}) == {i}" for i in (-5, 0, 3, 15)]), seed=0, step=0, n=40)
    assert min(x for (x,) in neg) < -5 and max(x for (x,) in neg) > 15


@pytest.mark.parametrize(
    ("code", "exact"),
    [
        ("def f(n):\n    return n * n // 3 % 7\n", True),
        ("import math\ndef f(n):\n    return math.isqrt(n)\n", True),
        ("def f(n):\n    return int(n ** 0.5)\n", False),
        ("def f(n):\n    return n / 2\n", False),
        ("def f(n):\n    n /= 2\n    return n\n", False),
        ("import math\ndef f(n):\n    return math.floor(math.log10(n))\n", False),
        ("def f(n):\n    return round(n)\n", False),
        ("def f(n:\n", False),
        ("from math import sqrt as r\ndef f(n):\n    return int(r(n))\n", False),  # under another name
        ("import math\ndef f(n):\n    return int(n * math.pi)\n", False),
        ("import statistics\ndef f(xs):\n    return statistics.median(xs)\n", False),
        ("def f(n):\n    return n ** -1\n", False),
        ("def f(a, b, m):\n    return pow(a, b, m)\n", True),  # modular power: exact
        ("def f(n):\n    return 2 ** n\n", True),
    ],
)
def test_a_reference_is_integer_exact_when_no_float_can_arise_in_it(code: str, exact: bool) -> None:
    assert integer_exact(code) is exact


def test_a_tasks_stated_argument_range_bounds_the_draws() -> None:
    t = _task([f"assert f({i}) == {i}" for i in (0, 1, 2, 7, 20)])
    bounded = Task(**{**t.__dict__, "metadata": {"arg_ranges": [[0, 30]]}})
    got = [x for (x,) in draw_inputs(bounded, seed=0, step=0, n=20)]
    assert got and all(0 <= x <= 30 for x in got)
    assert max(x for (x,) in draw_inputs(t, seed=0, step=0, n=20)) > 30  # unbounded: past the examples


def test_strings_use_the_examples_characters_and_lists_their_lengths() -> None:
    from hypothesis import given, settings

    @settings(max_examples=50, database=None, deadline=None)
    @given(strategy_for(["abc", "ba", "cab"]), strategy_for([[1, 2], [5, 0, 3]]))
    def fresh(s: str, xs: list[int]) -> None:  # the fresh half: the examples' characters, WIDEN times their lengths
        assert set(s) <= set("abc") and 2 <= len(s) <= WIDEN * 3 + 2
        assert isinstance(xs, list) and 2 <= len(xs) <= WIDEN * 3 + 2

    fresh()
    t = _task(["assert f('abc') == 1", "assert f('ba') == 2", "assert f('cab') == 3"])
    drawn = [s for (s,) in draw_inputs(t, seed=0, step=0, n=20)]
    # lowercase letters, or an example with one character of a class no example shows
    # (rlvr.tasks.shapes: a space, a newline, punctuation, a digit, a non-ASCII letter, one
    # past Latin-1, a letter whose case does not map one to one, a capital, whitespace past
    # the usual six, and the two-character units: CRLF, a surrogate pair, a flag; a symbol
    # with case, the KELVIN SIGN), or two letters past Latin-1 as a near-palindrome's
    # mismatched pair
    foreign = set(" \n-!7\u00e9\u0416\u0101\u00df\u01c5ABC\x85\u2028\u24d0\u212a")
    units = ("\r\n", "\ud83d\ude00", "\U0001f1eb\U0001f1f7")
    mirrored = set("\u0416\u0101\u03a9\u0142")
    assert all(
        set(s) <= set(string.ascii_lowercase)
        or len(set(s) & foreign) == 1
        or (sum(u in s for u in units) == 1 and set("".join(s.split(next(u for u in units if u in s)))) <= set("abc"))
        or (len(set(s) - set(string.ascii_lowercase)) == 2 and set(s) - set(string.ascii_lowercase) <= mirrored)
        for s in drawn
    )
    assert any(set(s) - set("abc") - foreign for s in drawn)  # an edit put another lowercase letter in


def test_hidden_tests_hold_the_references_values_and_no_constant_passes_them() -> None:
    ref = "def f(x):\n    return x > 10\n"
    t = _task(["assert f(0) == False", "assert f(11) == True", "assert f(30) == True"], ref=ref)
    tests = hidden_tests(t, seed=0, step=0, n=20, observe=_python_observer)
    # 20 drawn, 3 at the reference's reach (past 8,192 bits, at the width drawn for the step:
    # random, a multiple of 30,030, 2**bits +- 1)
    assert len(tests) == 23 and not constant_passes(tests)
    grown = [ast.literal_eval(ast.parse(t).body[0].test.left.args[0]) for t in tests[-3:]]  # type: ignore[attr-defined]
    assert all(8192 < x.bit_length() <= 13_001 for x in grown) and grown[1] % 30030 == 0
    assert abs(abs(grown[2]) - 2 ** (abs(grown[2]).bit_length() - 1)) == 1 or abs(abs(grown[2]) + 1).bit_count() == 1
    for line in tests:
        node = ast.parse(line).body[0]
        assert isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
        x = ast.literal_eval(node.test.left.args[0])  # type: ignore[attr-defined]
        assert ast.literal_eval(node.test.comparators[0]) == (x > 10)


def test_a_visible_test_gives_the_second_answer_where_no_drawn_input_has_it() -> None:
    # only [] is empty, and it is visible: every drawn list is non-empty, so False would
    # pass them all; the last drawn test gives way to the visible one with the other answer
    ref = "def f(xs):\n    return len(xs) == 0\n"
    t = _task(["assert f([1, 2]) == False", "assert f([]) == True", "assert f([5]) == False"], ref=ref)
    tests = hidden_tests(t, seed=0, step=0, n=20, observe=_python_observer)
    # 20 drawn and one grown ([1, 2] * 512, ...); the prompt says nothing of the list's state
    assert len(tests) == 21 and not constant_passes(tests)
    assert tests[-1] == "assert f([]) == True" and tests.count("assert f([]) == True") == 1
    assert sum(t.endswith("== False") for t in tests) == 20


def test_inputs_the_reference_rejects_are_not_tests_and_float_values_are_compared_within_a_tolerance() -> None:
    ref = "def f(x):\n    if x % 2:\n        raise ValueError(x)\n    return x / 2 if x > 20 else x // 2\n"
    t = _task(["assert f(0) == 0", "assert f(4) == 2", "assert f(40) == 20.0"], ref=ref)
    tests = hidden_tests(t, seed=1, step=0, n=20, observe=_python_observer)
    assert tests
    kinds = set()
    for line in tests:
        node = ast.parse(line).body[0].test  # type: ignore[attr-defined]
        close = isinstance(node, ast.Call)
        x = ast.literal_eval((node.args[0] if close else node.left).args[0])
        assert x % 2 == 0 and (x > 20 if close else x <= 20)  # odd inputs raised: no test
        kinds.add(close)
    assert kinds == {True, False}
    assert hidden_tests(_task(["assert f(1) == 1"], ref=""), seed=0, step=0, observe=_python_observer) == []


def test_constant_passes_reads_the_expected_values() -> None:
    assert constant_passes(["assert f(1) == 0", "assert f(2) == 0"])
    assert not constant_passes(["assert f(1) == 0", "assert f(2) == 1"])


def test_float_answers_are_compared_within_a_tolerance_outside_the_sandbox() -> None:
    from rlvr.sandbox.spec import judge, parse_assert

    ref = "def f(x):\n    return x / 4\n"
    t = _task(["assert f(1) == 0.25", "assert f(2) == 0.5", "assert f(10) == 2.5"], ref=ref)
    tests = hidden_tests(t, seed=0, step=0, n=20, observe=_python_observer)
    assert len(tests) == 20 and all(line.startswith("assert math.isclose(f(") for line in tests)
    assert not constant_passes(tests)
    parsed = [parse_assert(line, i) for i, line in enumerate(tests)]
    assert all(p.expr.startswith("f(") and "isclose" not in p.expr for p, _ in parsed)  # the value stays outside
    # a moderate input (a relative tolerance lets 1e-3 through on a large one)
    probe, check = next((p, c) for p, c in parsed if abs(ast.literal_eval(p.expr[2:-1])) < 10**6)
    x = ast.literal_eval(probe.expr[2:-1])
    assert judge(check, x / 4 + 1e-12)[0] and judge(check, x * 0.25)[0] and not judge(check, x / 4 + 1e-3)[0]


def test_a_draw_with_a_stand_in_observer_is_never_cached_for_the_sandbox() -> None:
    from rlvr.rewards import hidden_tests as module

    t = _task(["assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"], ref="def f(x):\n    return x\n")
    before = dict(module._DRAWN)
    drawn = module.with_hidden_tests(t, 20, seed=0, step=0, observe=_python_observer)
    assert drawn.metadata["hidden_tests"] == 23  # 20 drawn, 3 at the reference's reach
    assert before == module._DRAWN  # a later call without an observer runs the reference in the sandbox


def test_a_reference_too_slow_on_most_drawn_inputs_gets_another_pool_until_n_are_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An input the reference does not answer in time is no test (here: it refuses every
    input past 200, as a linear loop runs out of time past a million); where too few are
    left, further pools are drawn for the same step, up to TOP_UPS, the same each time."""
    import rlvr.rewards.hidden_tests as ht

    ref = "def f(x):\n    if not 0 <= x <= 200:\n        raise TimeoutError(x)\n    return x * x\n"
    t = _task(["assert f(0) == 0", "assert f(3) == 9", "assert f(17) == 289"], ref=ref)
    monkeypatch.setattr(ht, "TOP_UPS", 0)
    first = hidden_tests(t, seed=0, step=0, n=20, observe=_python_observer)
    monkeypatch.setattr(ht, "TOP_UPS", 2)
    topped = hidden_tests(t, seed=0, step=0, n=20, observe=_python_observer)
    assert len(first) < 20 <= len(topped)
    assert topped == hidden_tests(t, seed=0, step=0, n=20, observe=_python_observer)
    assert len(set(topped)) == len(topped)
