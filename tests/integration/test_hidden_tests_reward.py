"""Hidden tests drawn from the reference, in the reward (`reward.hidden_tests`): against
the real sandbox, a reply that special-cases the visible tests on top of a half-right
attempt earns exactly what the attempt earns, the reference earns 1, and a short training
run draws them every step (the same tests for the same seed and step). Only a full pass
of them pays (`reward.hidden_credit: all`) unless the share is asked for. The bundled C++,
JavaScript and data tasks draw theirs from their generators: 20 each, no constant passes
them, and every reference program passes its own."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from rlvr.config import RunConfig, load_config
from rlvr.envs.scoring import score_completion
from rlvr.rewards.hidden_tests import hidden_tests, with_hidden_tests
from rlvr.tasks import load_tasks
from rlvr.types import Task

ATTEMPT = "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n    return a\n"
SPECIAL = (
    "def fibonacci(n):\n"
    "    known = {0: 0, 1: 1, 2: 1, 3: 2, 7: 13, 10: 55, 20: 6765}\n"
    "    if n in known:\n        return known[n]\n"
    "    a, b = 0, 1\n    for _ in range(n - 1):\n        a, b = b, a + b\n    return a\n"
)


def _fib() -> Task:
    return next(t for t in load_tasks("bundled:python_functions") if t.id == "py/fibonacci")


def _completion(task: Task, code: str, cfg: RunConfig | None = None) -> float:
    r = score_completion(task, f"```python\n{code}```", cfg or RunConfig(reward={"hidden_tests": 0})).reward
    assert r is not None
    return float(r.components["completion"])


def test_special_cases_on_top_of_an_attempt_earn_nothing_beyond_the_attempt() -> None:
    task = _fib()
    drawn = with_hidden_tests(task, 20, seed=0, step=0)
    assert drawn.metadata["hidden_tests"] == 20 and drawn.tests["held_out"] != task.tests["held_out"]
    assert drawn.tests["tests"] == task.tests["tests"] and drawn.prompt == task.prompt  # the policy sees the same
    attempt, special = _completion(drawn, ATTEMPT), _completion(drawn, SPECIAL)
    assert special == attempt < 1.0  # the visible tests pay nothing: only the drawn ones count
    assert _completion(drawn, str(task.reference)) == 1.0
    # with the task's own held-out tests, the special cases pay (what this closes)
    assert _completion(task, SPECIAL) > _completion(task, ATTEMPT)
    # `rlvr score` with the defaults draws them itself (step 0)
    assert _completion(task, SPECIAL, RunConfig()) == _completion(task, ATTEMPT, RunConfig()) < 1.0


def test_only_a_full_pass_of_the_drawn_tests_pays_unless_credit_is_the_share() -> None:
    """reward.hidden_credit: a half-right algorithm (exact up to n = 12, then stuck) earns
    what a plain wrong program earns under 'all', the default; under 'share' it earns more:
    the gradient that pays partial algorithms which fit the examples."""
    task = _fib()
    partial = (
        "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(min(n, 12)):\n        a, b = b, a + b\n    return a\n"
    )
    wrong = "def fibonacci(n):\n    return n\n"
    share = RunConfig(reward={"hidden_credit": "share"})
    assert _completion(task, partial, RunConfig()) == _completion(task, wrong, RunConfig()) == 0.0
    assert _completion(task, partial, share) > _completion(task, wrong, share) > 0.0
    assert _completion(task, str(task.reference), RunConfig()) == _completion(task, str(task.reference), share) == 1.0
    r = score_completion(task, f"```python\n{partial}```", RunConfig()).reward
    assert r is not None and 0.0 < r.components["tests_held_out"] < 1.0  # the share is still logged


def test_a_reply_that_fails_a_visible_example_earns_nothing_whatever_the_draw_missed() -> None:
    """Blind set 3's finding: the drawn tests alone made the completion, so a reply that
    crashed on the one example the task shows ([] gives '') and passed every drawn input
    (none of them empty) earned 1.0. Under 'all' a full pass now means the visible tests
    too; 'share' still pays the drawn tests' share."""
    task = next(t for t in load_tasks("bundled:python_functions") if t.id == "py/longest_common_prefix")
    shortest_first = (
        "def longest_common_prefix(words):\n    p = min(words, key=len)\n    for w in words:\n"
        "        while not w.startswith(p):\n            p = p[:-1]\n    return p\n"
    )
    r = score_completion(task, f"```python\n{shortest_first}```", RunConfig()).reward
    assert r is not None
    d = r.details["completion"]
    assert d["held_out_passed"] == d["held_out_total"] >= 20  # every drawn test passes
    assert d["visible_passed"] == d["visible_total"] - 1  # longest_common_prefix([]) raises
    assert r.components["completion"] == 0.0
    share = score_completion(task, f"```python\n{shortest_first}```", RunConfig(reward={"hidden_credit": "share"}))
    assert share.reward is not None and share.reward.components["completion"] == 1.0
    assert _completion(task, str(task.reference), RunConfig()) == 1.0


