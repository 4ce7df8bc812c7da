"""The pool of new inputs drawn for a function task (issue 33, part 1): the examples'
argument tuples read from its assert tests, and `hypothesis` drawing new ones within
their kinds and ranges, derandomised from `(seed, step, task id)` with no deadline and no
example database; half near an example (`rlvr.tasks.neighbours`), some reordered, a
quarter of a known shape (`rlvr.tasks.shapes`, one of every kind first). Which of them
become tests, with the reference's values, is `rlvr.rewards.hidden_tests`."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import random
from typing import Any

from rlvr.rewards.exactness import integer_exact
from rlvr.rewards.strategies import NotDrawable, strategy_for, without_local_constants
from rlvr.tasks import pyparse
from rlvr.tasks.neighbours import neighbour, nonnegative, reordered, said_nonnegative
from rlvr.tasks.shapes import covering, shaped
from rlvr.types import Task

DEFAULT_COUNT = 20
POOL = 3  # inputs drawn per `n`: the kept ones (all, by default) in the cover's order (rlvr.rewards.selection)


def example_calls(task: Task) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(visible argument tuples, the task's held-out argument tuples) of `assert
    ENTRY(literal args) == literal` tests. NotDrawable when a visible test has another shape."""
    tests = task.tests
    if tests.get("format") != "assert" or not task.entry_point:
        raise NotDrawable("not an assert-format function task")

    def calls(lines: list[Any], strict: bool) -> list[tuple[Any, ...]]:
        out = []
        for line in lines:
            args = call_args(str(line), str(task.entry_point))
            if args is None:
                if strict:
                    raise NotDrawable(f"a visible test is not ENTRY(literals) == literal: {str(line)[:60]!r}")
                continue
            out.append(args)
        return out

    return calls(list(tests.get("tests", [])), True), calls(list(tests.get("held_out", [])), False)


def call_args(line: str, entry: str) -> tuple[Any, ...] | None:
    try:
        tree = pyparse.parse(line.strip())
    except SyntaxError:
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    call = node.test.left
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == entry) or call.keywords:
        return None
    try:
        return tuple(ast.literal_eval(a) for a in call.args)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def draw_inputs(
    task: Task, *, seed: int, step: int, n: int = DEFAULT_COUNT, shaped_inputs: bool = True
) -> list[tuple[Any, ...]]:
    """Up to POOL * `n` new argument tuples for the task, the same for the same (seed, step, task)."""
    return [args for args, _ in draw_candidates(task, seed=seed, step=step, n=n, shaped_inputs=shaped_inputs)]


def draw_candidates(
    task: Task, *, seed: int, step: int, n: int = DEFAULT_COUNT, shaped_inputs: bool = True, attempt: int = 0
) -> list[tuple[tuple[Any, ...], int]]:
    """Up to POOL * `n` new argument tuples, each with where it came from: the index of the
    example (visible calls, then the task's held-out ones) it is an edit of, or -1 for a
    fresh draw. The same for the same (seed, step, task). `shaped_inputs` False draws no
    input of a known shape (rlvr.tasks.shapes): the draws made before shapes existed,
    which the bundled test-writing set was generated from. One draw at a time in a
    process: hypothesis calls `ast.parse` itself (rlvr.tasks.pyparse). `attempt` > 0 draws
    another pool for the same step (the reference too slow on too many of the first)."""
    with pyparse.exclusive():
        return _draw_candidates(task, seed=seed, step=step, n=n, shaped_inputs=shaped_inputs, attempt=attempt)


