"""Hidden tests drawn fresh from a task's reference: inputs the policy has never seen,
expected values computed by running the reference in the sandbox (issue 33, part 1).

For a function task whose visible tests are `assert ENTRY(args) == LITERAL`, each
argument's kind and range are read from the example calls (the visible ones, and the
task's own held-out ones where it has them): integers, floats, booleans, strings (over
the examples' characters), lists and tuples of these, None. `hypothesis` draws new
argument tuples within those ranges, derandomised from `(seed, step, task id)` with no
deadline and no example database, so a run's hidden tests are the same on every
machine and a resumed run draws what the uninterrupted one drew. Inputs equal to a
visible one are dropped; the reference's value for each input comes from
`rlvr.sandbox.api.observe` and is cached by the reference's hash and the call's text. An
input the reference rejects (raises, takes over REFERENCE_SECONDS) is not a test; nor is
one whose value holds a float inside a container or does not survive `repr` ->
`literal_eval`. A value that is a float is compared within a tolerance (`assert
math.isclose(CALL, VALUE, rel_tol=1e-09, abs_tol=1e-09)`, judged outside the sandbox like
any other assert): an equality on floats would fail honest code that sums in another
order. (Besides drawing, this module also serves tasks whose generator draws: see
`rlvr.tasks.draws`.)

The pool of inputs is drawn by `rlvr.rewards.draw_pool`; this module keeps those the
reference answers, orders them by what they exercise and adds the tests beside them: at
the reference's reach (`rlvr.rewards.reached`), the examples' half-way twins
(`rlvr.rewards.float_twins`), the arguments' state after a call
(`rlvr.rewards.argument_state`).

`hidden_tests(task, seed=, step=)` returns the assert statements (at most max(`n`,
`most`) drawn inputs, then the tests beside them), or [] where nothing can be drawn (no
reference, tests of another shape, arguments of a kind not handled): such a task keeps
its own held-out tests.
`with_hidden_tests` puts them in a task's place of held-out tests for one step, and
`for_step` does so as a run's reward config asks (`reward.hidden_tests`,
`reward.hidden_tests_max`; the producer calls it as it calls the canary draw).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import math
import random
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlvr.rewards.alternates import alternate_programs, buggy_program, kills
from rlvr.rewards.argument_state import is_state_test, stance, state_test
from rlvr.rewards.draw_pool import (  # noqa: F401  (draw_inputs, example_calls: this module's API too)
    DEFAULT_COUNT,
    _signs,
    call_args,
    draw_candidates,
    draw_inputs,
    draw_seed,
    example_calls,
    reference_code,
)
from rlvr.rewards.exactness import integer_exact
from rlvr.rewards.float_twins import float_twins
from rlvr.rewards.input_features import HELD, features
from rlvr.rewards.reached import REACH_SECONDS, reached_tests
from rlvr.rewards.selection import select_covering
from rlvr.rewards.strategies import (  # noqa: F401  (MAGNITUDE_DIGITS, WIDEN: read by tests)
    MAGNITUDE_DIGITS,
    WIDEN,
    NotDrawable,
    strategy_for,
)
from rlvr.tasks import pyparse
from rlvr.tasks.draws import draw_cases, drawer_kind
from rlvr.tasks.neighbours import statement
from rlvr.types import Task

if TYPE_CHECKING:
    from rlvr.config import RewardConfig

Observer = Callable[[str, list[str]], list[tuple[bool, Any]]]
FLOAT_TOLERANCE = "rel_tol=1e-09, abs_tol=1e-09"  # a float answer: honest code may sum in another order
KILL_SECONDS = 10.0  # one input's alternates, all of them: a timer that a busy machine never reaches
REFERENCE_SECONDS = 0.1  # an input the reference takes longer on is not a test (bench/hidden_tests.py: worst run)
TOP_UPS = 2  # further pools drawn while fewer than `n` inputs have the reference's value
_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str], tuple[bool, Any]] = {}
_DRAWN: dict[tuple[str, str, int, int | None, int, int], list[Any]] = {}  # (task, its content, n, most, seed, step)
_DRAWN_MAX = 4096


def _exact(value: Any) -> bool:
    """No float anywhere in it, and its repr reads back as itself."""

    def no_float(v: Any) -> bool:
        if isinstance(v, float):
            return False
        if isinstance(v, list | tuple | set | frozenset):
            return all(no_float(x) for x in v)
        if isinstance(v, dict):
            return all(no_float(k) and no_float(x) for k, x in v.items())
        return True

    if not no_float(value):
        return False
    try:
        back = pyparse.literal(repr(value))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return bool(back == value and type(back) is type(value))


def reference_values(task: Task, calls: list[str], observe: Observer) -> list[tuple[bool, Any]]:
    """The reference's value of each call, from the cache or the sandbox."""
    code = reference_code(task)
    key = hashlib.sha256(code.encode()).hexdigest()
    with _LOCK:
        missing = [c for c in calls if (key, c) not in _CACHE]
    if missing:
        got = observe(code, missing)
        with _LOCK:
            for c, v in zip(missing, got, strict=True):
                _CACHE[(key, c)] = v
    with _LOCK:
        return [_CACHE[(key, c)] for c in calls]


