"""Single-site mutations of Python source: the one mutation engine of rlvr.

The repository miner injects bugs with it (a mutation the suite catches is a task whose
fix is known) and the test-writing domain scores tests by the mutants they kill. Both
need the same thing: every small, plausible wrong edit of a function's code, written back
into the source with everything else (formatting, comments, other lines) untouched.

`mutations(source)` finds the sites: each `Mutation` is one span of the source's UTF-8
bytes and the text that replaces it, found on the `ast` tree (positions from the parser,
operator tokens located between their operands). `mutants(source)` applies them one at a
time and keeps those whose result parses and differs from the original as a tree (so a
swap of two equal arguments is not a mutant), dropping duplicates; `combine` draws
higher-order mutants (two or three sites in one module) for harder tasks. Everything here
is a pure function of its arguments.

Operators come in two families: `train` (comparison boundaries and negations, arithmetic
and boolean flips, integer constants +-1, removed statements and branches, swapped
arguments, wrong returns) and `hidden` (other operators, kept out of training so that a
policy tuned to the training family is seen at evaluation). A new operator is one
function registered with `register_operator(name, family)`.

Only code inside function bodies is mutated (not signatures, decorators, annotations or
docstrings, and not f-strings, whose inner positions CPython 3.11 does not report).
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr.tasks.pyparse import parse

FAMILIES = ("train", "hidden")


class MutationError(ValueError):
    """A mutation that does not fit the source it is applied to."""


@dataclass(frozen=True)
class Mutation:
    """Replace the source's UTF-8 bytes [start, end) (which read `original`) by
    `replacement`. `line` is 1-based and `col` 0-based, in characters, for people;
    `function` is the enclosing function's dotted name (`Class.method`)."""

    operator: str
    family: str
    start: int
    end: int
    original: str
    replacement: str
    line: int
    col: int
    function: str

    @property
    def id(self) -> str:
        """Stable across runs and machines for the same source."""
        digest = hashlib.sha1(f"{self.start}:{self.end}:{self.replacement}".encode()).hexdigest()[:8]
        return f"{self.operator}@{self.line}:{self.col}:{digest}"

    def describe(self) -> str:
        where = self.function or "<module>"
        return f"line {self.line} in {where}: {self.original!r} -> {self.replacement!r} ({self.operator})"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Mutation:
        try:
            return cls(**{k: d[k] for k in cls.__dataclass_fields__})
        except KeyError as e:
            raise MutationError(f"a mutation record lacks the field {e.args[0]!r}") from None


@dataclass(frozen=True)
class Mutant:
    """One or more mutations applied together, and the resulting source."""

    mutations: tuple[Mutation, ...]
    source: str

    @property
    def id(self) -> str:
        return "+".join(m.id for m in self.mutations)

    @property
    def operators(self) -> tuple[str, ...]:
        return tuple(m.operator for m in self.mutations)

    @property
    def family(self) -> str:
        """'hidden' when any of its mutations is."""
        return "hidden" if any(m.family == "hidden" for m in self.mutations) else "train"


# An operator reads one node and yields (start byte, end byte, replacement) edits.
OperatorFn = Callable[[ast.AST, "_Source"], Iterable[tuple[int, int, str]]]
_OPERATORS: dict[str, tuple[str, OperatorFn]] = {}  # name -> (family, function)


def register_operator(name: str, family: str) -> Callable[[OperatorFn], OperatorFn]:
    """Add an operator: a function of (node, source) yielding (start, end, replacement)
    byte spans of that source; it is called on every node inside a function body."""
    if family not in FAMILIES:
        raise ValueError(f"mutation family must be one of {', '.join(FAMILIES)}, not {family!r}")
    if name in _OPERATORS:
        raise ValueError(f"mutation operator '{name}' is already registered")

    def deco(fn: OperatorFn) -> OperatorFn:
        _OPERATORS[name] = (family, fn)
        return fn

    return deco


def operator_names(family: str | None = None) -> list[str]:
    """Registered operators, optionally of one family."""
    return sorted(n for n, (f, _) in _OPERATORS.items() if family is None or f == family)


def _operator(name: str) -> tuple[str, OperatorFn]:
    try:
        return _OPERATORS[name]
    except KeyError:
        raise KeyError(f"unknown mutation operator '{name}'; valid names: {', '.join(sorted(_OPERATORS))}") from None


# ---- the source and its byte positions ------------------------------------------------------


