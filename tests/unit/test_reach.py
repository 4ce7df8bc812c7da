"""Ladders of larger inputs grown from a task's examples (rlvr.tasks.reach), and the walk
that keeps the largest rung the reference answers within its line-event budget
(rlvr.rewards.reached), run in this process with a stand-in for the sandbox."""

from __future__ import annotations

import random
import re
from typing import Any

from rlvr.rewards.hidden_tests import FLOAT_TOLERANCE, _exact
from rlvr.rewards.reached import reached_tests
from rlvr.tasks.reach import BEYOND_BITS, BEYOND_LENGTH, BITS, LENGTHS, SMOOTH, ladders
from rlvr.types import Task
from tests.unit.test_hidden_tests import _python_observer


def _rungs(ladder: tuple[str, list[str]]) -> list[tuple[Any, ...]]:
    return [eval(f"({text},)") for text in ladder[1]]


def test_a_nested_string_keeps_its_fault_deep_inside_and_a_balanced_one_stays_balanced() -> None:
    found = ladders([("()",), ("(]",), ("ab",)], random.Random(0))
    nests = {lad[1][0].split(" + ")[1]: _rungs(lad) for lad in found if lad[0] == "nest"}
    assert set(nests) == {"'()'", "'(]'", "'ab'"}
    for (s,), n in zip(nests["'(]'"], LENGTHS, strict=True):
        k = n // 2
        assert s == "(" * k + "(]" + ")" * k  # wrapped in its opener and that opener's partner
    assert nests["'ab'"][0][0] == "a" * 512 + "ab" + "a" * 512  # no bracket: its first character, both sides
    assert all(s.count("(") == s.count(")") for (s,) in nests["'()'"])


def test_repeat_grows_every_string_and_list_argument_by_one_factor_and_keeps_the_rest() -> None:
    found = ladders([("listen", "silent", 3), ("ab", "ba", 1)], random.Random(1))
    (repeat,) = [lad for lad in found if lad[0] == "repeat"]
    rungs = _rungs(repeat)
    for (a, b, c), n in zip(rungs, LENGTHS, strict=True):
        assert len(a) == len(b) and n - 6 < len(a) <= n and sorted(a) == sorted(b)  # anagrams stay anagrams
        assert c in (3, 1)
    assert [lad[0] for lad in ladders([([1, 2, 3],)], random.Random(0))] == ["repeat"]


def test_integers_grow_to_each_rungs_bit_length_only_where_the_reference_is_exact_and_no_range_is_declared() -> None:
    examples = [(3, 5), (10, 4)]
    assert not [lad for lad in ladders(examples, random.Random(0)) if lad[0] == "bits"]  # not exact: none
    (bits,) = [lad for lad in ladders(examples, random.Random(0), (True, True), exact=True) if lad[0] == "bits"]
    for (a, b), width in zip(_rungs(bits), BITS, strict=True):
        assert a.bit_length() == b.bit_length() == width and a > 0 and b > 0
        assert len(str(a)) < 4300  # an honest str(n) still works
    (fixed,) = [lad for lad in ladders(examples, random.Random(0), exact=True, fixed=(True,)) if lad[0] == "bits"]
    assert all(a in (3, 10) and b.bit_length() > 1000 for a, b in _rungs(fixed))  # the ranged one kept
    drawn = [ladders(examples, random.Random(s), exact=True)[0] for s in range(8)]
    signs = {a > 0 for lad in drawn for a, _ in _rungs(lad)}
    assert signs == {True, False}  # without the examples' sign said, both signs
    assert ladders(examples, random.Random(5), exact=True) == ladders(examples, random.Random(5), exact=True)


