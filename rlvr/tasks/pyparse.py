"""`ast.parse` behind one lock, for every part of rlvr that reads Python source.

CPython 3.11 converts a parsed tree to `ast` objects with a recursion counter kept in
interpreter-wide state; two threads converting at once can corrupt it and fail with
`SystemError: AST constructor recursion depth mismatch` (CPython gh-106905, seen here
when the rollout runner scored two groups in threads). rlvr scores, checks and generates
in threads, so no module calls `ast.parse` directly (a test checks that), and a library
that parses on its own (hypothesis, drawing hidden tests) runs under `exclusive()`;
parsing and drawing are a small share of scoring, so the lock costs little.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.RLock()  # re-entrant: a block held under `exclusive` may parse too


def exclusive() -> threading.RLock:
    """The lock itself, for a block that runs code parsing Python without this module:
    hypothesis parses lambdas and reprs with `ast.parse` while it draws (rlvr's hidden
    tests), which raced a parse here in a clean-clone CI run once the task check drew
    tests in four threads."""
    return _LOCK


def parse(source: str, mode: str = "exec") -> Any:
    """`ast.parse(source, mode=mode)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)


def literal(text: str) -> Any:
    """`ast.literal_eval(text)` for a string, parsed under the same lock (`literal_eval` of
    a string calls `ast.parse` itself: a clean-clone CI run failed there with the same
    SystemError, hidden tests being drawn in the hack-detector bench's threads)."""
    return ast.literal_eval(parse(text.lstrip(" \t"), mode="eval"))


def parameter_names(source: str, function: str) -> list[str]:
    """The positional parameters of the first top-level `def function` in `source`, or []
    where there is none (or the source does not parse)."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            return [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    return []
