"""Static security analysis of Python code: dangerous operations found in the AST,
weighted by severity. The value is -(sum of severities), floored at -1; 0 means clean.

Findings (severity): process spawning and shells (0.5; `shell=True` 1.0), eval/exec/
compile of strings (0.7), unsafe deserialisation: pickle/marshal/yaml.load without a safe
loader (0.7), raw ctypes (0.7), sockets and HTTP clients (0.5), file writes outside the
working directory: absolute paths or '..' (0.5), SQL built by string formatting and
passed to execute (0.7), os.system/os.popen (1.0), importing the sandbox or test harness
(1.0). Operations the sandbox refused at run time (PermissionError and friends in the
output) add 0.3 each, up to 3.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from rlvr.rewards.base import RewardComponent
from rlvr.tasks import pyparse

_SPAWN = {
    "subprocess.run",
    "subprocess.Popen",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "os.execv",
    "os.execve",
    "os.execvp",
    "os.spawnv",
    "os.fork",
    "pty.spawn",
}
_SHELL = {"os.system", "os.popen"}
_DESERIALISE = {"pickle.load", "pickle.loads", "marshal.load", "marshal.loads", "shelve.open", "dill.loads"}
_NETWORK_MODULES = {"socket", "urllib", "urllib.request", "http.client", "requests", "httpx", "ftplib", "smtplib"}
_HARNESS_MODULES = {"rlvr", "pytest", "_pytest", "unittest.mock"}
_SQL = re.compile(r"\b(select|insert|update|delete|drop|create)\b", re.IGNORECASE)
_BLOCKED = re.compile(r"PermissionError|Operation not permitted|Network is unreachable|Read-only file system")


def dotted_name(node: ast.AST) -> str:
    """The dotted name an expression spells (`os.path.join`), '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[dict[str, Any]] = []
        self.aliases: dict[str, str] = {}

    def add(self, node: ast.AST, kind: str, severity: float, what: str) -> None:
        self.findings.append({"kind": kind, "severity": severity, "what": what, "line": getattr(node, "lineno", 0)})

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            self._check_module(node, a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{mod}.{a.name}"
        self._check_module(node, mod)

    def _check_module(self, node: ast.AST, mod: str) -> None:
        root = mod.split(".")[0]
        if mod in _NETWORK_MODULES or root in {"socket", "requests", "httpx"}:
            self.add(node, "network", 0.5, f"imports {mod}")
        if root in {m.split(".")[0] for m in _HARNESS_MODULES} and mod != "unittest":
            self.add(node, "harness", 1.0, f"imports {mod}")
        if root == "ctypes":
            self.add(node, "ctypes", 0.7, "imports ctypes")

    def _resolve(self, func: ast.AST) -> str:
        name = dotted_name(func)
        head, _, rest = name.partition(".")
        if head in self.aliases:
            return self.aliases[head] + (f".{rest}" if rest else "")
        return name

    def visit_Call(self, node: ast.Call) -> None:
        name = self._resolve(node.func)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if name in _SHELL:
            self.add(node, "shell", 1.0, name)
        elif name in _SPAWN:
            shell_arg = kw.get("shell")
            shell = isinstance(shell_arg, ast.Constant) and shell_arg.value is True
            self.add(
                node, "shell" if shell else "process", 1.0 if shell else 0.5, f"{name}(shell=True)" if shell else name
            )
        elif name in {"eval", "exec", "compile", "builtins.eval", "builtins.exec"}:
            if not (node.args and isinstance(node.args[0], ast.Constant)):
                self.add(node, "eval", 0.7, f"{name} of a computed string")
        elif name in _DESERIALISE:
            self.add(node, "deserialise", 0.7, name)
        elif name in {"yaml.load", "yaml.unsafe_load"}:
            loader = dotted_name(kw["Loader"]) if "Loader" in kw else ""
            if name == "yaml.unsafe_load" or "Safe" not in loader:
                self.add(node, "deserialise", 0.7, f"{name} without SafeLoader")
        elif name.endswith(".execute") or name.endswith(".executemany"):
            if node.args and _is_formatted_sql(node.args[0]):
                self.add(node, "sql-injection", 0.7, "SQL built by string formatting")
        elif name in {"open", "builtins.open", "io.open"} and node.args:
            mode = node.args[1] if len(node.args) > 1 else kw.get("mode")
            writing = (
                isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")
            )
            target = node.args[0]
            outside = (
                isinstance(target, ast.Constant)
                and isinstance(target.value, str)
                and (target.value.startswith("/") or ".." in target.value)
            )
            if writing and outside:
                self.add(node, "write-outside", 0.5, f"writes {ast.unparse(target)}")
        elif name.startswith("ctypes."):
            self.add(node, "ctypes", 0.7, name)
        self.generic_visit(node)


def _is_formatted_sql(node: ast.AST) -> bool:
    text = ""
    if isinstance(node, ast.JoinedStr):
        text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        return bool(_SQL.search(text)) and any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        left = node.left
        return isinstance(left, ast.Constant) and isinstance(left.value, str) and bool(_SQL.search(left.value))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = node.func.value
        return isinstance(base, ast.Constant) and isinstance(base.value, str) and bool(_SQL.search(base.value))
    return False


def scan(code: str) -> list[dict[str, Any]]:
    """Findings in `code`; unparsable code has none (format and completion judge it)."""
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError):
        return []
    s = _Scanner()
    s.visit(tree)
    return s.findings


def security_reward(code: str, runtime_output: str = "") -> RewardComponent:
    findings = scan(code)
    blocked = min(len(_BLOCKED.findall(runtime_output)), 10)
    penalty = sum(f["severity"] for f in findings) + 0.3 * blocked
    return RewardComponent(
        max(-1.0, -penalty) if penalty else 0.0, {"findings": findings, "blocked_at_runtime": blocked}
    )
