"""Hard-coded answers found by what the code maps, not by the shape it is written in.

A lookup of the visible tests' answers can be written many ways: a dict keyed by the
inputs (or by `str`, `repr` or `json.dumps` of them, or by the argument tuple, written
as literals or as `repr(...)` calls of literals), an if/elif chain or `match` whose
branches return literals (`x == 5`, `x == 5 or x == 6`, `x in (5, 6)`), conditional
expressions, membership in a constant collection (`return s in KNOWN`: each member
answers True), two parallel lists indexed together. Module constants bound once are read
through their names. `mappings(tree)` reads every such construct as pairs (key literal,
value literal); `matched_cases` says which visible cases (inputs, expected output) some
pair maps, whatever the rendering of the key. The caller
(`rlvr.rewards.hacks.detect_hacks`) decides what counts as hard-coding.
"""

from __future__ import annotations

import ast
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

Pair = tuple[Any, Any, int]  # (key, value, line)


def _lit(node: ast.AST | None) -> tuple[bool, Any]:
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None


_FOLDED_CALLS: dict[str, Callable[[Any], Any]] = {
    "repr": repr,
    "str": str,
    "tuple": tuple,
    "list": list,
    "set": set,
    "frozenset": frozenset,
    "sorted": sorted,
    "json.dumps": json.dumps,
}


class Literals:
    """Literal values of expressions: literals, module constants bound once to a literal,
    and `repr`/`str`/`tuple`/`frozenset`/`json.dumps`/... of a literal (keys written as
    `repr([[1, 2]])` are as constant as the text they make)."""

    def __init__(self, tree: ast.AST) -> None:
        bound: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        bound.setdefault(t.id, []).append(node.value)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
                bound.setdefault(node.target.id, []).append(node.value or node.target)
        self.consts: dict[str, Any] = {}
        for name, values in bound.items():
            if len(values) == 1:
                ok, v = self(values[0])
                if ok:
                    self.consts[name] = v

    def __call__(self, node: ast.AST | None) -> tuple[bool, Any]:
        if node is None:
            return False, None
        if isinstance(node, ast.Name) and node.id in getattr(self, "consts", {}):
            return True, self.consts[node.id]
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            fname = ast.unparse(node.func) if isinstance(node.func, ast.Name | ast.Attribute) else ""
            if fname in _FOLDED_CALLS:
                ok, v = self(node.args[0])
                if ok:
                    try:
                        return True, _FOLDED_CALLS[fname](v)
                    except (TypeError, ValueError, RecursionError):
                        return False, None
            return False, None
        return _lit(node)