def hidden_tests(
    task: Task,
    *,
    seed: int,
    step: int,
    n: int = DEFAULT_COUNT,
    most: int | None = None,
    observe: Observer | None = None,
) -> list[Any]:
    """Tests on inputs drawn for (seed, step): at most `n` cases from the task's own
    generator where it names one (`metadata.draw`, stdin/stdout tasks: a process each),
    else assert statements with the reference's values on up to max(`n`, `most`) of the
    POOL x `n` inputs drawn (and the task's own held-out ones), in the order
    `select_covering` picks them, then one for each ladder of larger inputs at the
    largest rung the reference answers (`rlvr.rewards.reached`); [] when the task cannot
    have them (see the module's docstring)."""
    if drawer_kind(task) is not None:
        rng = random.Random(draw_seed(task.id, seed, step))
        return _one_per_answer(_by_answer(draw_cases(task, rng, n)), n)
    if not task.reference:
        return []
    try:
        drawn = draw_candidates(task, seed=seed, step=step, n=n)
    except NotDrawable:
        return []
    # the alternates get a generous timer: which inputs kill them is bounded by line
    # events, not seconds (rlvr.rewards.alternates), so that a busy machine draws the same
    kill_observe = observe or _sandbox_observer(KILL_SECONDS)
    reach_observe = observe or _sandbox_observer(REACH_SECONDS, isolation="process")
    observe = observe or _sandbox_observer(REFERENCE_SECONDS)
    # the task's own held-out inputs (secret too) come last: a second answer for the
    # sets whose drawn inputs all share one (a boolean whose other answer was visible),
    # and each one a feature of its own, so that every step keeps them (the task's author
    # chose them: a run of ten, a middle word that limits a prefix)
    visible, held = example_calls(task)
    shown = {repr(a) for a in visible} | {repr(a) for a, _ in drawn}
    held_keys = {repr(a) for a in held}
    drawn = [(a, HELD if repr(a) in held_keys else origin) for a, origin in drawn]
    pool = drawn + [(a, HELD) for a in held if repr(a) not in shown]
    kept = _answered(task, pool, observe)
    for attempt in range(1, TOP_UPS + 1):  # the reference too slow on (or refusing) too many: another pool
        if len(kept) >= n or len(kept) == len(pool):  # enough, or all the inputs there are
            break
        more = draw_candidates(task, seed=seed, step=step, n=n, attempt=attempt)
        more = [(a, origin) for a, origin in more if repr(a) not in shown and repr(a) not in held_keys]
        shown |= {repr(a) for a, _ in more}
        kept += _answered(task, more, observe)
    if not kept:
        return []
    raw = _kills(task, [k[0] for k in kept], seed=seed, step=step, observe=kill_observe)
    examples = visible + [a for a in held if len(a) == len(visible[0])]
    feats = features(
        [(args, origin, value) for args, origin, value, _ in kept],
        examples,
        _example_answers(task, examples),
        _informative(raw),
    )
    picks = select_covering(feats, max(n, most or 0), minor=_is_answer)
    tests = [kept[i][3] for i in picks]
    buggy = buggy_program(task)  # alternate 0 where there is one
    if buggy is not None and tests and not any(0 in raw[i] for i in picks):
        tests = _with_bug_shown(tests, task, buggy, visible, kill_observe)
    tests += _reached(task, examples, seed=seed, step=step, observe=reach_observe, cache=observe is None)
    said = statement(task.prompt)  # a repair prompt's "What it should do:", not its code
    twins = float_twins(said, examples, _signs(task, examples), _declared(task))  # halves beside integers
    tests += [k[3] for k in _answered(task, [(a, -1) for a in twins], observe)]
    tests = _with_second_answer(tests, task)  # (the state test's value is the arguments, not an answer)
    values = lambda calls: reference_values(task, calls, observe)  # noqa: E731
    state = state_test(str(task.entry_point), [kept[i][0] for i in picks], values, _exact, stance(said))
    return [*tests, state] if state else tests


