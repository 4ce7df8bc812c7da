"""Loading a run config: YAML files, `a.b=c` overrides, a run's saved config, plugins, and
the field table behind `rlvr train --help`. Every problem is a ConfigError naming the
dotted key. `rlvr.config` re-exports all of it.

RunConfig is defined in `rlvr.config`, which imports this module; so it is looked up when
a function runs (`_root`), never at import time, and either module can be imported first.
"""

from __future__ import annotations

import functools
import inspect
import io
import itertools
import textwrap
import tokenize
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ValidationError

from rlvr.config.base import ConfigError

if TYPE_CHECKING:
    from rlvr.config import RunConfig

__all__ = [
    "apply_override",
    "describe_fields",
    "field_docs",
    "import_plugins",
    "load_config",
    "load_plugins",
    "load_run_config",
]


def _root() -> type[RunConfig]:
    """The top-level config model (imported here, not at module level: see the docstring)."""
    from rlvr.config import RunConfig

    return RunConfig


def _format_validation_error(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if not key:  # a check across sections: its message names its keys
            lines += ["  " + line for line in msg.splitlines()]
            continue
        if e["type"] == "extra_forbidden":
            parent = e["loc"][:-1]
            msg = f"unknown key; allowed here: {', '.join(_allowed_keys(parent))}"
        elif "input" in e and not isinstance(e["input"], dict):
            msg += f" (got {e['input']!r})"
        lines.append(f"  {key}: {msg}")
    return "invalid config:\n" + "\n".join(lines)


def _section(ann: Any) -> type[BaseModel] | None:
    """The section model behind a field's annotation (unwrapping `X | None`), or None."""
    import types
    import typing

    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        inner = [a for a in typing.get_args(ann) if a is not type(None)]
        ann = inner[0] if len(inner) == 1 else None
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _allowed_keys(path: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = _root()
    for part in path:
        if str(part) not in model.model_fields:
            return []
        sub = _section(model.model_fields[str(part)].annotation)
        if sub is None:
            return []
        model = sub
    return sorted(model.model_fields)


def apply_override(data: dict[str, Any], override: str) -> None:
    """Apply one `a.b=c` override in place; c is parsed as YAML (so 3, 1e-5, true, [a, b])."""
    if "=" not in override:
        raise ConfigError(f"override '{override}' is not of the form key.path=value")
    key, raw = override.split("=", 1)
    parts = key.strip().split(".")
    model: type[BaseModel] = _root()
    node = data
    for i, part in enumerate(parts):
        if part not in model.model_fields:
            where = ".".join(parts[:i]) or "top level"
            raise ConfigError(
                f"unknown config key '{key}': '{part}' is not a key of {where}; "
                f"allowed: {', '.join(sorted(model.model_fields))}"
            )
        if i == len(parts) - 1:
            node[part] = yaml.safe_load(raw) if raw.strip() else ""
            return
        sub = _section(model.model_fields[part].annotation)
        if sub is None:
            raise ConfigError(f"config key '{'.'.join(parts[: i + 1])}' is a value, not a section")
        model = sub
        if node.get(part) is None:
            node[part] = {}
        child = node[part]
        if not isinstance(child, dict):
            raise ConfigError(f"config key '{'.'.join(parts[: i + 1])}' must be a mapping")
        node = child


def _yaml_problem(e: yaml.YAMLError) -> str:
    """PyYAML's error on one line: the problem and where."""
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        mark = e.problem_mark
        return f"{e.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(e).split())


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Read a YAML config (or start from defaults), apply overrides, validate."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            loaded = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: not valid YAML: {_yaml_problem(e)}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the top level must be a mapping, got {type(loaded).__name__}")
        data = loaded
    for ov in overrides or []:
        apply_override(data, ov)
    _plugins_first(data)
    try:
        return _root().model_validate(data)
    except ValidationError as e:
        where = f"{path}: " if path else ""
        raise ConfigError(where + _format_validation_error(e)) from None


def load_run_config(run_dir: str | Path) -> RunConfig:
    """The resolved config a run saved (<run>/config.yaml: every key, defaults included)."""
    p = Path(run_dir) / "config.yaml"
    if not p.is_file():
        raise ConfigError(f"{run_dir}: not a run directory (no config.yaml)")
    try:
        data = yaml.safe_load(p.read_text()) or {}
        _plugins_first(data)
        return _root().model_validate(data, context={"resolved": True})
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {_yaml_problem(e)}") from None
    except ValidationError as e:
        raise ConfigError(f"{p}: " + _format_validation_error(e)) from None


_LOADED_PLUGIN_FILES: set[Path] = set()


def _plugins_first(data: Any) -> None:
    """Import the plugins a config names before it is validated, so that the names they
    register (an advantage estimator, an engine, a reward term) are valid in it."""
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if isinstance(plugins, list) and all(isinstance(p, str) for p in plugins):
        import_plugins(plugins)
    reward = data.get("reward") if isinstance(data, dict) else None
    terms = reward.get("terms") if isinstance(reward, dict) else None
    if isinstance(terms, list):
        import_plugins(term_plugins([t.get("name") for t in terms if isinstance(t, dict)]))


def term_plugins(names: list[Any]) -> list[str]:
    """The modules that register the named reward terms other packages own (TERM_PLUGINS)."""
    from rlvr.config.reward import TERM_PLUGINS

    return list(dict.fromkeys(TERM_PLUGINS[n] for n in names if isinstance(n, str) and n in TERM_PLUGINS))


def load_plugins(cfg: RunConfig) -> None:
    """Import the config's plugin modules (each registers what it defines), and those of
    the reward terms it names that another package registers; the loaders already did, so
    this imports nothing twice (a module imports once; a .py file runs once)."""
    import_plugins([*cfg.plugins, *term_plugins([t.name for t in cfg.reward.terms])])


def import_plugins(names: list[str]) -> None:
    """Import plugin modules: dotted names on the path, or .py files."""
    import importlib
    import importlib.util
    import sys

    for name in names:
        try:
            if name.endswith(".py"):
                path = Path(name)
                if path.resolve() in _LOADED_PLUGIN_FILES:
                    continue
                spec = importlib.util.spec_from_file_location(path.stem, path)
                if spec is None or spec.loader is None or not path.is_file():
                    raise ImportError(f"no such file: {path}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[path.stem] = module
                spec.loader.exec_module(module)
                _LOADED_PLUGIN_FILES.add(path.resolve())
            else:
                importlib.import_module(name)
        except Exception as e:
            raise ConfigError(f"plugins: cannot import '{name}': {type(e).__name__}: {e}") from None


@functools.cache
def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """{field: its docstring} of a config model: the string literal right below each
    annotated field in the class body (its bases' first, so a subclass's own wins). A
    class whose source cannot be read (built at run time) has none. Read with tokenize
    (config sits below rlvr.tasks.pyparse, the one place that parses Python)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(cls))
        except (OSError, TypeError):
            continue
        docs |= _attribute_docs(source)
    return docs


def _attribute_docs(source: str) -> dict[str, str]:
    """{name: docstring} of a class's source: a logical line `name: ...` in the class body
    followed by a logical line that is one string."""
    body: list[list[tokenize.TokenInfo]] = []  # the class body's logical lines
    line: list[tokenize.TokenInfo] = []
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.INDENT:
                depth += 1
            elif tok.type == tokenize.DEDENT:
                depth -= 1
            elif tok.type == tokenize.NEWLINE:
                if line and depth == 1:
                    body.append(line)
                line = []
            elif tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
                line.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {}
    docs = {}
    for field, after in itertools.pairwise(body):
        annotated = len(field) >= 2 and field[0].type == tokenize.NAME and field[1].string == ":"
        if annotated and len(after) == 1 and after[0].type == tokenize.STRING:
            docs[field[0].string] = inspect.cleandoc(_unquote(after[0].string))
    return docs


def _unquote(token: str) -> str:
    """The text of a string token (prefix and quotes off; an escaped quote or backslash read
    as itself): enough for help text."""
    text = token.lstrip("rRuUbBfF")
    quote = text[:3] if text[:3] in ('"""', "'''") else text[:1]
    return text[len(quote) : len(text) - len(quote)].replace('\\"', '"').replace("\\\\", "\\")


def describe_fields(model: type[BaseModel] | None = None, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted key, default, description) for every leaf field of `model` (default: the whole
    RunConfig): the CLI help's source. The description is the field's docstring, or its
    Field(description=...)."""
    model = _root() if model is None else model
    docs = field_docs(model)
    rows: list[tuple[str, str, str]] = []
    for name, info in model.model_fields.items():
        sub = _section(info.annotation)
        key = f"{prefix}{name}"
        desc = " ".join((info.description or docs.get(name, "")).split())
        if sub is not None:
            if info.get_default(call_default_factory=True) is None:
                rows.append((key, "None", desc))
            rows.extend(describe_fields(sub, key + "."))
        else:
            default = info.get_default(call_default_factory=True)
            rows.append((key, repr(default), desc))
    return rows