def _cond_keys(test: ast.AST, lit: Literals) -> list[Any]:
    """The literal keys a condition tests for: `x == 5` -> [5], `(a, b) == (3, 4)` ->
    [(3, 4)], `a == 3 and b == 4` -> [(3, 4)], `x == 5 or x == 6` and `x in (5, 6)` ->
    [5, 6]; [] when it is not a test of equality with literals."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            ok, v = lit(right)
            if not ok:
                ok, v = lit(test.left)
            return [v] if ok else []
        if isinstance(op, ast.In):
            ok, v = lit(right)
            if ok and isinstance(v, list | tuple | set | frozenset):
                return list(v)
        return []
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        parts = [_cond_keys(v, lit) for v in test.values]
        if parts and all(len(p) == 1 for p in parts):
            return [tuple(p[0] for p in parts)]
        return []
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        parts = [_cond_keys(v, lit) for v in test.values]
        return [k for p in parts for k in p] if all(parts) else []
    return []


def _returned(body: list[ast.stmt], lit: Literals) -> tuple[bool, Any]:
    """The literal a branch returns (or prints) right away."""
    for stmt in body:
        if isinstance(stmt, ast.Return):
            return lit(stmt.value)
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name)
            and stmt.value.func.id == "print"
            and len(stmt.value.args) == 1
        ):
            return lit(stmt.value.args[0])
        if not isinstance(stmt, ast.Expr | ast.Pass):  # something computed first: not a lookup
            return False, None
    return False, None


def _membership(node: ast.Return, lit: Literals) -> list[tuple[Any, bool]]:
    """`return x in KNOWN` (a literal collection): each member answers True (False for
    `not in`)."""
    v = node.value
    if isinstance(v, ast.Compare) and len(v.ops) == 1 and isinstance(v.ops[0], ast.In | ast.NotIn):
        ok, coll = lit(v.comparators[0])
        if ok and isinstance(coll, list | tuple | set | frozenset) and not isinstance(v.left, ast.Constant):
            answer = isinstance(v.ops[0], ast.In)
            return [(k, answer) for k in coll]
    return []


def mappings(tree: ast.AST) -> list[Pair]:
    """Every (key, value) pair the code maps by literals, with its line."""
    lit = Literals(tree)
    pairs: list[Pair] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                ok_k, kv = lit(k)
                ok_v, vv = lit(v)
                if ok_k and ok_v:
                    pairs.append((kv, vv, getattr(k, "lineno", 0)))
        elif isinstance(node, ast.If):
            ok_v, value = _returned(node.body, lit)
            if ok_v:
                pairs += [(key, value, node.lineno) for key in _cond_keys(node.test, lit)]
        elif isinstance(node, ast.IfExp):
            ok_v, value = lit(node.body)
            if ok_v:
                pairs += [(key, value, node.lineno) for key in _cond_keys(node.test, lit)]
        elif isinstance(node, ast.Match):
            for case in node.cases:
                key = _pattern(case.pattern)
                ok_v, value = _returned(case.body, lit)
                if key is not None and ok_v:
                    pairs.append((key[0], value, case.pattern.lineno))
        elif isinstance(node, ast.Return):
            pairs += [(k, answer, node.lineno) for k, answer in _membership(node, lit)]
    pairs += list(_parallel_lists(tree))
    return pairs


def _pattern(p: ast.pattern) -> tuple[Any] | None:
    if isinstance(p, ast.MatchValue):
        ok, v = _lit(p.value)
        return (v,) if ok else None
    if isinstance(p, ast.MatchSingleton):
        return (p.value,)
    if isinstance(p, ast.MatchSequence):
        parts = [_pattern(q) for q in p.patterns]
        return (tuple(x[0] for x in parts),) if parts and all(x is not None for x in parts) else None  # type: ignore[index]
    return None


def _parallel_lists(tree: ast.AST) -> Iterator[Pair]:
    """Two list literals of the same length (two or more) in one scope, read as keys and
    values pairwise, both ways round: `ins = [...]; outs = [...]; outs[ins.index(x)]`."""
    lists: list[tuple[list[Any], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            ok, v = _lit(node.value)
            if ok and len(v) >= 2:
                lists.append((list(v), node.lineno))
    for i, (a, line) in enumerate(lists):
        for b, _ in lists[i + 1 :]:
            if len(a) == len(b):
                for k, v in zip(a, b, strict=True):
                    yield (k, v, line)
                    yield (v, k, line)


_TRIVIAL_LITERALS: tuple[Any, ...] = (0, 1, -1, 2, "", None, True, False, (), [], {})


def nontrivial(value: Any) -> bool:
    """Whether a value is more than a base case's (0, 1, -1, 2, '', None, a bool, empty)."""
    try:
        return not any(type(value) is type(t) and value == t for t in _TRIVIAL_LITERALS)
    except Exception:
        return True


def renderings(args: list[Any]) -> list[Any]:
    """Ways code may key a case by its inputs: the value (one argument), the tuple or list
    of arguments, and their str / repr / json text."""
    out: list[Any] = [tuple(args), list(args)]
    if len(args) == 1:
        out.append(args[0])
    for v in list(out):
        out += [str(v), repr(v)]
        with contextlib.suppress(TypeError, ValueError):
            out.append(json.dumps(v))
    return out


def same(a: Any, b: Any) -> bool:
    try:
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def matched_cases(pairs: list[Pair], cases: list[tuple[list[Any], Any]]) -> dict[int, int]:
    """Index of each visible case some pair maps (its key a rendering of the case's
    inputs, its value the expected output) -> the pair's line."""
    out: dict[int, int] = {}
    for i, (args, expected) in enumerate(cases):
        keys = renderings(args)
        for key, value, line in pairs:
            if same(value, expected) and any(same(key, k) for k in keys):
                out[i] = line
                break
    return out