def _reached(
    task: Task, examples: list[tuple[Any, ...]], *, seed: int, step: int, observe: Observer, cache: bool
) -> list[str]:
    """A test for each ladder of larger inputs, at the largest rung the reference answers
    (rlvr.rewards.reached): an int argument with a declared range is never grown."""
    from rlvr.sandbox.api import SandboxFailure

    said = task.metadata.get("integer_exact")
    exact = said if isinstance(said, bool) else integer_exact(reference_code(task))
    fixed = _declared(task)
    rng = random.Random(draw_seed(task.id, seed, step) ^ 0x4EAC)
    try:
        return reached_tests(
            task, examples, rng, observe, nonneg=_signs(task, examples), exact=exact, fixed=fixed,
            exact_value=_exact, float_tolerance=FLOAT_TOLERANCE, cache=cache,
        )  # fmt: skip
    except SandboxFailure:
        return []


def _declared(task: Task) -> tuple[bool, ...]:
    """For each argument: whether the task declares its range (`metadata.arg_ranges`: the
    integers its tests may draw, never grown nor moved between integers)."""
    return tuple(bool(r) for r in task.metadata.get("arg_ranges") or [])


def _answered(
    task: Task, pool: list[tuple[tuple[Any, ...], int]], observe: Observer
) -> list[tuple[tuple[Any, ...], int, Any, str]]:
    """(args, origin, the reference's value, the test) for each input of `pool` that the
    reference answers in time with a value a test can compare."""
    entry = str(task.entry_point)
    calls = [f"{entry}({', '.join(repr(a) for a in args)})" for args, _ in pool]
    kept = []
    for (args, origin), call, (ok, value) in zip(pool, calls, reference_values(task, calls, observe), strict=True):
        if ok and _exact(value):
            kept.append((args, origin, value, f"assert {call} == {value!r}"))
        elif ok and type(value) is float and math.isfinite(value):  # compared within a tolerance, outside
            kept.append((args, origin, value, f"assert math.isclose({call}, {value!r}, {FLOAT_TOLERANCE})"))
    return kept


def _is_answer(feature: Any) -> bool:
    return isinstance(feature, tuple) and feature[:1] == ("answer",)


def _sandbox_observer(test_seconds: float, isolation: str = "shared") -> Observer:
    from rlvr.sandbox.api import observe as sandbox_observe
    from rlvr.sandbox.executor import Limits

    limits = Limits(timeout_s=60.0, test_timeout_s=test_seconds, test_isolation=isolation)

    def observe(code: str, exprs: list[str]) -> list[tuple[bool, Any]]:
        return sandbox_observe(code, exprs, limits)

    return observe


