"""Test suites, split into what the sandbox may see (probes) and what it must not (checks).

A test suite in any format becomes a list of `Probe`s (an expression to evaluate in the
submission's namespace, or a stdin to feed a program) and a parallel list of `Check`s
(the expected value and how to compare). Only probes are sent into the sandbox; the
supervisor keeps the checks and compares the observed values with them. A submission
therefore cannot learn the expected outputs, and faking a result line cannot produce a
pass unless the faked value is the right answer.

Formats (the `TESTS.json` of `rlvr sandbox run`):
- `{"format": "assert", "tests": ["assert f(1) == 2", ...]}`: each assert is parsed;
  `EXPR <op> LITERAL` (any comparison against a literal, either side) and
  `math.isclose(EXPR, NUMBER, rel_tol=.., abs_tol=..)` send EXPR and compare outside;
  any other assert sends its whole expression and checks the truth of the observed
  value outside.
- `{"format": "call", "entry": "f", "cases": [{"args": [1], "expected": 2, "kwargs": {}}]}`:
  strict comparison (types must match: True is not 1, 1 is not 1.0), with optional
  `"tolerance"` (suite-wide or per case) for floats.
- `{"format": "script", "tests": ["code", ...]}`: each snippet runs after the submission
  (in its own fork) and passes when it completes without an exception. Its expectations
  are inside the sandbox, so unlike the formats above a submission that tampers with the
  harness could fake it; use it only for tests no other format can express.
- `{"format": "pytest", "source": "def test_x(): ...", "expected_tests": 3}` (or `"file"`,
  read by the caller): the submission is importable as module `solution`; pytest runs
  with plugins, conftest files and caches disabled; only `passed` counts (skip, xfail
  and xpass fail), and a run that collects a number of tests other than expected (counted
  from the file's `test_*` functions unless given) fails every test. Like `script`, the
  expectations are inside the sandbox. `"files": {"pkg/mod.py": "...", ...}` adds files
  (a repository's modules, data) to the work dir before pytest runs; paths are relative,
  without `..`, and may not replace the test file or the submission.
- `{"format": "stdio", "cases": [{"stdin": "...", "stdout": "..."}]}`: the program runs as
  a script once per case; stdout is compared exactly after trailing whitespace is
  stripped from every line and from the end, or by a named checker (`"checker": "tokens"`
  or `"float"`).

Held-out tests: every format but pytest takes `"held_out": [...]`, a second list shaped
like its first (asserts, snippets or cases). They run with the others, after them, and
are named `held_out/0`, `held_out/1`, ... in the results, never by their text, so a
result or a feedback message cannot show what they test. The environments reward them
apart and never quote them back (rlvr.envs.python_code).
"""

from __future__ import annotations

import ast
import json
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rlvr.tasks import pyparse
from rlvr.types import HELD_OUT


class SpecError(ValueError):
    """A test suite that cannot be run; the message names the test and the problem."""


@dataclass(frozen=True)
class Probe:
    """What runs inside the sandbox for one test."""

    name: str
    kind: str  # "expr" | "script" | "stdio" | "pytest"
    expr: str = ""
    stdin: str = ""
    files: str = ""  # pytest: extra files for the work dir, as a JSON object path -> text

    def to_wire(self) -> dict[str, str]:
        wire = {"name": self.name, "kind": self.kind, "expr": self.expr, "stdin": self.stdin}
        if self.files:
            wire["files"] = self.files
        return wire


@dataclass(frozen=True)
class Check:
    """How the supervisor judges one observed value; never sent into the sandbox."""

    kind: str  # "compare" | "truthy" | "strict" | "stdout" | "completes"
    expected: Any = None
    op: str = "=="
    tolerance: float | None = None
    checker: str = "exact"


@dataclass
class Suite:
    format: str
    probes: list[Probe] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    expected_tests: int | None = None  # pytest: the number of tests that must be collected


MAX_FILES_BYTES = 4 << 20
_RESERVED = {"solution.py", "test_solution.py"}


