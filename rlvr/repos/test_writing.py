"""Test-writing tasks from a real repository: write tests for one of its functions or
classes, in its module's context, paid by the project's own mined bugs the tests catch.

The mined tasks of a repository (`rlvr repos mine`, or the bundled set for the bundled
projects) are bugs injected into library code and confirmed by the project's own suite:
some of its tests fail on each. Grouped by the public top-level function or class they
change (a method's bug is its class's), they become the `train` (paid) mutants of a
`test_writing` task for it:

  - the prompt shows its source (a long class as its outline) and its module's imports,
    and says it is already imported (`metadata.show_code`: tests that pin what the code
    does today, as an engineer writes before changing legacy code);
  - every program the tests run against loads the project's package from memory (its
    sources in `tests.prelude`, an import hook installed only while the package loads and
    removed before any test runs), with the module mutated for a mutant; so the plain
    sandbox runs them, with no environment and no mount;
  - a task is kept only when its package loads that way on the sandbox's own Python (the
    standard library and the package itself; a package that needs a third-party module
    at import is skipped, with why).

The package's sources are the user's cached copy of the repository: nothing of it ships
with rlvr. There are no gold tests (the project's tests are pytest functions of its own
fixtures), so these tasks have no reference reply, and a warm start cannot use them.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.repos.mine import RepoTask
from rlvr.repos.store import Repo
from rlvr.sandbox import execute_many
from rlvr.sandbox.api import Tests
from rlvr.sandbox.executor import Limits
from rlvr.tasks import pyparse
from rlvr.tasks.loader import is_eval
from rlvr.tasks.mutate import Mutation, apply
from rlvr.types import ExecutionResult, RunStatus, Task, TestStatus

MAX_MUTANTS = 10
CONTEXT_CHARS = 6000  # a class longer than this is shown as its outline
EVAL_FRACTION = 0.2
LOAD_LIMITS = Limits(timeout_s=20.0, test_timeout_s=5.0)

INSTRUCTIONS = (
    "Write tests for `{entry}`: assert statements, or test_ functions taking no arguments, that call "
    "it{call} and check what {it}. It is already imported (`from {module} import {entry}`): do not import or "
    "define it; other names of the project import as usual. Good tests pass on this code and fail when it "
    "is changed: check boundaries, empty and extreme inputs. Tests that fail on this code cost reward."
)

# The loader every program starts with (its sources filled in per task): a meta-path hook
# serving the package from memory while it loads, then removed, its sources dropped and
# every helper name deleted, so a test finds no source to compare against.
_PRELUDE = """\
import importlib.abc as _rlvr_abc
import importlib.util as _rlvr_util
import sys as _rlvr_sys


class _RlvrPackage(_rlvr_abc.MetaPathFinder, _rlvr_abc.Loader):
    def __init__(self, files):
        self.files = files

    def find_spec(self, name, path=None, target=None):
        if name not in self.files:
            return None
        return _rlvr_util.spec_from_loader(name, self, is_package=self.files[name][1])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source, package = self.files[module.__name__]
        module.__file__ = "<" + module.__name__ + ">"
        exec(compile(source, module.__file__, "exec"), module.__dict__)


def _rlvr_load(files, module, changed):
    if changed is not None:
        files = dict(files)
        files[module] = (changed, files[module][1])
    finder = _RlvrPackage(files)
    _rlvr_sys.meta_path.insert(0, finder)
    try:
        for name in sorted(files):
            try:
                __import__(name)
            except Exception:
                pass
    finally:
        _rlvr_sys.meta_path.remove(finder)
        finder.files = {}