def _draw_candidates(
    task: Task, *, seed: int, step: int, n: int, shaped_inputs: bool = True, attempt: int = 0
) -> list[tuple[tuple[Any, ...], int]]:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fix_seed
    from hypothesis import strategies as st

    without_local_constants()
    visible, held = example_calls(task)
    if not visible:
        raise NotDrawable("no visible calls")
    arity = {len(a) for a in visible + held}
    if len(arity) != 1:
        raise NotDrawable("the calls take different numbers of arguments")
    examples = visible + [a for a in held if len(a) == len(visible[0])]
    need = n + len(visible) + 2
    ranges = task.metadata.get("arg_ranges") or []

    def arg_strategy(i: int) -> Any:
        values = [a[i] for a in examples]
        bound = ranges[i] if i < len(ranges) else None
        if bound and all(type(v) is int for v in values):  # the task says which integers it must handle
            return st.integers(int(bound[0]), int(bound[1]))
        return strategy_for(values, need, exact)

    # past 2**52 only where the reference is exact there (the task's word, where reading the
    # code cannot tell), and never for the draws made before shapes existed
    said = task.metadata.get("integer_exact")
    exact = shaped_inputs and (said if isinstance(said, bool) else integer_exact(reference_code(task)))
    width = len(visible[0])
    nonneg = _signs(task, examples) if shaped_inputs else nonnegative(examples)  # the older draws: as they were
    fresh = st.tuples(*(arg_strategy(i) for i in range(width))).map(lambda args: (args, -1))
    # half of the draws are near an example (rlvr.tasks.neighbours): its structure kept,
    # one or two small edits across the boundary a rule fitted to the examples draws
    near = st.tuples(st.integers(0, len(examples) - 1), st.integers(0, 2**32 - 1)).map(
        lambda pair: (neighbour(examples[pair[0]], random.Random(pair[1]), nonneg), pair[0])
    )
    # and some are an example's elements in another order (the order an answer depends on)
    shuffled = st.tuples(st.integers(0, len(examples) - 1), st.integers(0, 2**32 - 1)).map(
        lambda pair: (reordered(examples[pair[0]], random.Random(pair[1]), nonneg), pair[0])
    )
    # and some have a shape random draws almost never take (rlvr.tasks.shapes): a square
    # past the examples, a run of ten, a near-palindrome, brackets crossed away from their
    # openers, a pair with a large common factor, checksum twins, a deeper nesting
    shape = st.tuples(st.integers(0, len(examples) - 1), st.integers(0, 2**32 - 1)).map(
        lambda pair: (shaped(examples[pair[0]], examples, random.Random(pair[1]), nonneg, exact), -1)
    )
    if shaped_inputs:
        strategy = st.one_of(fresh, near, shuffled, fresh, near, shuffled, shape, shape)  # a quarter shaped
    else:
        strategy = fresh | near | shuffled
    seen = {repr(a) for a in visible}
    found: list[tuple[tuple[Any, ...], int]] = []

    def in_range(args: tuple[Any, ...]) -> bool:
        for i, bound in enumerate(ranges[:width]):
            if bound and type(args[i]) is int and not int(bound[0]) <= args[i] <= int(bound[1]):
                return False
        return True

    # one input of every shaped kind first (all of them, up to the whole pool: two string
    # arguments have ~50 kinds, and a cap at two thirds left the last ones, the
    # 2,048-letter Thue-Morse words, out), then Hypothesis fills the rest of the pool
    if shaped_inputs:
        rng = random.Random(draw_seed(task.id, seed, step, attempt) ^ 0x5EED)
        cap = n * POOL
        for args in covering(examples, rng, nonneg, exact):
            if repr(args) not in seen and in_range(args) and len(found) < cap:
                seen.add(repr(args))
                found.append((args, -1))

    @fix_seed(draw_seed(task.id, seed, step, attempt))
    @settings(
        max_examples=n * POOL * 3,
        database=None,
        deadline=None,
        derandomize=False,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(drawn: tuple[tuple[Any, ...], int]) -> None:
        if len(found) >= n * POOL:  # also when Hypothesis replays the draw that filled it
            raise _Full
        args, origin = drawn
        key = repr(args)
        if key not in seen and in_range(args):
            seen.add(key)
            found.append((args, origin))
        if len(found) >= n * POOL:
            raise _Full

    # the draws after the pool filled were thrown away anyway: stopping is the same set, sooner
    with contextlib.suppress(_Full):
        collect()
    return found


def _signs(task: Task, examples: list[tuple[Any, ...]]) -> tuple[bool, ...]:
    """For each argument: whether drawn values stay at 0 or above. Where every example's
    is (`nonnegative`), an integer argument stays there only if the prompt says so
    (`said_nonnegative`) or its declared range starts at 0 or above (`metadata.arg_ranges`);
    lists and tuples keep their examples' sign."""
    seen = nonnegative(examples)
    names = pyparse.parameter_names(str(task.reference or ""), str(task.entry_point))
    said = said_nonnegative(task.prompt, names) if len(names) == len(seen) else (True,) * len(seen)
    ranges = task.metadata.get("arg_ranges") or []
    ranged = [i < len(ranges) and bool(ranges[i]) and int(ranges[i][0]) >= 0 for i in range(len(seen))]
    ints = [all(type(e[i]) is int for e in examples) for i in range(len(seen))]
    return tuple(s and (said[i] or ranged[i] or not ints[i]) for i, s in enumerate(seen))


class _Full(Exception):
    """Raised inside the Hypothesis loop once the pool holds enough draws."""


def draw_seed(task_id: str, seed: int, step: int, attempt: int = 0) -> int:
    key = f"{seed}:{step}:{task_id}" + (f":{attempt}" if attempt else "")
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def reference_code(task: Task) -> str:
    prelude = task.tests.get("prelude")
    ref = str(task.reference or "")
    return f"{prelude.rstrip()}\n\n{ref}" if isinstance(prelude, str) and prelude.strip() else ref
