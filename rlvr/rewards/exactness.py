"""Whether a reference is exact on integers of any size (issue 33): read from its code,
so that hidden tests past 2**52 are drawn only where the reference's value there is its
promise (rlvr.rewards.hidden_tests, rlvr.tasks.shapes)."""

from __future__ import annotations

import ast

from rlvr.tasks import pyparse

_FLOAT_CALLS = frozenset({
    "float", "sqrt", "cbrt", "log", "log1p", "log2", "log10", "exp", "exp2", "expm1", "round", "floor", "ceil",
    "fsum", "hypot", "dist", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "degrees", "radians",
    "truediv", "__truediv__", "mean", "fmean", "median", "geometric_mean", "harmonic_mean", "stdev", "pstdev",
})  # fmt: skip
_FLOAT_NAMES = frozenset({"pi", "e", "tau", "inf", "nan"})  # math's constants
_FLOAT_MODULES = frozenset({"statistics", "numpy", "decimal", "cmath", "scipy"})


def integer_exact(code: str) -> bool:
    """No float can arise in `code`: no true division, negative power, float literal, float
    constant (`math.pi`), float function (under any name it is imported as) or float module
    (statistics, numpy, decimal); `math.isqrt`, `//` and `pow(a, b, m)` are exact. Such a
    reference's value on an integer past 2**52 is its promise, so inputs there may be
    drawn (rlvr.tasks.shapes); one that goes through a float may be wrong there itself.
    A task's `metadata.integer_exact` overrides this reading (a float root corrected by
    integer steps is exact)."""
    try:
        tree = pyparse.parse(code)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.Div):
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _negative(node.right):
            return False
        if isinstance(node, ast.Constant) and type(node.value) in (float, complex):
            return False
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            )
            if any(n.split(".")[0] in _FLOAT_MODULES or n in _FLOAT_CALLS | _FLOAT_NAMES for n in names):
                return False  # a float module, or a float function under another name
        if isinstance(node, ast.Attribute) and node.attr in _FLOAT_NAMES:
            return False
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in _FLOAT_CALLS or (name == "pow" and len(node.args) == 2):  # pow(a, b, m) is exact
                return False
    return True


def _negative(node: ast.expr) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
