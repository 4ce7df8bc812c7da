"""What a repository's test suite needs installed, read from the files a project keeps it
in: pyproject.toml (`project.dependencies`, the test/dev extras, PEP 735 dependency
groups), setup.cfg (`install_requires`, `extras_require`), a literal setup.py call,
tox.ini's `[testenv] deps`, noxfile.py's test sessions (the literal arguments of their
`session.install` calls), and requirements files named for tests or development
(following `-r` includes). Markers are evaluated for this interpreter, the project's own
name is dropped (a `pkg[test]` self-reference names its extra, which is read directly),
and rlvr's own tools are added when nothing names them (pytest runs the suite, coverage
maps which test runs which line for mining). Every function here reads files only.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from rlvr.tasks.pyparse import parse

TEST_EXTRAS = ("test", "tests", "testing", "dev", "develop", "development", "check")
REQUIREMENT_FILES = (
    "requirements-test*.txt",
    "requirements_test*.txt",
    "test-requirements*.txt",
    "suite_requirements*.txt",
    "requirements-dev*.txt",
    "requirements_dev*.txt",
    "dev-requirements*.txt",
    "requirements/test*.txt",
    "requirements/dev*.txt",
    "tests/requirements*.txt",
)

RLVR_TOOLS = ("pytest", "coverage")
NOX_TEST_SESSIONS = ("test", "unit", "pytest")
"""A nox session runs the suite when its name has one of these in it."""


@dataclass
class Found:
    """The requirements found (normalised, sorted, one per project), where each came
    from, and what could not be read (one line each)."""

    name: str | None
    requirements: list[str] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)  # file -> the lines taken from it
    skipped: list[str] = field(default_factory=list)


def project_name(tree: Path) -> str | None:
    """The distribution's name: pyproject's [project] name, setup.cfg's metadata, or a
    literal `name=` in setup.py."""
    py = _toml(tree / "pyproject.toml")
    if isinstance(py.get("project", {}).get("name"), str):
        return str(py["project"]["name"])
    cfg = _cfg(tree / "setup.cfg")
    if cfg.has_option("metadata", "name"):
        return cfg.get("metadata", "name").strip()
    call = _setup_call(tree / "setup.py")
    name = call.get("name")
    return name if isinstance(name, str) else None


def suite_requirements(tree: Path, extra: list[str] | None = None) -> Found:
    """Everything the suite needs beyond the interpreter, from the tree's files, plus
    `extra` (a per-repository override)."""
    found = Found(project_name(tree))
    own = canonicalize_name(found.name) if found.name else None
    raw: list[tuple[str, str]] = []  # (where, requirement line)

    py = _toml(tree / "pyproject.toml")
    project = py.get("project", {})
    raw += [("pyproject.toml", r) for r in project.get("dependencies", []) if isinstance(r, str)]
    for key, reqs in project.get("optional-dependencies", {}).items():
        if key.lower() in TEST_EXTRAS:
            raw += [(f"pyproject.toml [{key}]", r) for r in reqs if isinstance(r, str)]
    groups = py.get("dependency-groups", {})
    for key in groups:
        if key.lower() in TEST_EXTRAS:
            raw += [(f"pyproject.toml group {key}", r) for r in _group(groups, key, set())]

    cfg = _cfg(tree / "setup.cfg")
    if cfg.has_option("options", "install_requires"):
        raw += [("setup.cfg", r) for r in _lines(cfg.get("options", "install_requires"))]
    if cfg.has_section("options.extras_require"):
        for key, value in cfg.items("options.extras_require"):
            if key.lower() in TEST_EXTRAS:
                raw += [(f"setup.cfg [{key}]", r) for r in _lines(value)]

    call = _setup_call(tree / "setup.py")
    for key in ("install_requires", "tests_require"):
        raw += [(f"setup.py {key}", r) for r in call.get(key, []) if isinstance(r, str)]
    extras = call.get("extras_require", {})
    if isinstance(extras, dict):
        for key, reqs in extras.items():
            if isinstance(key, str) and key.lower() in TEST_EXTRAS and isinstance(reqs, list):
                raw += [(f"setup.py [{key}]", r) for r in reqs if isinstance(r, str)]

    tox = _cfg(tree / "tox.ini")
    if tox.has_option("testenv", "deps"):
        for line in _lines(tox.get("testenv", "deps")):
            if line.startswith("-r"):
                raw += _requirements_file(tree, (tree / line[2:].strip()).resolve(), found, set())
            else:  # factor-conditional lines `py3: pkg` apply to every env here
                raw.append(("tox.ini", line.split(":", 1)[1].strip() if ":" in line.split("[")[0] else line))

    raw += _nox(tree, found)
    for pattern in REQUIREMENT_FILES:
        for path in sorted(tree.glob(pattern)):
            raw += _requirements_file(tree, path, found, set())
    raw += [("override", r) for r in extra or []]

    chosen: dict[str, str] = {}
    for where, line in raw:
        req = _requirement(line, found, where)
        if req is None:
            continue
        key = canonicalize_name(req.name)
        if key == own:
            continue
        found.sources.setdefault(where, []).append(str(req))
        if key not in chosen or (req.specifier and not Requirement(chosen[key]).specifier):
            chosen[key] = str(req)
    for tool in RLVR_TOOLS:  # what rlvr runs in the environment, when the project names none
        if tool not in chosen:
            chosen[tool] = tool
            found.sources.setdefault("default", []).append(tool)
    found.requirements = sorted(chosen.values(), key=lambda r: canonicalize_name(Requirement(r).name))
    return found


def _requirement(line: str, found: Found, where: str) -> Requirement | None:
    line = line.split(" #", 1)[0].strip()
    if not line or line.startswith(("#", "-")):
        return None
    try:
        req = Requirement(line)
    except InvalidRequirement:
        found.skipped.append(f"{where}: not a requirement: {line}")
        return None
    if req.url:
        found.skipped.append(f"{where}: a URL requirement is not fetched from the registry: {line}")
        return None
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        return None
    req.marker = None
    return req


def _requirements_file(tree: Path, path: Path, found: Found, seen: set[Path]) -> list[tuple[str, str]]:
    if path in seen or not path.is_file():
        if not path.is_file():
            found.skipped.append(f"{path.name}: an included requirements file is missing")
        return []
    seen.add(path)
    where = str(path.relative_to(tree)) if path.is_relative_to(tree) else str(path)
    out: list[tuple[str, str]] = []
    for line in _lines(path.read_text(errors="replace")):
        if line.startswith(("-r ", "--requirement")):
            target = line.split(None, 1)[1] if " " in line else line.split("=", 1)[1]
            out += _requirements_file(tree, (path.parent / target.strip()).resolve(), found, seen)
        else:
            out.append((where, line))
    return out


PIP_VALUE_OPTIONS = ("-c", "--constraint", "-e", "--editable", "-f", "--find-links", "-i", "--index-url",
                     "--extra-index-url", "--trusted-host", "--target", "-t", "--prefix", "--root")  # fmt: skip
"""pip options that take the next argument as their value (never a requirement)."""


def _nox(tree: Path, found: Found) -> list[tuple[str, str]]:
    """What noxfile.py's test sessions install: the literal arguments of each
    `session.install(...)` in a function decorated as a session whose name (or `name=`)
    says it tests (NOX_TEST_SESSIONS); names bound to literals at module level are
    followed (`*TEST_DEPS` too), `-r FILE` is read as a requirements file (inside the
    tree), the values of pip's options are not requirements, and the project itself (`.`,
    `-e .`, `.[extra]`, a local path) is left out. A computed argument is not read, and
    an option whose value is computed takes nothing else with it."""
    path = tree / "noxfile.py"
    if not path.is_file():
        return []
    try:
        module = parse(path.read_text(errors="replace"))
    except SyntaxError:
        found.skipped.append("noxfile.py: not valid Python")
        return []
    names: dict[str, object] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError, TypeError):
                names[node.targets[0].id] = ast.literal_eval(node.value)
    out: list[tuple[str, str]] = []
    for fn in module.body:
        if isinstance(fn, ast.FunctionDef) and any(t in _session_name(fn).lower() for t in NOX_TEST_SESSIONS):
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "install":
                    out += _install_args([a for arg in call.args for a in _literal_strings(arg, names)], tree, found)
    return out


def _install_args(args: list[str | None], tree: Path, found: Found) -> list[tuple[str, str]]:
    """One `session.install` call's arguments (None: computed) as requirement lines."""
    out: list[tuple[str, str]] = []
    it = iter(args)
    for a in it:
        if a is None or a.startswith((".", "/")):
            continue
        if a in ("-r", "--requirement"):
            file = next(it, None)
        elif a.startswith("--requirement="):
            file = a.split("=", 1)[1]
        elif a.startswith("-r"):
            file = a[2:]
        else:
            if a in PIP_VALUE_OPTIONS:
                next(it, None)
            elif not a.startswith("-"):
                out.append(("noxfile.py", a))
            continue
        target = (tree / file).resolve() if file else None
        if target is None or not target.is_relative_to(tree.resolve()):
            found.skipped.append(f"noxfile.py: {a} {file or ''}".strip() + ": not a requirements file in the tree")
        else:
            out += _requirements_file(tree, target, found, set())
    return out