def _with_bug_shown(
    tests: list[Any], task: Task, buggy: str, visible: list[tuple[Any, ...]], observe: Observer
) -> list[Any]:
    """A repair task whose drawn inputs all miss its bug (the buggy program, alternate 0,
    answers every one right: squares of primes for a trial division that stops one short)
    would pay the unrepaired program in full; its last drawn test gives way to the first
    visible test the buggy program fails, as `_with_second_answer` does for a constant."""
    from rlvr.sandbox.api import SandboxFailure

    shown = [str(t) for t in task.tests.get("tests") or [] if isinstance(t, str)]
    entry = str(task.entry_point)
    by_args = {repr(a): line for line in shown if (a := call_args(line, entry)) is not None}
    try:
        found = kills(task, visible, [buggy], observe)
    except SandboxFailure:
        return tests
    for args, killed in zip(visible, found, strict=True):
        line = by_args.get(repr(args))
        if 0 in killed and line is not None:
            return [*tests[:-1], line]
    return tests


def _kills(
    task: Task, inputs: list[tuple[Any, ...]], *, seed: int, step: int, observe: Observer
) -> list[frozenset[int]]:
    """Which alternates of the reference each input kills (rlvr.rewards.alternates); none
    known where the sandbox could not run them."""
    from rlvr.sandbox.api import SandboxFailure

    try:
        return kills(task, inputs, alternate_programs(task, draw=draw_seed(task.id, seed, step)), observe)
    except SandboxFailure:
        return [frozenset() for _ in inputs]


def _informative(killed: list[frozenset[int]]) -> list[frozenset[int]]:
    """The kills of alternates that at most half of the inputs kill: one that nearly every
    input kills (a dropped return, a flipped base case) says nothing about which to keep."""
    counts: dict[int, int] = {}
    for ks in killed:
        for j in ks:
            counts[j] = counts.get(j, 0) + 1
    rare = {j for j, c in counts.items() if 2 * c <= len(killed)}
    return [ks & rare for ks in killed]


def _example_answers(task: Task, examples: list[tuple[Any, ...]]) -> dict[str, str]:
    """repr(argument tuple) -> repr(expected value), for the examples whose expected value
    is a literal (visible tests, then the task's held-out ones)."""
    out: dict[str, str] = {}
    entry = str(task.entry_point)
    for line in [*task.tests.get("tests", []), *task.tests.get("held_out", [])]:
        args = call_args(str(line), entry)
        if args is None:
            continue
        node = pyparse.parse(str(line).strip()).body[0]
        assert isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
        try:
            want = ast.literal_eval(node.test.comparators[0])
        except (ValueError, TypeError, SyntaxError, RecursionError):
            continue
        out.setdefault(repr(args), repr(want))
    return out


def _with_second_answer(tests: list[Any], task: Task) -> list[Any]:
    """`tests`, or where one constant passes them all, with its last test replaced by a
    visible one whose answer differs: the one exception to drawn inputs being new, for a
    task whose other answer has no input but a visible one (`is_empty`: only [] is empty).
    Under all-or-nothing credit a constant would otherwise earn full marks."""
    if not tests or not constant_passes(tests):
        return tests
    for shown in task.tests.get("tests") or []:
        if isinstance(shown, str) and shown.startswith("assert ") and not constant_passes([*tests[:-1], shown]):
            return [*tests[:-1], shown]
    return tests


def _answer(case: dict[str, Any]) -> str:
    """A stdin/stdout case's expected output, whitespace-normalised."""
    return " ".join(str(case.get("stdout", "")).split())