class _Source:
    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        self.line_starts = [0]
        for i, b in enumerate(self.data):
            if b == 0x0A:
                self.line_starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        """`ast` positions (1-based line, UTF-8 byte column) as a byte offset."""
        return self.line_starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        n: Any = node
        return self.offset(n.lineno, n.col_offset), self.offset(n.end_lineno, n.end_col_offset)

    def read(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def line_col(self, start: int) -> tuple[int, int]:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:  # the last line start <= start
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= start:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, len(self.data[self.line_starts[lo] : start].decode("utf-8"))

    def token_between(self, a: ast.AST, b: ast.AST, pattern: re.Pattern[bytes]) -> tuple[int, int, str] | None:
        """The operator token between the end of `a` and the start of `b` (past
        parentheses, blanks, line continuations and comments) when it matches `pattern`."""
        start, stop = self.span(a)[1], self.span(b)[0]
        i = _skip_filler(self.data, start, stop)
        m = pattern.match(self.data, i, stop)
        if m is None:
            return None
        return m.start(), m.end(), m.group().decode()


_FILLER = re.compile(rb"(?:[ \t\f\r\n()]|\\\r?\n|#[^\n]*)*")


def _skip_filler(data: bytes, start: int, stop: int) -> int:
    m = _FILLER.match(data, start, stop)
    return m.end() if m else start


_BLANKS = re.compile(rb"(?:[ \t]|\\\r?\n)*")


def _skip_blanks(data: bytes, start: int) -> int:
    m = _BLANKS.match(data, start)
    return m.end() if m else start


def _ops(*tokens: str) -> re.Pattern[bytes]:
    words = sorted(tokens, key=len, reverse=True)  # longest first: '<=' before '<'
    alts = [re.escape(w).replace("\\ ", "\\s+") + ("\\b" if w[-1].isalpha() else "") for w in words]
    return re.compile("|".join(alts).encode())


def _norm(tok: str) -> str:
    return " ".join(tok.split())


# ---- training family ----------------------------------------------------------------------------

_BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_NEGATE = {"==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not", "is not": "is"}
_COMPARE_TOKENS = _ops("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not")
_ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "//": "/", "%": "//", "**": "*"}
_ARITH_AST = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_ARITH_TOKENS = _ops(*_ARITH)
_AUG_TOKENS = _ops(*(t + "=" for t in _ARITH))
_BOOL_TOKENS = _ops("and", "or")


def _compare(node: ast.AST, src: _Source, table: dict[str, str]) -> Iterator[tuple[int, int, str]]:
    if isinstance(node, ast.Compare):
        left = node.left
        for right in node.comparators:
            tok = src.token_between(left, right, _COMPARE_TOKENS)
            if tok is not None and _norm(tok[2]) in table:
                yield tok[0], tok[1], table[_norm(tok[2])]
            left = right