def _extra_files(files: Any) -> dict[str, str]:
    """Validate a pytest suite's extra files: relative paths inside the work dir."""
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise SpecError("'files' must be an object mapping relative paths to file contents (strings)")
    total = 0
    for path, text in files.items():
        parts = path.split("/")
        if not path or path.startswith("/") or "\\" in path or "\0" in path or any(p in ("", ".", "..") for p in parts):
            raise SpecError(f"files: {path!r} is not a plain relative path (no leading '/', '.', '..' or empty parts)")
        if path in _RESERVED:
            raise SpecError(f"files: {path!r} would replace the submission or the test file")
        total += len(text.encode())
    if total > MAX_FILES_BYTES:
        raise SpecError(f"files: {total} bytes in all, over the {MAX_FILES_BYTES} byte limit")
    return dict(files)


def count_pytest_tests(source: str) -> int:
    """test_* functions at module level and in Test* classes; parametrized tests cannot be
    counted from the source and need an explicit expected_tests."""
    tree = pyparse.parse(source)
    funcs: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            funcs.append(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            funcs += [
                n
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
            ]
    for f in funcs:
        if any("parametrize" in ast.unparse(d) for d in f.decorator_list):
            raise SpecError(f"{f.name} is parametrized: give 'expected_tests' explicitly")
    return len(funcs)


_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_SWAP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
    "is": lambda a, b: a is b or (a is None and b is None),
    "is not": lambda a, b: not (a is b or (a is None and b is None)),
}


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def parse_assert(test: str, index: int) -> tuple[Probe, Check]:
    name = test.strip()
    try:
        tree = pyparse.parse(test.strip())
    except SyntaxError as e:
        raise SpecError(f"test {index}: not valid Python: {e.msg}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        raise SpecError(f"test {index}: must be a single assert statement, got {name[:80]!r}")
    test_expr = tree.body[0].test
    if isinstance(test_expr, ast.Compare) and len(test_expr.ops) == 1:
        op = _OPS[type(test_expr.ops[0])]
        left, right = test_expr.left, test_expr.comparators[0]
        ok_r, val_r = _literal(right)
        if ok_r and not _literal(left)[0]:
            return Probe(name, "expr", expr=ast.unparse(left)), Check("compare", val_r, op)
        ok_l, val_l = _literal(left)
        if ok_l and op in _SWAP and not ok_r:
            return Probe(name, "expr", expr=ast.unparse(right)), Check("compare", val_l, _SWAP[op])
    close = _isclose(test_expr)
    if close is not None:
        expr, expected, tol = close
        return Probe(name, "expr", expr=expr), Check("strict", expected, tolerance=tol)
    if isinstance(test_expr, ast.UnaryOp) and isinstance(test_expr.op, ast.Not):
        return Probe(name, "expr", expr=ast.unparse(test_expr.operand)), Check("truthy", False)
    return Probe(name, "expr", expr=ast.unparse(test_expr)), Check("truthy", True)


def _isclose(node: ast.expr) -> tuple[str, float, float] | None:
    """(EXPR, expected, tolerance) of `math.isclose(EXPR, NUMBER[, rel_tol=R][, abs_tol=A])`
    (or a bare `isclose`): compared outside the sandbox within max(R, A) (R defaults to
    1e-9, as in math), so the expected number never enters it. None for any other shape."""
    if not (isinstance(node, ast.Call) and len(node.args) == 2):
        return None
    f = node.func
    named = (isinstance(f, ast.Name) and f.id == "isclose") or (
        isinstance(f, ast.Attribute) and f.attr == "isclose" and isinstance(f.value, ast.Name) and f.value.id == "math"
    )
    ok, expected = _literal(node.args[1])
    if not named or not ok or isinstance(expected, bool) or not isinstance(expected, int | float):
        return None
    if _literal(node.args[0])[0]:
        return None
    tols = {"rel_tol": 1e-9, "abs_tol": 0.0}
    for kw in node.keywords:
        ok, value = _literal(kw.value)
        if kw.arg not in tols or not ok or isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            return None
        tols[kw.arg] = float(value)
    return ast.unparse(node.args[0]), float(expected), max(tols.values())


_LIST_KEY = {"assert": "tests", "script": "tests", "call": "cases", "stdio": "cases"}


def is_held_out(test_name: str) -> bool:
    return test_name.startswith(HELD_OUT)


SECRET_MIN = 4  # shorter texts (a digit, a two-letter word) would blank honest error output


def held_out_texts(spec: dict[str, Any]) -> list[str]:
    """How the held-out tests' inputs may appear in a program's error output, longest
    first: an assert's calls and their arguments' source (a string argument's text bare
    too), a call case's arguments as Python writes them, a stdin case's input and its
    lines; each at least SECRET_MIN characters. What a program prints of its arguments
    is scrubbed from the feedback with these (rlvr.envs.python_code); a script snippet's
    inputs are code and are not listed."""
    out: set[str] = set()

    def literal(value: Any) -> None:
        out.add(repr(value))
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, list | tuple):
            out.add(str(value))

    for test in spec.get("held_out") or []:
        if isinstance(test, str) and spec.get("format") == "assert":
            try:
                tree = pyparse.parse(test)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Lambda):
                    out.add(ast.unparse(node))
                    for arg in node.args:
                        out.add(ast.unparse(arg))
                        if isinstance(arg, ast.Constant):
                            literal(arg.value)
                        for elt in arg.elts if isinstance(arg, ast.Tuple) else ():  # a state test's arguments
                            out.add(ast.unparse(elt))
                            if isinstance(elt, ast.Constant):
                                literal(elt.value)
        elif isinstance(test, dict) and "stdin" in test:
            text = str(test["stdin"])
            out.add(text.strip())
            out.update(line.strip() for line in text.splitlines())
        elif isinstance(test, dict) and "args" in test:
            for value in [*(test.get("args") or []), *(test.get("kwargs") or {}).values()]:
                literal(value)
    return sorted((t for t in out if len(t) >= SECRET_MIN), key=lambda t: (-len(t), t))