def _by_answer(cases: list[dict[str, str]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for c in cases:
        out.setdefault(_answer(c), []).append(c)
    return out


def _one_per_answer(by_value: dict[str, list[Any]], n: int) -> list[Any]:
    """One test per distinct answer in turn, so that no constant passes the set where the
    drawn inputs have more than one answer (a boolean function's rarer answer included)."""
    out: list[Any] = []
    queues = [list(q) for q in by_value.values()]
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def constant_passes(tests: list[Any]) -> bool:
    """Whether one constant answer passes every test (all expected values equal): assert
    statements' right-hand sides, or stdin/stdout cases' outputs; a state test
    (`rlvr.rewards.argument_state`) is left out."""
    expected = set()
    for t in tests:
        if isinstance(t, dict):
            expected.add(_answer(t))
            continue
        if is_state_test(t):  # its expected value is the arguments: a constant program may pass it
            continue
        node = pyparse.parse(t).body[0]
        assert isinstance(node, ast.Assert)
        if isinstance(node.test, ast.Call):  # math.isclose(CALL, NUMBER, ...)
            expected.add(ast.unparse(node.test.args[1]))
            continue
        assert isinstance(node.test, ast.Compare)
        expected.add(ast.unparse(node.test.comparators[0]))
    return len(expected) <= 1


SPLIT_MIN = 4  # a task needs this many tests of its own before a share of them is held out


def split_own_tests(task: Task, *, seed: int) -> Task:
    """A task with neither a reference, a drawer nor held-out tests of its own, with a
    third of its tests (at least one; fixed by the run's seed and the task's id, so the
    same ones stay hidden across steps) moved to `tests.held_out`; the task itself when
    it has fewer than SPLIT_MIN tests or nothing to split."""
    spec = task.tests
    if spec.get("format") not in ("assert", "stdio", "call"):  # a repository's suite keeps its own split
        return task
    key = "tests" if spec.get("format") == "assert" else "cases"
    own = spec.get(key)
    if spec.get("held_out") or not isinstance(own, list) or len(own) < SPLIT_MIN:
        return task
    order = list(range(len(own)))
    random.Random(draw_seed(task.id, seed, -1)).shuffle(order)
    hide = set(order[: max(1, len(own) // 3)])
    shown = [t for i, t in enumerate(own) if i not in hide]
    held = [t for i, t in enumerate(own) if i in hide]
    metadata = {**task.metadata, "held_out_split": len(held)}
    return dataclasses.replace(task, tests={**spec, key: shown, "held_out": held}, metadata=metadata)


def with_hidden_tests(
    task: Task, n: int, *, seed: int, step: int, most: int | None = None, observe: Observer | None = None
) -> Task:
    """The task for one step of a run with `reward.hidden_tests = n` (and
    `reward.hidden_tests_max = most`): the tests drawn for (seed, step) in place of its
    held-out ones (`metadata.hidden_tests` says how many: the environment then pays
    their share alone); where nothing can be drawn, a task without
    a reference or held-out tests has its own tests split (`split_own_tests`); otherwise,
    or when `n` is 0, the task itself."""
    if n <= 0:
        return task
    blob = json.dumps([task.tests, task.reference, task.entry_point, task.metadata], sort_keys=True, default=str)
    key = (task.id, hashlib.sha256(blob.encode()).hexdigest(), n, most, seed, step)
    with _LOCK:
        drawn = _DRAWN.get(key) if observe is None else None  # cached for the sandbox's values only
    if drawn is None:
        drawn = hidden_tests(task, seed=seed, step=step, n=n, most=most, observe=observe)
        if observe is None:
            with _LOCK:
                if len(_DRAWN) >= _DRAWN_MAX:
                    _DRAWN.pop(next(iter(_DRAWN)))
                _DRAWN[key] = drawn
    if not drawn:
        return task if task.reference else split_own_tests(task, seed=seed)
    metadata = {**task.metadata, "hidden_tests": len(drawn)}
    return dataclasses.replace(task, tests={**task.tests, "held_out": drawn}, metadata=metadata)


def for_step(task: Task, reward: RewardConfig, *, seed: int, step: int) -> Task:
    """`with_hidden_tests` as a run with this reward config and seed draws them at `step`
    (the producer, `rlvr score`, rejection sampling and calibration all call this)."""
    return with_hidden_tests(task, reward.hidden_tests, seed=seed, step=step, most=reward.hidden_tests_max)
