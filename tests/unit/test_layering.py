"""The dependency order of ../shared/DESIGN.md ("Dependencies point one way"), held by
walking every import in rlvr/: module-level, function-level and TYPE_CHECKING ones, and
`importlib.import_module` calls with a constant name. No exception list: an import that
breaks the order fails here, naming the file, the line and the rule.

The order, lowest first (a package may import those named in its row, and nothing else
of rlvr's):

    types, algos              nothing (algos depends on torch only)
    tasks                     types (schema, loaders, pyparse; beside types)
    config                    types, algos (the built-in algorithm names, torch-free)
    trace                     types, config
    curriculum                types, config, tasks
    sandbox                   types, config, tasks
    rewards                   + sandbox
    envs                      + rewards
    rollout                   + envs, trace
    pipeline                  + rollout, curriculum
    learner                   + pipeline
    train                     + learner
    sft                       + train
    feedback                  rewards and below (registers its terms there)
    report                    trace and below
    tasks.generators, repos   envs, sandbox and below (imported at run time only as a plugin:
                              rlvr.repos.agent registers the repo_agent domain)
    dist                      everything but cli
    cli                       everything; nothing imports cli
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "rlvr"

_BASE = {"types", "algos"}
_CHAIN = ["sandbox", "rewards", "envs", "rollout", "pipeline", "learner", "train", "sft"]
_EXTRA = {"rollout": {"trace"}, "pipeline": {"curriculum"}}


def _allowed() -> dict[str, set[str]]:
    allowed: dict[str, set[str]] = {
        "types": set(),
        "algos": set(),
        "tasks": {"types"},
        "config": {"types", "algos"},
        "trace": {"types", "config"},
        "curriculum": {"types", "config", "tasks"},
    }
    below = _BASE | {"tasks", "config"}
    for pkg in _CHAIN:
        below = below | _EXTRA.get(pkg, set())
        allowed[pkg] = set(below)
        below = below | {pkg}
    allowed["feedback"] = allowed["rewards"] | {"rewards"}
    allowed["report"] = {"types", "config", "trace"}
    allowed["tasks.generators"] = allowed["envs"] | {"envs"}
    allowed["repos"] = allowed["envs"] | {"envs"}
    everything = set(allowed) | {"tasks.generators", "dist"}
    allowed["dist"] = everything - {"dist", "cli"}
    allowed["cli"] = everything - {"cli"}
    return allowed


ALLOWED = _allowed()
TOP_LEVEL = {"__init__.py", "types.py"}  # DESIGN's table lists nothing else at the top of rlvr/


def package_of(module: str) -> str:
    parts = module.split(".")
    if parts[:3] == ["rlvr", "tasks", "generators"]:
        return "tasks.generators"
    return parts[1] if len(parts) > 1 else "types"  # rlvr/__init__.py sits with types


def module_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, imported rlvr module) for every import in the file, wherever it stands."""
    module = module_of(path, root)
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            out.append((node.lineno, name))
            # `from rlvr.x import y` may name a submodule y: its package is the same as x's
            # unless x is rlvr itself
            if name == "rlvr":
                out += [(node.lineno, f"rlvr.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in out if name.startswith("rlvr.")]


def violations(root: Path = ROOT) -> list[str]:
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        src = package_of(module_of(path, root))
        if src not in ALLOWED:
            found.append(f"{path.relative_to(root.parent)}: package '{src}' has no place in the order")
            continue
        for line, name in imports(path, root):
            dst = package_of(name)
            if dst != src and dst not in ALLOWED[src]:
                found.append(
                    f"{path.relative_to(root.parent)}:{line}: {src} imports {name} ({dst}); "
                    f"{src} may import {', '.join(sorted(ALLOWED[src])) or 'nothing of rlvr'}"
                )
    return found


def test_every_import_follows_the_design_order() -> None:
    assert violations() == []


def test_the_top_of_rlvr_holds_only_what_the_design_lists() -> None:
    assert sorted(p.name for p in ROOT.glob("*.py")) == sorted(TOP_LEVEL)
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(ALLOWED), f"packages with no place in the order: {packages - set(ALLOWED)}"


def test_the_walk_sees_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    """The walker itself: an upward import hidden in a function or under TYPE_CHECKING is
    still an import (a test that cannot fail proves nothing)."""
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from rlvr.train.loop import train\n"
        "def f():\n    from rlvr.cli import main\n"
        "def g():\n    import importlib\n    importlib.import_module('rlvr.dist.ray_runner')\n"
    )
    (tmp_path / "rlvr" / "config").mkdir(parents=True)
    (tmp_path / "rlvr" / "config" / "probe.py").write_text(src)
    (tmp_path / "rlvr" / "config" / "fine.py").write_text(
        "from rlvr.types import Task\nfrom rlvr.algos.names import BUILTIN\n"
    )
    (tmp_path / "rlvr" / "newpkg").mkdir()
    (tmp_path / "rlvr" / "newpkg" / "__init__.py").write_text("")
    found = violations(tmp_path / "rlvr")
    assert len(found) == 4, found
    assert sum("config imports" in v for v in found) == 3
    assert any("rlvr.cli" in v for v in found) and any("rlvr.dist.ray_runner" in v for v in found)
    assert any("rlvr/config/probe.py:3: config imports rlvr.train.loop" in v for v in found)
    assert any("package 'newpkg' has no place" in v for v in found)


def test_no_function_over_80_lines_where_the_run_is_assembled() -> None:
    """DESIGN's principle 5: the loop and the functions that build a run stay short, in
    the training, pipeline and learner packages."""
    long = []
    for pkg in ("train", "pipeline", "learner"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > 80:
                        long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}: {lines} lines")
    assert long == []


def test_the_built_in_drawers_live_in_tasks_not_in_the_generators() -> None:
    # rlvr.tasks.draws imports them by name at run time, which the walk above cannot read
    from rlvr.tasks.draws import BUILTIN

    assert BUILTIN and all(package_of(m) == "tasks" for m in BUILTIN.values()), BUILTIN
    for m in BUILTIN.values():
        path = ROOT.parent / (m.replace(".", "/") + ".py")
        assert path.is_file(), m
        assert all(ALLOWED["tasks"] >= {package_of(n)} or package_of(n) == "tasks" for _, n in imports(path))