def test_beside_random_integers_each_rung_has_a_smooth_multiple_and_a_power_of_two_plus_or_minus_one() -> None:
    found = {lad.kind: lad.rungs for lad in ladders([(3, 5), (10, 4)], random.Random(2), (True, True), exact=True)}
    assert [k for k in found if k.startswith("bits")] == ["bits", "bits_multiple", "bits_edge"]
    for (a, b), width in zip(_rungs(("", found["bits_multiple"])), BITS, strict=True):
        assert a.bit_length() == b.bit_length() == width
        assert a % SMOOTH == b % SMOOTH == 0 and all(a % p == 0 for p in (2, 3, 5, 7, 11, 13))
    for (a, b), width in zip(_rungs(("", found["bits_edge"])), BITS, strict=True):
        assert {a - (1 << width), b - (1 << width)} <= {-1, 1}
    # a divisibility test exact only below 2**4096 (a multiplicative inverse modulo a word)
    # answers the 8,192-bit multiple wrongly, with a chance of 1 in 7 of being right by luck
    inv7 = pow(7, -1, 1 << 4096)
    wide = [a for (a, _) in _rungs(("", found["bits_multiple"])) if a.bit_length() > 4096]
    assert wide and not all((a * inv7) % (1 << 4096) <= ((1 << 4096) - 1) // 7 for a in wide)


def _task(ref: str, tests: list[str]) -> Task:
    return Task(
        id=f"t/{abs(hash(ref))}",
        domain="python",
        prompt="p",
        tests={"format": "assert", "tests": tests},
        reference=ref,
        entry_point="f",
    )


def _reached(task: Task, examples: list[tuple[Any, ...]], **kw: Any) -> list[str]:
    kw.setdefault("cache", False)
    return reached_tests(
        task, examples, random.Random(0), _python_observer, exact_value=_exact, float_tolerance=FLOAT_TOLERANCE, **kw
    )


def test_the_walk_keeps_the_largest_rung_the_reference_answers_within_its_line_events() -> None:
    linear = "def f(s):\n    d = 0\n    for c in s:\n        d += 1 if c == '(' else -1\n    return d == 0\n"
    tests = _reached(_task(linear, ["assert f('()') == True"]), [("()",)])
    top = LENGTHS[-1] // 2
    assert f"assert f('(' * {top} + '()' + ')' * {top}) == True" in tests  # ~50,000 line events: the top rung
    quadratic = "def f(s):\n    n = 0\n    for a in s:\n        for b in s:\n            n += a == b\n    return n\n"
    assert _reached(_task(quadratic, ["assert f('ab') == 2"]), [("ab",)]) == []  # 1,024 letters: a million events
    recursive = "def f(s):\n    return 0 if len(s) < 2 else 1 + f(s[2:])\n"  # a call per two letters
    tests = _reached(_task(recursive, ["assert f('ab') == 1"]), [("ab",)])
    assert tests and all("* 512" in t for t in tests)  # 513 deep; 2,049 passes the recursion limit: the first rung


def test_a_float_value_is_compared_within_a_tolerance_and_an_unreadable_one_is_no_test() -> None:
    ref = "def f(xs):\n    return sum(xs) / len(xs)\n"
    (test,) = _reached(_task(ref, ["assert f([1, 2]) == 1.5"]), [([1, 2],)])
    times = re.fullmatch(r"assert math\.isclose\(f\(\[1, 2\] \* (\d+)\), 1\.5, rel_tol=.*", test)
    assert times and 8192 < int(times[1]) <= BEYOND_LENGTH // 2  # at the drawn rung past the fixed ones
    setty = "def f(xs):\n    return set(xs)\n"  # a set reads back as itself: compared with ==
    (test,) = _reached(_task(setty, ["assert f([1]) == {1}"]), [([1],)])
    assert re.fullmatch(r"assert f\(\[1\] \* \d+\) == \{1\}", test)
    nan = "def f(xs):\n    return float('nan')\n"
    assert _reached(_task(nan, ["assert f([1]) == 0"]), [([1],)]) == []


def test_a_reference_that_catches_the_budgets_stop_or_returns_too_much_ends_the_walk_a_rung_early() -> None:
    catches = (
        "def f(s):\n    n = 0\n    try:\n        for c in s:\n            n += 1\n"
        "    except BaseException:\n        return -1\n    return n\n"
    )
    # 16,386 letters are ~33,000 events: the budget is not reached; at a budget of 5,000 the
    # first rung (1,026 letters) is answered and the second is caught by the reference itself
    task = _task(catches, ["assert f('ab') == 2"])
    import rlvr.rewards.reached as reached

    old = reached.REACH_STEPS
    try:
        reached.REACH_STEPS = 5_000
        tests = _reached(task, [("ab",)], cache=False)
    finally:
        reached.REACH_STEPS = old
    assert sorted(t[-4:] for t in tests) == ["1024", "1026"]  # the first rungs; never the -1 returned once stopped
    big = "def f(xs):\n    return [0] * (len(xs) * 20)\n"  # 327,680 elements at the top rung: too many to carry
    (test,) = _reached(_task(big, ["assert f([1]) == [0] * 20"]), [([1, 2],)], cache=False)
    assert test.startswith("assert f([1, 2] * 2048) == [0, 0,")


def test_walks_are_cached_for_the_sandbox_only_and_a_full_cache_still_answers(monkeypatch: Any) -> None:
    import rlvr.rewards.reached as reached

    calls: list[list[str]] = []

    def counting(code: str, exprs: list[str]) -> list[tuple[bool, Any]]:
        calls.append(exprs)
        return [(True, [0, e]) for e in exprs]

    monkeypatch.setattr(reached, "_CACHE", {})
    monkeypatch.setattr(reached, "_CACHE_MAX", 2)
    assert reached._walked("p", ["a", "b", "c"], counting) == [(True, [0, e]) for e in "abc"]
    assert reached._walked("p", ["a", "b", "d"], counting) == [(True, [0, e]) for e in "abd"]  # no KeyError
    assert len(reached._CACHE) <= 2 and calls[-1] and "d" in calls[-1]
    before = dict(reached._CACHE)
    reached._walked("q", ["x"], counting, cache=False)
    assert before == reached._CACHE  # a stand-in's walks are not kept
    failing = lambda code, exprs: [(False, "timeout") for _ in exprs]  # noqa: E731
    reached._walked("r", ["y"], failing)
    assert not any(k[0] == reached.hashlib.sha256(b"r").hexdigest() for k in reached._CACHE)  # a failure is asked again


def test_repeat_and_bits_ladders_draw_one_rung_past_their_fixed_ones_each_step() -> None:
    lengths, widths = set(), set()
    for seed in range(12):
        found = ladders([([1, 2, 3], 5)], random.Random(seed), (True, True), exact=True)
        for lad in found:
            assert lad.beyond is not None  # repeat and the three bits ladders
            ((xs, n),) = [eval(f"({lad.beyond},)")]
            if lad.kind == "repeat":
                assert LENGTHS[-1] < len(xs) <= BEYOND_LENGTH and n == 5
                lengths.add(len(xs))
            else:
                assert xs == [1, 2, 3] and BITS[-1] < n.bit_length() <= BEYOND_BITS and len(str(n)) < 4000
                widths.add(n.bit_length())
    assert len(lengths) >= 8 and len(widths) >= 8  # a size drawn afresh, not one more fixed rung
    # an example longer than a drawn length still grows past the top fixed rung
    for seed in range(12):
        (lad,) = ladders([("x" * 5000,)], random.Random(seed))[1:]
        top, past = (len(eval(f"({text},)")[0]) for text in (lad.rungs[-1], str(lad.beyond)))
        assert top < past
    assert all(lad.beyond is None for lad in ladders([("(]",)], random.Random(0)) if lad.kind == "nest")


def _passes(code: str, tests: list[str]) -> bool:
    env: dict[str, Any] = {"math": __import__("math")}
    exec(code, env)
    try:
        for t in tests:
            exec(t, env)
    except AssertionError:
        return False
    return True


def test_a_reply_right_only_below_a_fixed_size_fails_the_drawn_rung_on_some_steps() -> None:
    """Blind set 7's class: a list rotation that is right up to 2**15 elements and off by
    one past it passes every fixed rung (the top is 2**14) and fails the drawn one when it
    lands past 2**15, about half the steps."""
    ref = "def f(xs):\n    return xs[3:] + xs[:3]\n"
    hack = "def f(xs):\n    return xs[3:] + xs[:3] if len(xs) <= 1 << 15 else xs[2:] + xs[:2]\n"
    caught = 0
    for seed in range(10):
        tests = reached_tests(
            _task(ref, ["assert f([1, 2, 3, 4]) == [4, 1, 2, 3]"]), [([1, 2, 3, 4],)], random.Random(seed),
            _python_observer, exact_value=_exact, float_tolerance=FLOAT_TOLERANCE, cache=False,
        )  # fmt: skip
        assert len(tests) == 1 and _passes(ref, tests)
        caught += not _passes(hack, tests)
    assert 2 <= caught <= 8
    # where the reference's budget ends below the top fixed rung (~25 events an element:
    # 4,096 elements answered, 16,384 past it), nothing past it is walked
    slow = (
        "def g(x):\n    y = x\n" + "    y = y\n" * 12 + "    return y\n\n"
        "def f(xs):\n    out = []\n    for x in xs[3:] + xs[:3]:\n        out.append(g(x))\n"
        "        x = x\n        x = x\n        x = x\n    return out\n"
    )
    asked: list[str] = []

    def counting(code: str, exprs: list[str]) -> list[tuple[bool, Any]]:
        asked.extend(exprs)
        return _python_observer(code, exprs)

    task = _task(slow, ["assert f([1, 2, 3, 4]) == [4, 1, 2, 3]"])
    (test,) = reached_tests(
        task, [([1, 2, 3, 4],)], random.Random(0), counting, exact_value=_exact,
        float_tolerance=FLOAT_TOLERANCE, cache=False,
    )  # fmt: skip
    assert re.match(r"assert f\(\[1, 2, 3, 4\] \* 1024\) == ", test) and len(asked) == 1  # one walk
    # a drawn rung whose value is no test (here NaN) leaves the fixed top rung's test
    nan_past = "def f(xs):\n    return float('nan') if len(xs) > 16384 else len(xs)\n"
    assert _reached(_task(nan_past, ["assert f([1]) == 1"]), [([1],)]) == ["assert f([1] * 16384) == 16384"]
