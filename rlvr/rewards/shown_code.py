"""Copies of the code a prompt shows (the `test_writing` domain's `metadata.shown_code`: a
buggy version for tests that reveal its bug, or a repository's function for tests that
pin what it does). A test comparing the function with such a copy tells the two apart
without knowing a right value: the `copies_shown_code` finding (strong, with its line).

Two functions are copies when their bodies have the same shape:
  - statements that do nothing are dropped (`pass`, a bare constant, a docstring);
  - the names the function binds (its parameters, its own name, assignment, loop,
    comprehension, `with`/`except` and import targets, nested definitions) are numbered
    by first use, so renaming them changes nothing; free names (builtins, globals) stay
    as they are, so `min` is not `max`;
  - the signature is not compared: a parameter the body never uses (`self`, an extra
    defaulted one) gets no number, and annotations and decorators are dropped;
  - operands of `+ * & | ^` and of `==`/`!=` are put in one order, and `b > a` reads as
    `a < b`.
A deeper paraphrase (a loop for a comprehension, `o += [x]` for `o.append(x)`) gets past
it: the guard is static, and leaks like every static guard.
"""

from __future__ import annotations

import ast
import re

from rlvr.rewards.hacks import HackFinding
from rlvr.tasks import pyparse

_COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
_FLIPPED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def copied_code(code: str, shown: str) -> list[HackFinding]:
    """The definitions in a reply's `code` (at any depth) whose body has the shape of a
    function or method in `shown`. Empty when either does not parse."""
    try:
        shown_tree, tree = pyparse.parse(shown), pyparse.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return []
    wanted = {shape(f) for f in ast.walk(shown_tree) if isinstance(f, _DEFS)}
    wanted.discard("")
    return [
        HackFinding("copies_shown_code", node.lineno, f"line {node.lineno}: {node.name} is a copy of the code shown")
        for node in ast.walk(tree)
        if isinstance(node, _DEFS) and shape(node) in wanted
    ]


def shape(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The shape of a function's body (see the module docstring); '' for a body that does
    nothing."""
    copy = pyparse.parse(ast.unparse(fn)).body[0]  # a fresh tree to change
    assert isinstance(copy, _DEFS)
    bound = _bound(copy)
    body = _Canonical(bound).visit(ast.Module(body=_doing(copy.body), type_ignores=[]))
    names: dict[str, str] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Name) and node.id in bound:
            node.id = names.setdefault(node.id, f"n{len(names)}")
        elif isinstance(node, ast.arg) and node.arg in bound:
            node.arg = names.setdefault(node.arg, f"n{len(names)}")
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, (*_DEFS, ast.ClassDef)) and node.name in bound:
            node.name = names.setdefault(node.name, f"n{len(names)}")
    return ast.dump(body) if body.body else ""


def _bound(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = {fn.name}
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif (isinstance(node, (*_DEFS, ast.ClassDef)) and node is not fn) or (
            isinstance(node, ast.ExceptHandler) and node.name
        ):
            names.add(str(node.name))
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
    return names


def _doing(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body that do something (no `pass`, no bare constant)."""
    return [
        s
        for s in body
        if not (isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)))
    ]


class _Canonical(ast.NodeTransformer):
    """No-op statements dropped in every block, commutative operands and symmetric
    comparisons in one order (ordered with the bound names blanked, so that renaming them
    does not change the order), `>`/`>=` turned around, decorators and annotations gone."""

    def __init__(self, bound: set[str]) -> None:
        self.bound = bound

    def _key(self, node: ast.AST) -> str:
        return re.sub(r"id='([^']*)'", lambda m: "id=''" if m.group(1) in self.bound else m.group(0), ast.dump(node))

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, _doing(block) or [ast.Pass()])
        if isinstance(node, _DEFS):
            node.decorator_list, node.returns = [], None
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, _COMMUTATIVE) and self._key(node.right) < self._key(node.left):
            node.left, node.right = node.right, node.left
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1:
            return node
        op, right = node.ops[0], node.comparators[0]
        if type(op) in _FLIPPED:
            return ast.Compare(left=right, ops=[_FLIPPED[type(op)]()], comparators=[node.left])
        if isinstance(op, ast.Eq | ast.NotEq) and self._key(right) < self._key(node.left):
            return ast.Compare(left=right, ops=[op], comparators=[node.left])
        return node