_rlvr_files = {files!r}
"""


def module_name(file: str, pythonpath: str) -> str:
    """`src/semver/version.py` under pythonpath `src` -> `semver.version`; a package's
    `__init__.py` is the package."""
    rel = Path(file).relative_to(pythonpath) if pythonpath not in ("", ".") else Path(file)
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_files(root: Path, module: str) -> dict[str, tuple[str, bool]]:
    """Every module of `module`'s top-level package under `root` (the tree's pythonpath):
    name -> (source, is a package). A top-level module alone when it is no package."""
    top = module.split(".")[0]
    if (root / top).is_dir():
        out: dict[str, tuple[str, bool]] = {}
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("").parts
            if any(p.startswith(".") or p in ("tests", "test") for p in rel):
                continue
            name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
            out[name] = (path.read_text(encoding="utf-8"), rel[-1] == "__init__")
        return out
    return {top: ((root / f"{top}.py").read_text(encoding="utf-8"), False)}


def program(module: str, entry: str, changed: str | None = None) -> str:
    """What follows the prelude in a program: the package loaded (with `module`'s source
    `changed` for a mutant), the entry point bound, the helpers deleted."""
    return (
        f"_rlvr_load(_rlvr_files, {module!r}, {changed!r})\n"
        f"from {module} import {entry}\n"
        "del _rlvr_load, _rlvr_files, _RlvrPackage, _rlvr_abc, _rlvr_util, _rlvr_sys\n"
    )


def function_context(source: str, entry: str, budget: int = CONTEXT_CHARS) -> str:
    """The module's imports and the entry's source, as the prompt shows them: a function
    whole; a class whole when it fits `budget` characters, else its outline (the class
    line, and each method's decorators, `def` line and docstring's first line)."""
    tree = pyparse.parse(source)
    lines = source.splitlines()
    imports = [ast.get_source_segment(source, n) or "" for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    node = _top_level(tree, entry)
    assert node is not None, entry
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    body = "\n".join(lines[first - 1 : node.end_lineno])
    if isinstance(node, ast.ClassDef) and len(body) > budget:
        body = _outline(node, lines)
    return ("\n".join(imports) + "\n\n...\n\n" if imports else "") + body


def _outline(node: ast.ClassDef, lines: list[str]) -> str:
    """The class line, its docstring's first line, its short class-level assignments, and
    each method's decorators, `def` line and docstring's first line."""
    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    out = lines[start - 1 : node.body[0].lineno - 1]
    for k, item in enumerate(node.body):
        indent = " " * item.col_offset
        if k == 0 and isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
            if isinstance(item.value.value, str) and item.value.value.strip():
                out.append(f'{indent}"""{_first_line(item.value.value)}"""')
        elif isinstance(item, ast.Assign | ast.AnnAssign) and (item.end_lineno or item.lineno) - item.lineno < 3:
            out += lines[item.lineno - 1 : item.end_lineno]
        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
            out += lines[first - 1 : item.body[0].lineno - 1]
            doc = ast.get_docstring(item)
            out += ([f'{indent}    """{_first_line(doc)}"""'] if doc else []) + [f"{indent}    ..."]
    return "\n".join(out)


def _first_line(doc: str) -> str:
    text = doc.strip().splitlines()
    return text[0].strip() + (" ..." if len(text) > 1 else "")


_WORDS = {
    False: {"call": "", "it": "it returns"},
    True: {"call": " (construct it by name, then call its methods)", "it": "they return"},
}


def _top_level(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    """The module's public top-level function or class of that name."""
    if name.startswith("_"):
        return None
    for n in tree.body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name:
            return n
    return None


def build_tasks(repo: Repo, mined: list[RepoTask], max_mutants: int = MAX_MUTANTS) -> tuple[list[Task], Counter[str]]:
    """The test-writing tasks of `repo`'s public top-level functions and classes that its
    single-bug mined tasks change, and why the others were skipped (counted in bugs, or
    in tasks for the reasons that skip a whole task)."""
    root = Path(repo.tree) / repo.pythonpath
    why: Counter[str] = Counter()
    groups: dict[tuple[str, str], list[RepoTask]] = defaultdict(list)
    for t in mined:
        if t.digest != repo.digest:
            why["bug mined from another revision"] += 1
        elif t.kind != "mutation" or len(t.mutations) != 1:
            why["bug of more than one site"] += 1
        else:
            # a method's bug is its class's: the tests call the class and its methods
            groups[(t.file, str(t.mutations[0].get("function", "")).split(".")[0])].append(t)
    installed = _installed(sorted({module_name(f, repo.pythonpath).split(".")[0] for f, _ in groups}))
    drafts: list[Task] = []
    for (file, entry), bugs in sorted(groups.items()):
        pristine = (Path(repo.tree) / file).read_text(encoding="utf-8")
        node = _top_level(pyparse.parse(pristine), entry)
        module = module_name(file, repo.pythonpath)
        if node is None:
            why["bug not in a public top-level function or class"] += len(bugs)
            continue
        if module.split(".")[0] in installed:  # a test could import that copy and compare
            why["task of a package the sandbox's Python has installed"] += 1
            continue
        files = package_files(root, module)
        mutants: list[dict[str, str]] = []
        seen = {pristine}
        for bug in bugs:
            changed = apply(pristine, [Mutation.from_dict(m) for m in bug.mutations])
            if changed in seen:
                why["bug the same program as another"] += 1
            else:
                seen.add(changed)
                mutants.append({"id": bug.id, "family": "train", "source": program(module, entry, changed)})
        family = f"{repo.slug}/{module}:{entry}"
        drafts.append(
            Task(
                id=f"twrepo/{family}",
                domain="test_writing",
                prompt=(
                    f"From the Python project `{repo.name}` ({repo.slug}), module `{file}`:\n\n"
                    f"```python\n{function_context(pristine, entry)}\n```\n\n"
                    + INSTRUCTIONS.format(entry=entry, module=module, **_WORDS[isinstance(node, ast.ClassDef)])
                ),
                entry_point=entry,
                reference=program(module, entry),
                tests={"format": "mutants", "prelude": _PRELUDE.replace("{files!r}", repr(files)), "mutants": mutants},
                metadata={
                    "family": family,
                    "split": "eval" if is_eval(family, EVAL_FRACTION) else "train",
                    "repo": repo.slug,
                    "file": file,
                    # what a copy to compare against would copy (rlvr.rewards.shown_code)
                    "shown_code": ast.get_source_segment(pristine, node) or "",
                    "show_code": True,
                },
            )
        )
    return _loading(drafts, max_mutants, why), why