def _session_name(fn: ast.FunctionDef) -> str:
    """A nox session's name (its decorator's `name=`, else the function's), or "" when
    the function is not decorated as a session."""
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if getattr(target, "attr", getattr(target, "id", None)) == "session":
            for kw in d.keywords if isinstance(d, ast.Call) else []:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
            return fn.name
    return ""


def _literal_strings(node: ast.expr, names: dict[str, object]) -> list[str | None]:
    """An install argument's strings: a literal, or a module-level name bound to one
    (a list or tuple spread by `*`); [None] for anything computed."""
    value: object = None
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Name):
        value = names.get(node.id)
    else:
        with contextlib.suppress(ValueError, TypeError):
            value = ast.literal_eval(node)
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v if isinstance(v, str) else None for v in value]
    return [None]


def _group(groups: dict[str, Any], key: str, seen: set[str]) -> list[str]:
    if key in seen:
        return []
    seen.add(key)
    out: list[str] = []
    for item in groups.get(key, []):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += _group(groups, item["include-group"], seen)
    return out


def _lines(text: str) -> list[str]:
    out = []
    for raw in text.replace("\\\n", "").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _cfg(path: Path) -> configparser.ConfigParser:
    cfg = configparser.ConfigParser(interpolation=None)
    if path.is_file():
        try:
            cfg.read_string(path.read_text(errors="replace"))
        except configparser.Error:
            return configparser.ConfigParser(interpolation=None)
    return cfg


def _setup_call(path: Path) -> dict[str, Any]:
    """The literal keyword arguments of setup(...) in setup.py (names bound to literals
    at module level are followed once); anything computed is left out."""
    if not path.is_file():
        return {}
    try:
        tree = parse(path.read_text(errors="replace"))
    except SyntaxError:
        return {}
    names: dict[str, object] = {}
    out: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                names[node.targets[0].id] = ast.literal_eval(node.value)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup":
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                try:
                    out[kw.arg] = ast.literal_eval(kw.value)
                except ValueError:
                    if isinstance(kw.value, ast.Name) and kw.value.id in names:
                        out[kw.arg] = names[kw.value.id]
    return out