def visible_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The suite without its held-out tests (what a prompt or feedback may show)."""
    return {k: v for k, v in spec.items() if k != "held_out"}


def parse_suite(spec: dict[str, Any]) -> Suite:
    """Turn a TESTS.json object into probes and checks, or raise SpecError. Held-out
    tests come last, named `held_out/<i>`."""
    if not isinstance(spec, dict):
        raise SpecError(f"tests must be a JSON object, got {type(spec).__name__}")
    if "held_out" not in spec:
        return _parse_visible(spec)
    fmt = spec.get("format")
    key = _LIST_KEY.get(str(fmt))
    if key is None:
        raise SpecError(f"'held_out' is not supported for format {fmt!r}; valid: {', '.join(_LIST_KEY)}")
    held = spec["held_out"]
    if not isinstance(held, list) or not held:
        raise SpecError(f"'held_out' must be a non-empty list shaped like '{key}'")
    suite = _parse_visible(visible_spec(spec))
    try:
        extra = _parse_visible({**visible_spec(spec), key: held})
    except SpecError as e:
        raise SpecError(f"held_out: {e}") from None
    suite.probes += [replace(p, name=f"{HELD_OUT}{i}") for i, p in enumerate(extra.probes)]
    suite.checks += extra.checks
    return suite


def _parse_visible(spec: dict[str, Any]) -> Suite:
    fmt = spec.get("format")
    suite = Suite(format=str(fmt))
    if fmt == "assert":
        tests = spec.get("tests")
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise SpecError("format 'assert' needs 'tests': a list of assert statements as strings")
        for i, t in enumerate(tests):
            p, c = parse_assert(t, i)
            suite.probes.append(p)
            suite.checks.append(c)
    elif fmt == "script":
        tests = spec.get("tests")
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise SpecError("format 'script' needs 'tests': a list of code snippets as strings")
        for i, t in enumerate(tests):
            try:
                compile(t, f"test_{i}", "exec")
            except SyntaxError as e:
                raise SpecError(f"test {i}: not valid Python: {e.msg}") from None
            suite.probes.append(Probe(f"script {i}", "script", expr=t))
            suite.checks.append(Check("completes"))
    elif fmt == "pytest":
        source = spec.get("source")
        if not isinstance(source, str):
            raise SpecError("format 'pytest' needs 'source': the test file's text (or 'file' on the command line)")
        try:
            expected = spec.get("expected_tests")
            expected = int(expected) if expected is not None else count_pytest_tests(source)
        except SyntaxError as e:
            raise SpecError(f"the pytest file is not valid Python: {e.msg}") from None
        if expected < 1:
            raise SpecError("the pytest file has no tests")
        suite.expected_tests = expected
        files = _extra_files(spec.get("files", {}))
        suite.probes.append(Probe("pytest", "pytest", expr=source, files=json.dumps(files) if files else ""))
        suite.checks.append(Check("completes"))
    elif fmt == "call":
        entry = spec.get("entry")
        if not isinstance(entry, str) or not entry.isidentifier():
            raise SpecError("format 'call' needs 'entry': the name of the function to call")
        cases = spec.get("cases")
        if not isinstance(cases, list):
            raise SpecError("format 'call' needs 'cases': a list of {args, expected}")
        tol = spec.get("tolerance")
        for i, case in enumerate(cases):
            if not isinstance(case, dict) or "expected" not in case:
                raise SpecError(f"case {i}: needs 'expected' (and 'args')")
            args, kwargs = case.get("args", []), case.get("kwargs", {})
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise SpecError(f"case {i}: 'args' must be a list and 'kwargs' an object")
            call = f"{entry}(*{args!r}, **{kwargs!r})"
            label = f"{entry}({', '.join(repr(a) for a in args)})"
            suite.probes.append(Probe(label, "expr", expr=call))
            suite.checks.append(Check("strict", case["expected"], tolerance=case.get("tolerance", tol)))
    elif fmt == "stdio":
        cases = spec.get("cases")
        if not isinstance(cases, list):
            raise SpecError("format 'stdio' needs 'cases': a list of {stdin, stdout}")
        checker = str(spec.get("checker", "exact"))
        if checker not in STDOUT_CHECKERS:
            raise SpecError(f"unknown checker '{checker}'; valid: {', '.join(sorted(STDOUT_CHECKERS))}")
        for i, case in enumerate(cases):
            if not isinstance(case, dict) or not isinstance(case.get("stdout"), str):
                raise SpecError(f"case {i}: needs 'stdout' (a string) and optionally 'stdin'")
            stdin = case.get("stdin", "")
            if not isinstance(stdin, str):
                raise SpecError(f"case {i}: 'stdin' must be a string")
            suite.probes.append(Probe(f"case {i}", "stdio", stdin=stdin))
            case_checker = str(case.get("checker", checker))
            if case_checker not in STDOUT_CHECKERS:
                raise SpecError(f"case {i}: unknown checker '{case_checker}'; valid: {', '.join(STDOUT_CHECKERS)}")
            suite.checks.append(Check("stdout", case["stdout"], checker=case_checker))
    else:
        raise SpecError(f"unknown test format {fmt!r}; valid: assert, call, pytest, script, stdio")
    return suite


# ---- judging observed values (supervisor side) ----------------------------------------


def strict_equal(a: Any, b: Any, tol: float | None = None) -> bool:
    """Equality that also requires equal types (bool is not int, tuple is not list),
    except that with a tolerance an int and a float compare as numbers."""
    if tol is not None and isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, bool) or isinstance(b, bool):
            return type(a) is type(b) and a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(strict_equal(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k], tol) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _tokens(a: str, b: str) -> bool:
    return a.split() == b.split()


def _floats(a: str, b: str) -> bool:
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb, strict=True):
        try:
            if not math.isclose(float(x), float(y), rel_tol=1e-6, abs_tol=1e-6):
                return False
        except ValueError:
            if x != y:
                return False
    return True


STDOUT_CHECKERS: dict[str, Callable[[str, str], bool]] = {
    "exact": lambda a, b: _normalise(a) == _normalise(b),
    "tokens": _tokens,
    "float": _floats,
}


def judge(check: Check, observed: Any) -> tuple[bool, str]:
    """(passed, message) for one observed value, decided outside the sandbox."""
    try:
        if check.kind == "compare":
            ok = bool(OPERATORS[check.op](observed, check.expected))
            return ok, "" if ok else f"expected {check.op} {check.expected!r}, got {observed!r}"[:2000]
        if check.kind == "truthy":
            ok = bool(observed) is check.expected
            return ok, "" if ok else f"expected a {'true' if check.expected else 'false'} value, got {observed!r}"[
                :2000
            ]
        if check.kind == "strict":
            ok = strict_equal(observed, check.expected, check.tolerance)
            return ok, "" if ok else f"expected {check.expected!r}, got {observed!r}"[:2000]
        if check.kind == "completes":
            return True, ""
        if check.kind == "stdout":
            ok = STDOUT_CHECKERS[check.checker](str(observed), str(check.expected))
            return ok, "" if ok else f"stdout differs: expected {check.expected[:200]!r}, got {str(observed)[:200]!r}"
    except Exception as e:  # comparing builtins can still fail, e.g. '<' between str and int
        return False, f"comparison failed: {type(e).__name__}: {e}"[:2000]
    raise SpecError(f"unknown check kind {check.kind!r}")