def test_the_same_seed_and_step_draw_the_same_tests() -> None:
    task = _fib()
    assert hidden_tests(task, seed=3, step=5) == hidden_tests(task, seed=3, step=5)
    assert hidden_tests(task, seed=3, step=5) != hidden_tests(task, seed=3, step=6)
    assert with_hidden_tests(task, 0, seed=3, step=5) is task


def test_a_training_run_draws_hidden_tests_each_step(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rlvr.train.loop import train

    cfg = load_config(
        None,
        [
            "model.name_or_path=tiny-random", "tasks.source=bundled:python_functions", "train.steps=2",
            "train.prompts_per_step=2", "algo.group_size=2", "generation.max_new_tokens=8",
            "eval.before_training=false", "eval.after_training=false", "reward.hidden_tests=20",
            f"output_dir={tmp_path}", "name=hidden",
        ],
    )  # fmt: skip
    train(cfg, quiet=True)
    from rlvr.trace.query import query

    run = str(tmp_path / "hidden" / "traces")
    _, rows = query(run, "SELECT step, count(*), count(DISTINCT name) FROM tests WHERE held_out GROUP BY step")
    # each step: its trajectories ran the drawn tests (a float-valued task, drawn
    # nothing, would keep its own 3: the bundled set has 5 of 308)
    # (every drawn input: 20 x 3, and the task's own held-out ones; fewer where the
    # reference rejects some)
    # (and one at the reference's reach for each ladder grown from the examples)
    assert sorted(r[0] for r in rows) == [1, 2] and all(20 <= r[2] <= 64 + 26 and r[1] >= 40 for r in rows), rows


def test_a_function_task_keeps_its_drawn_inputs_up_to_the_max_the_cover_ordering_them() -> None:
    from rlvr.rewards.hidden_tests import for_step
    from rlvr.sandbox import execute

    task = next(t for t in load_tasks("bundled:python_functions") if t.id == "py/add_numbers")
    base = hidden_tests(task, seed=0, step=0)  # no maximum: exactly 20 drawn
    more = hidden_tests(task, seed=0, step=0, most=40)
    every = hidden_tests(task, seed=0, step=0, most=64)
    # and after them, the same tail: three at the reference's reach (both integers of 1,024
    # to 8,192 bits: random, multiples of 30,030, 2**b +- 1), then the examples' half-way
    # twins (the prompt never calls x and y integers)
    tail = base[20:]
    assert more[40:] == every[-len(tail) :] == tail
    reached = [t for t in tail if not t.startswith("assert math.isclose(")]
    assert len(reached) == 3 and all(t.startswith("assert add_numbers(") for t in reached)
    for line in reached:
        call = ast.parse(line).body[0].test.left  # type: ignore[attr-defined]
        assert max(abs(ast.literal_eval(a)).bit_length() for a in call.args) >= 1024
    twins = tail[3:]
    assert len(twins) >= 4 and all(".5" in t for t in twins)
    assert len(base) == 20 + len(tail) and len(more) == 40 + len(tail) and more[:20] == base[:20]
    assert 60 + len(tail) <= len(every) <= 64 + len(tail) and every[:40] == more[:40]
    assert len(set(every)) == len(every)
    assert execute(str(task.reference), {"format": "assert", "tests": every}).passed == len(every)
    reward = RunConfig().reward  # the defaults: every drawn input
    assert for_step(task, reward, seed=0, step=0).tests["held_out"] == every
    capped = RunConfig(reward={"hidden_tests_max": 0}).reward
    assert for_step(task, capped, seed=0, step=0).tests["held_out"] == base
    cpp = load_tasks("bundled:programs_cpp")[0]  # a process per case: stays at 20
    assert len(for_step(cpp, reward, seed=0, step=0).tests["held_out"]) == 20


def test_stdio_and_data_tasks_draw_from_their_generators_and_the_references_pass() -> None:
    from rlvr.rewards.hidden_tests import constant_passes
    from rlvr.sandbox import execute

    for name in ("programs_cpp", "programs_javascript", "data_analysis"):
        for task in load_tasks(f"bundled:{name}"):
            drawn = with_hidden_tests(task, 20, seed=1, step=4)
            held = drawn.tests["held_out"]
            assert drawn.metadata["hidden_tests"] == 20 and len(held) == 20, task.id
            assert not constant_passes(held), task.id
            assert not {c["stdin"] for c in held} & {c["stdin"] for c in task.tests["cases"]}, task.id
            assert held == with_hidden_tests(task, 20, seed=1, step=4).tests["held_out"]  # fixed by seed and step
            if task.reference:  # C++ and JavaScript: the generator's solver agrees with the reference program
                result = execute(str(task.reference), drawn.tests, language=str(task.metadata["language"]))
                assert result.total == len(task.tests["cases"]) + 20, task.id
                assert result.passed == result.total, (task.id, result.status, result.error[-300:])


def test_a_task_without_a_reference_or_held_out_tests_splits_its_own() -> None:
    from rlvr.rewards.hidden_tests import split_own_tests

    tests = [f"assert f({i}) == {i}" for i in range(9)]
    task = Task(id="u/1", domain="python", prompt="p", tests={"format": "assert", "tests": tests}, entry_point="f")
    split = with_hidden_tests(task, 20, seed=0, step=3)
    assert split == with_hidden_tests(task, 20, seed=0, step=4)  # the same ones stay hidden every step
    assert split.metadata["held_out_split"] == 3 and sorted(split.tests["tests"] + split.tests["held_out"]) == tests
    few = Task(**{**task.__dict__, "tests": {"format": "assert", "tests": tests[:3]}})
    assert split_own_tests(few, seed=0) is few  # three tests are too few to hide one
    r = score_completion(task, "```python\ndef f(x):\n    return x\n```", RunConfig()).reward
    assert r is not None and r.details["completion"]["held_out_total"] == 3 and r.total == 1.0


def test_the_drawers_load_without_the_generators_the_sandbox_or_the_environments() -> None:
    import subprocess
    import sys

    code = (
        "import sys, random\n"
        "from rlvr.tasks import load_tasks\n"
        "from rlvr.tasks.draws import draw_cases\n"
        "for name in ('programs_cpp', 'data_analysis'):\n"
        "    assert draw_cases(load_tasks(f'bundled:{name}')[0], random.Random(0), 3)\n"
        "banned = ('rlvr.sandbox', 'rlvr.envs', 'rlvr.tasks.generators', 'torch')\n"
        "bad = sorted(m for m in sys.modules if m.startswith(banned))\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_float_valued_tasks_draw_tolerance_tests_the_reference_and_other_orders_pass() -> None:
    task = next(t for t in load_tasks("bundled:python_functions") if t.id == "py/average")
    drawn = with_hidden_tests(task, 20, seed=0, step=0)
    # 20 drawn, the example list repeated to 16,384 numbers, and each example's half-way
    # twins (a list of numbers: never called integers); the prompt says nothing of the
    # list's state after a call, so no test of it
    held = drawn.tests["held_out"]
    assert drawn.metadata["hidden_tests"] == len(held) > 21 and all("math.isclose(average(" in t for t in held)
    assert "] * " in held[20] and all(".5" in t for t in held[21:])
    cfg = RunConfig()
    assert _completion(task, str(task.reference), cfg) == 1.0
    other_order = "def average(xs):\n    return sum(sorted(xs, reverse=True)) / len(xs)\n"
    assert _completion(task, other_order, cfg) == 1.0
    assert _completion(task, "def average(xs):\n    return sum(xs) // len(xs)\n", cfg) < 1.0


NARROW = """#include <iostream>
#include <unordered_map>
int main() { int n; long long k; std::cin >> n >> k; std::unordered_map<long long, int> seen; int pairs = 0;
for (int i = 0; i < n; ++i) { long long x; std::cin >> x; pairs += seen[k - x]; ++seen[x]; }
std::cout << pairs << "\\n"; }
"""


def test_an_accumulator_too_narrow_for_the_statements_largest_input_fails_the_drawn_tests() -> None:
    from rlvr.sandbox import execute

    task = next(t for t in load_tasks("bundled:programs_cpp") if t.id == "cpp/pair_count")
    visible = execute(NARROW, {"format": "stdio", "cases": task.tests["cases"]}, language="cpp")
    assert visible.passed == visible.total  # every shown case is small
    drawn = with_hidden_tests(task, 20, seed=0, step=0).tests["held_out"]
    assert max(len(c["stdin"]) for c in drawn) > 100_000  # n = 10^5, all values equal: 4999950000 pairs
    result = execute(NARROW, {"format": "stdio", "cases": drawn}, language="cpp")
    assert result.passed < result.total


def test_a_patch_that_hides_a_repair_tasks_shown_failure_meets_the_bug_in_the_drawn_tests() -> None:
    # the buggy to_roman has 41 for 40; replacing 'XXXX' by 'XL' fixes 40 (the shown
    # failure) and not 41-49: the drawn set kills the buggy program (rlvr.rewards.alternates)
    task = next(t for t in load_tasks("bundled:code_repair") if t.id == "repair/to_roman")
    patched = str(task.metadata["buggy"]).replace("    return out\n", "    return out.replace('XXXX', 'XL')\n")
    env: dict = {}  # type: ignore[type-arg]
    exec(patched, env)
    for step in range(4):
        tests = hidden_tests(task, seed=0, step=step)
        failed = 0
        for line in tests:
            try:
                exec(line, dict(env))
            except AssertionError:
                failed += 1
        assert failed, step


def test_no_repair_tasks_unrepaired_program_passes_its_drawn_tests() -> None:
    # before the buggy program became an alternate whose kill is guaranteed, 12 of 193
    # passed every drawn test at seed 0, step 0 (a boundary bug such as `x >= 0` for
    # `x > 0`, whose one exposing input is visible; is_prime's squares of primes)
    from rlvr.sandbox import execute

    passing = []
    for task in load_tasks("bundled:code_repair"):
        tests = hidden_tests(task, seed=0, step=0)
        spec = {"format": "assert", "tests": tests}
        if task.tests.get("prelude"):
            spec["prelude"] = task.tests["prelude"]
        result = execute(str(task.metadata["buggy"]), spec)
        if tests and result.passed == result.total:
            passing.append(task.id)
    assert passing == []


def test_draws_do_not_depend_on_the_modules_a_process_loaded_and_leave_no_files(tmp_path: Path) -> None:
    """hypothesis would mix literals from every local module loaded into its draws, and
    cache them under ./.hypothesis: the same draws with a module of odd literals loaded
    or not, and nothing written where the process runs."""
    (tmp_path / "odd_literals.py").write_text("A = [987654321, -55555, 'zqzqzq', 31337]\n")
    code = (
        "import json, sys\nsys.path.insert(0, '.')\n"
        "if sys.argv[1] == 'load':\n    import odd_literals\n"
        "from rlvr.rewards.hidden_tests import draw_inputs\nfrom rlvr.tasks.loader import load_tasks\n"
        "tasks = [t for t in load_tasks('bundled:python_functions') if t.id in ('py/add_2', 'py/second_largest')]\n"
        "print(json.dumps([repr(draw_inputs(t, seed=3, step=s)) for t in tasks for s in range(6)]))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, mode], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True
        ).stdout
        for mode in ("plain", "load")
    ]
    assert runs[0] == runs[1] and len(json.loads(runs[0])) == 12
    assert not (tmp_path / ".hypothesis").exists()


def test_running_out_of_time_on_held_out_inputs_only_fails_those_tests_not_the_run() -> None:
    """A program slow on the large inputs the draw reaches (here: one that spins on n > 25)
    is scored with those tests failed, under the per-test limit (`sandbox.test_timeout_s`),
    not given `reward.timeout_penalty`; one that runs out of time on a shown example keeps
    the penalty."""
    task = _fib()
    slow_past_25 = (
        "def fibonacci(n):\n    while n > 25:\n        pass\n"
        "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    )
    hangs_on_shown = "def fibonacci(n):\n    while n == 20:\n        pass\n    return fibonacci_ok(n)\n" + (
        "def fibonacci_ok(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    )
    fixed = RunConfig(reward={"hidden_tests": 0, "held_out_weight": 0.5}, sandbox={"test_timeout_s": 0.5})
    r = score_completion(task, f"```python\n{slow_past_25}```", fixed)
    assert r.reward is not None and r.execution is not None
    assert r.execution.status.value == "TIMEOUT" and r.reward.details["completion"]["held_out_timeouts"] == 1
    # visible all pass (0.5), held-out 12 and 5 pass and 30 times out: 0.5 + 0.5 * 2/3
    assert abs(r.reward.components["completion"] - (0.5 + 0.5 * 2 / 3)) < 1e-9
    assert _completion(task, hangs_on_shown, fixed) == -0.5
    drawn = RunConfig(reward={"hidden_credit": "share"}, sandbox={"test_timeout_s": 0.2, "timeout_s": 30})
    assert 0.0 < _completion(task, slow_past_25, drawn) < 1.0  # the drawn inputs at most 25 still pay


def test_changing_the_callers_list_when_asked_for_a_new_one_fails_the_drawn_tests() -> None:
    """square_all's prompt asks for a new list and its reference makes one: in the real
    sandbox, squaring the caller's list in place and returning it passes every value test
    and fails the drawn test of the list's state after the call."""
    task = next(t for t in load_tasks("bundled:python_functions") if t.id == "py/square_all")
    cfg = RunConfig()
    drawn = with_hidden_tests(task, 20, seed=0, step=0)
    state = [t for t in drawn.tests["held_out"] if t.startswith("assert (lambda _a: (square_all(*_a), _a)[1])")]
    assert len(state) == 1
    in_place = "def square_all(lst):\n    for i, x in enumerate(lst):\n        lst[i] = x * x\n    return lst\n"
    new = "def square_all(lst):\n    return [x * x for x in lst]\n"
    assert _completion(task, new, cfg) == 1.0
    assert _completion(task, in_place, cfg) == 0.0
    share = RunConfig(reward={"hidden_credit": "share"})  # every other drawn test passes: the state one does not
    assert 0.9 < _completion(task, in_place, share) < 1.0