def _loading(drafts: list[Task], max_mutants: int, why: Counter[str]) -> list[Task]:
    """The drafts whose reference program loads in the plain sandbox and binds the entry
    point, each with its mutants that load too (at most `max_mutants`): a mutant that does
    not load would be caught by every test."""
    programs: list[tuple[int, int | None]] = [(i, None) for i in range(len(drafts))]
    programs += [(i, k) for i, t in enumerate(drafts) for k in range(len(t.tests["mutants"]))]
    jobs: list[tuple[str, Tests]] = []
    for i, k in programs:
        t = drafts[i]
        code = t.reference if k is None else t.tests["mutants"][k]["source"]
        jobs.append(
            (f"{t.tests['prelude']}\n{code}", {"format": "script", "tests": [f"assert callable({t.entry_point})\n"]})
        )
    errors = {key: _error(r) for key, r in zip(programs, execute_many(jobs, LOAD_LIMITS, workers=2), strict=True)}
    out = []
    for i, t in enumerate(drafts):
        if errors[(i, None)]:
            why[f"task that does not load alone ({errors[(i, None)]})"] += 1
            continue
        loading = [m for k, m in enumerate(t.tests["mutants"]) if not errors[(i, k)]]
        for reason, n in (
            ("bug whose program does not load", len(t.tests["mutants"]) - len(loading)),
            ("bug past --max-mutants", len(loading) - max_mutants),
        ):
            if n > 0:
                why[reason] += n
        kept = [{**m, "id": m["id"].rsplit("/", 1)[-1]} for m in loading[:max_mutants]]
        if not kept:
            why["task with no bug left"] += 1
            continue
        out.append(
            dataclasses.replace(
                t,
                tests={**t.tests, "mutants": kept},
                difficulty=min(10, 1 + len(kept) // 2),
                metadata={**t.metadata, "mined_tasks": [m["id"] for m in loading[:max_mutants]]},
            )
        )
    return out


def _error(r: ExecutionResult) -> str:
    """'' when the probe passed, else the first line of why not."""
    if r.status is RunStatus.OK and r.tests and all(x.status is TestStatus.PASSED for x in r.tests):
        return ""
    return ((r.stderr or "").strip().splitlines()[-1:] or [r.status.value])[0][:120]


def _installed(packages: list[str]) -> set[str]:
    """The packages the sandbox's own Python finds without the in-memory hook (rlvr's
    environment may hold another copy of the project: a test could import it)."""
    probe = "import importlib.util\nassert importlib.util.find_spec({name!r}) is None\n"
    jobs: list[tuple[str, Tests]] = [("", {"format": "script", "tests": [probe.format(name=p)]}) for p in packages]
    return {p for p, r in zip(packages, execute_many(jobs, LOAD_LIMITS, workers=2), strict=True) if _error(r)}


def mined_tasks(repo: Repo, path: Path | None, bundled: Sequence[Task]) -> list[RepoTask]:
    """The repository's mined tasks: its saved ones (`rlvr repos mine`), else the bundled
    set's tasks of the same repository."""
    if path is not None and path.is_file():
        from rlvr.repos.mine import load_tasks

        return load_tasks(path)
    return [RepoTask.from_dict(t.tests["task"]) for t in bundled if t.tests.get("repo") == repo.slug]


def write(tasks: list[Task], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(t.to_dict(), sort_keys=True) + "\n" for t in tasks))


def summary(tasks: list[Task], why: Counter[str]) -> dict[str, Any]:
    return {
        "tasks": len(tasks),
        "mutants": sum(len(t.tests["mutants"]) for t in tasks),
        "eval": sum(t.metadata["split"] == "eval" for t in tasks),
        "skipped": dict(sorted(why.items())),
    }