@register_operator("compare_boundary", "train")
def _compare_boundary(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`<` <-> `<=`, `>` <-> `>=` (off by one at a boundary)."""
    return _compare(node, src, _BOUNDARY)


@register_operator("compare_negate", "train")
def _compare_negate(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`==` <-> `!=`, `in` <-> `not in`, `is` <-> `is not`."""
    return _compare(node, src, _NEGATE)


@register_operator("arithmetic", "train")
def _arithmetic(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`+` <-> `-`, `*` <-> `/`, `//` -> `/`, `%` -> `//`, `**` -> `*`, augmented too."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH_AST):
        tok = src.token_between(node.left, node.right, _ARITH_TOKENS)
        if tok is not None:
            yield tok[0], tok[1], _ARITH[tok[2]]
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, _ARITH_AST):
        tok = src.token_between(node.target, node.value, _AUG_TOKENS)
        if tok is not None:
            yield tok[0], tok[1], _ARITH[tok[2][:-1]] + "="


@register_operator("boolean", "train")
def _boolean(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`and` <-> `or`, `not x` -> `x`, `True` <-> `False`."""
    if isinstance(node, ast.BoolOp):
        for a, b in zip(node.values, node.values[1:], strict=False):
            tok = src.token_between(a, b, _BOOL_TOKENS)
            if tok is not None:
                yield tok[0], tok[1], "or" if tok[2] == "and" else "and"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        start = src.span(node)[0]  # the node starts at its `not`; drop it and the blanks after it
        yield start, _skip_blanks(src.data, start + 3), ""
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        start, end = src.span(node)
        yield start, end, "False" if node.value else "True"


@register_operator("constant", "train")
def _constant(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """An integer constant n -> n + 1 and n - 1 (off by one)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        start, end = src.span(node)
        yield start, end, str(node.value + 1)
        yield start, end, str(node.value - 1) if node.value > 0 else f"({node.value - 1})"


_SIMPLE_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Delete, ast.Assert)


@register_operator("remove_statement", "train")
def _remove_statement(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """A simple statement (assignment, call, raise, del, assert) -> `pass`."""
    if isinstance(node, _SIMPLE_STATEMENTS) and not _is_docstring(node):
        if isinstance(node, ast.AnnAssign) and node.value is None:
            return
        start, end = src.span(node)
        yield start, end, "pass"


@register_operator("remove_branch", "train")
def _remove_branch(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """An `if`/`elif` condition -> `False`: its branch is never taken."""
    if isinstance(node, ast.If) and not (isinstance(node.test, ast.Constant) and node.test.value is False):
        start, end = src.span(node.test)
        yield start, end, "False"


@register_operator("swap_arguments", "train")
def _swap_arguments(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """The first two positional arguments of a call, swapped."""
    if isinstance(node, ast.Call) and len(node.args) >= 2:
        a, b = node.args[0], node.args[1]
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
            return
        (a0, a1), (b0, b1) = src.span(a), src.span(b)
        yield a0, b1, src.read(b0, b1) + src.read(a1, b0) + src.read(a0, a1)


@register_operator("wrong_return", "train")
def _wrong_return(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`return <value>` -> `return None`."""
    if isinstance(node, ast.Return) and node.value is not None:
        if isinstance(node.value, ast.Constant) and node.value.value is None:
            return
        start, end = src.span(node.value)
        yield start, end, "None"


# ---- hidden family (evaluation only) ----------------------------------------------------------

_BITWISE = {"&": "|", "|": "&", "^": "|", "<<": ">>", ">>": "<<"}
_BITWISE_TOKENS = _ops(*_BITWISE)
_BITWISE_AST = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_SWAPPED_BUILTINS = {"min": "max", "max": "min", "any": "all", "all": "any"}


@register_operator("break_continue", "hidden")
def _break_continue(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`break` <-> `continue`."""
    if isinstance(node, ast.Break | ast.Continue):
        start, end = src.span(node)
        yield start, end, "continue" if isinstance(node, ast.Break) else "break"


@register_operator("unary_minus", "hidden")
def _unary_minus(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`-x` -> `x`."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        start = src.span(node)[0]  # the node starts at its `-`
        yield start, start + 1, ""


@register_operator("builtin_swap", "hidden")
def _builtin_swap(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`min` <-> `max`, `any` <-> `all` where called."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SWAPPED_BUILTINS:
        start, end = src.span(node.func)
        yield start, end, _SWAPPED_BUILTINS[node.func.id]


@register_operator("bitwise", "hidden")
def _bitwise(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """`&` <-> `|`, `^` -> `|`, `<<` <-> `>>`."""
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, ast.BitAnd | ast.BitOr | ast.BitXor | ast.LShift | ast.RShift
    ):
        tok = src.token_between(node.left, node.right, _BITWISE_TOKENS)
        if tok is not None:
            yield tok[0], tok[1], _BITWISE[tok[2]]


@register_operator("slice_bound", "hidden")
def _slice_bound(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """A slice's lower bound + 1, its upper bound - 1."""
    if isinstance(node, ast.Slice):
        for bound, delta in ((node.lower, "+ 1"), (node.upper, "- 1")):
            if bound is not None:
                start, end = src.span(bound)
                yield start, end, f"({src.read(start, end)}) {delta}"


@register_operator("string_constant", "hidden")
def _string_constant(node: ast.AST, src: _Source) -> Iterator[tuple[int, int, str]]:
    """A string constant -> the empty string (or "X" when it is empty)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        start, end = src.span(node)
        yield start, end, '""' if node.value else '"X"'


# ---- finding sites ----------------------------------------------------------------------------


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


_MARKERS = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)


@dataclass
class _Site:
    node: ast.AST
    function: str


@dataclass
class _Walker:
    """Every node inside a function body, with its function's dotted name; annotations,
    docstrings and f-strings left out."""

    sites: list[_Site] = field(default_factory=list)

    def module(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            self.scope(stmt, [])

    def scope(self, node: ast.AST, names: list[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[1:] if node.body and _is_docstring(node.body[0]) else node.body
            for stmt in body:
                self.inside(stmt, [*names, node.name])
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                self.scope(stmt, [*names, node.name])
        else:  # module or class level code: only the functions defined in it (under `if`, `try`, ...)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                    self.scope(child, names)

    def inside(self, node: ast.AST, names: list[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.scope(node, names)
            return
        if isinstance(node, ast.JoinedStr):
            return
        self.sites.append(_Site(node, ".".join(names)))
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns", "type_comment"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and not isinstance(child, _MARKERS):
                    self.inside(child, names)


def mutations(
    source: str,
    *,
    operators: Sequence[str] | None = None,
    family: str | None = "train",
) -> list[Mutation]:
    """Every site of the named operators (default: all of `family`, or of both families
    when `family` is None) in the source's function bodies, in source order. The source
    must parse; a site's result is not checked here (see `mutants`)."""
    names = list(operators) if operators is not None else operator_names(family)
    fns = [(n, *_operator(n)) for n in names]
    try:
        tree = parse(source)
    except SyntaxError as e:
        raise MutationError(f"the source does not parse (line {e.lineno}: {e.msg})") from None
    src = _Source(source)
    walker = _Walker()
    walker.module(tree)
    out: dict[tuple[int, int, str, str], Mutation] = {}
    for site in walker.sites:
        for name, fam, fn in fns:
            for start, end, replacement in fn(site.node, src):
                original = src.read(start, end)
                if replacement == original:
                    continue
                line, col = src.line_col(start)
                key = (start, end, replacement, name)
                out.setdefault(key, Mutation(name, fam, start, end, original, replacement, line, col, site.function))
    return sorted(out.values(), key=lambda m: (m.start, m.end, m.operator, m.replacement))


def apply(source: str, muts: Sequence[Mutation]) -> str:
    """The source with every mutation applied; they must not overlap, and each must read
    its `original` at its span (a mutation found on another source is refused)."""
    data = source.encode("utf-8")
    ordered = sorted(muts, key=lambda m: m.start)
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end:
            raise MutationError(f"mutations overlap: {a.describe()} and {b.describe()}")
    for m in reversed(ordered):
        if m.end > len(data) or data[m.start : m.end].decode("utf-8", "replace") != m.original:
            raise MutationError(f"mutation does not fit this source: {m.describe()}")
        data = data[: m.start] + m.replacement.encode("utf-8") + data[m.end :]
    return data.decode("utf-8")


def _tree_key(source: str) -> str | None:
    try:
        return ast.dump(parse(source))
    except (SyntaxError, ValueError):
        return None


def mutants(
    source: str,
    *,
    operators: Sequence[str] | None = None,
    family: str | None = "train",
    functions: Iterable[str] | None = None,
    lines: Iterable[int] | None = None,
) -> list[Mutant]:
    """First-order mutants: each site of `mutations` applied alone, kept when the result
    parses and differs from the original as a tree, one per distinct result. `functions`
    (dotted names) and `lines` (1-based, e.g. the lines a test suite covers) narrow where."""
    fset = set(functions) if functions is not None else None
    lset = set(lines) if lines is not None else None
    original = _tree_key(source)
    seen: set[str] = set()
    out: list[Mutant] = []
    for m in mutations(source, operators=operators, family=family):
        if (fset is not None and m.function not in fset) or (lset is not None and m.line not in lset):
            continue
        text = apply(source, [m])
        key = _tree_key(text)
        if key is None or key == original or key in seen:
            continue
        seen.add(key)
        out.append(Mutant((m,), text))
    return out


def combine(source: str, pool: Sequence[Mutant], order: int, count: int, seed: int) -> list[Mutant]:
    """Up to `count` higher-order mutants of `order` first-order mutants from `pool` (all
    of this source), drawn with `seed`: sites that do not overlap, whose combined result
    parses and differs from the original and from every single mutant in it."""
    if order < 2:
        raise ValueError(f"a higher-order mutant combines at least 2 mutations, not {order}")
    rng = random.Random(seed)
    original = _tree_key(source)
    singles = {_tree_key(m.source) for m in pool}
    seen: set[str] = set()
    out: list[Mutant] = []
    firsts = [m.mutations[0] for m in pool if len(m.mutations) == 1]
    if len(firsts) < order:
        return out
    for _ in range(count * 20):
        if len(out) >= count:
            break
        pick = sorted(rng.sample(firsts, order), key=lambda m: m.start)
        if any(b.start < a.end for a, b in itertools.pairwise(pick)):
            continue
        text = apply(source, pick)
        key = _tree_key(text)
        if key is None or key == original or key in singles or key in seen:
            continue
        seen.add(key)
        out.append(Mutant(tuple(pick), text))
    return out
