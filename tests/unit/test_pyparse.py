"""Python source is parsed one thread at a time (rlvr.tasks.pyparse): CPython 3.11's AST
constructor keeps its recursion depth in interpreter-wide state, and two threads
converting trees at once failed a clean-clone CI run with "AST constructor recursion
depth mismatch" while the rollout runner scored groups in threads."""

import re
import threading
from collections.abc import Callable
from pathlib import Path

from rlvr.rewards.hacks import detect_hacks
from rlvr.tasks import pyparse

RLVR = Path(__file__).resolve().parents[2] / "rlvr"


def test_no_module_calls_ast_parse_directly() -> None:
    direct = [
        f"{p.relative_to(RLVR.parent)}:{i}"
        for p in sorted(RLVR.rglob("*.py"))
        if p.name != "pyparse.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bast\.parse\(|from ast import .*\bparse\b", line)
        # literal_eval of a string (not of a node) parses too
        or re.search(r"\bliteral_eval\((repr|str)\(|\bliteral_eval\(f?[\"']", line)
    ]
    assert not direct, f"parse through rlvr.tasks.pyparse.parse (or .literal for a string): {direct}"


def _from_threads(call: Callable[[], object], times: int, threads: int = 6) -> list[object]:
    """`call()` `times` times in each of `threads` threads at once; every result, or the
    first errors raised."""
    errors: list[BaseException] = []
    out: list[object] = []

    def work() -> None:
        try:
            for _ in range(times):
                out.append(call())
        except BaseException as e:
            errors.append(e)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not errors, errors[:3]
    return out


def test_threads_scoring_at_once_all_get_their_trees() -> None:
    tests = {
        "format": "assert",
        "tests": [f"assert f({'[' * 20}{i}{']' * 20}) == {i}" for i in range(6)],
    }
    code = "def f(x):\n" + "".join(f"    if x == {'[' * 20}{i}{']' * 20}:\n        return {i}\n" for i in range(6))
    found = _from_threads(lambda: {f.name for f in detect_hacks(code, tests)}, 40)
    assert len(found) == 240 and all(names == found[0] for names in found)
    assert "hardcoded_tests" in found[0]  # type: ignore[operator]
    assert pyparse.parse("x = 1").body[0].targets[0].id == "x"
    assert pyparse.parse("1 + 2", mode="eval").body.op.__class__.__name__ == "Add"


def test_literals_are_read_under_the_lock_from_threads() -> None:
    text = repr([[i, (i, "x" * i), {i: [None, True]}] for i in range(30)])
    values = _from_threads(lambda: pyparse.literal(text), 60)
    assert len(values) == 360 and all(v == values[0] for v in values) and pyparse.literal(" [1, 2]") == [1, 2]


def test_parameter_names_reads_the_named_functions_positional_parameters() -> None:
    from rlvr.tasks.pyparse import parameter_names

    src = "import math\n\ndef helper(z):\n    return z\n\ndef f(a, b=2, /, c=3, *rest, d):\n    return a\n"
    assert parameter_names(src, "f") == ["a", "b", "c"]
    assert parameter_names(src, "g") == [] and parameter_names("def f(:", "f") == []
