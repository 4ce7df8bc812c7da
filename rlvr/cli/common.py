"""What the commands share: the config argument and its overrides anywhere on the line,
the key listing, the checkpoint argument, the libraries' progress bars."""

from __future__ import annotations

import argparse
import functools
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, RunConfig, describe_fields

FMT = argparse.RawDescriptionHelpFormatter


@functools.cache  # several commands' help shows it, and every command's parser is built at start
def keys_help() -> str:
    lines = ["config keys (set in the YAML file or as key.path=value):"]
    for key, default, desc in describe_fields(RunConfig):
        lines.append(f"  {key} = {default}\n      {desc}")
    return "\n".join(lines)


def package_version() -> str:
    try:
        return version("rlvr")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def config_args(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument("config", nargs="?", help="YAML run config (or --config)")
    parser.add_argument("overrides", nargs="*", help="key.path=value overrides, anywhere on the line")
    parser.add_argument("--config", dest="config_opt", metavar="CONFIG", help="YAML run config")
    parser.set_defaults(config_required=required)


def run_parser(sub: Any, name: str, what: str, per: str = "step") -> argparse.ArgumentParser:
    """The parser of a command that runs a job from a config (train, sft, rft): the config
    and overrides, --resume, --quiet, --plain; the config keys in its help."""
    t: argparse.ArgumentParser = sub.add_parser(name, help=what, epilog=keys_help(), formatter_class=FMT)
    config_args(t)
    t.add_argument("--resume", action="store_true", help="continue from the run directory's latest checkpoint")
    t.add_argument("--quiet", action="store_true", help="no progress display")
    t.add_argument("--plain", action="store_true", help=f"one plain line per {per} (for logs), even on a terminal")
    return t


# key.path=value: a dotted identifier, then '='. Option values are never taken for one.
_OVERRIDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*=")
_VALUE_OPTIONS = {"--config", "--checkpoint", "--engine", "--base-url"}


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """(arguments for argparse, key.path=value overrides) of a train/eval/config line,
    so that overrides may come before or after flags."""
    rest: list[str] = []
    overrides: list[str] = []
    expect_value = False
    for arg in argv:
        if expect_value:
            rest.append(arg)
            expect_value = False
        elif arg in _VALUE_OPTIONS:
            rest.append(arg)
            expect_value = True
        elif _OVERRIDE.match(arg):
            overrides.append(arg)
        else:
            rest.append(arg)
    return rest, overrides


def resolve_config_arg(args: argparse.Namespace) -> None:
    """args.config from the positional or --config (not both; required where needed)."""
    positional, option = args.config, args.config_opt
    if positional and option:
        # a stray positional after --config is an override without '='
        raise ConfigError(f"'{positional}': give the config once (positional or --config), and overrides as key=value")
    args.config = positional or option
    if args.config is None and args.config_required and not getattr(args, "keys", False):
        raise ConfigError(
            f"rlvr {args.command}: a config file is needed (rlvr {args.command} CONFIG or --config CONFIG)"
        )


def checkpoint_model_dir(path: str) -> str:
    """The model directory of a run directory's latest checkpoint, of a checkpoint, or
    the model directory itself."""
    from rlvr.train.checkpoint import latest_checkpoint

    p = Path(path)
    if not p.is_dir():
        raise ConfigError(f"--checkpoint {p}: no such directory")
    for root in (p / "checkpoints", p):  # a run directory, or its checkpoints/ folder
        latest = latest_checkpoint(root)
        if latest is not None and (latest / "model" / "config.json").is_file():
            return str(latest / "model")
    if (p / "model" / "config.json").is_file():
        return str(p / "model")
    if (p / "config.json").is_file():
        return str(p)
    raise ConfigError(
        f"--checkpoint {p}: no model found (a run directory with checkpoints/step-N/, a step-N/ checkpoint, "
        "or a model directory with config.json)"
    )


def quiet_libraries() -> None:
    """The libraries' own progress bars (weights loading, GGUF conversion, shard writing)
    would interleave with rlvr's progress display: rlvr reports its own phases."""
    import huggingface_hub.utils
    import transformers.utils.logging

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()


def generating_model(cfg: Any, source: str) -> tuple[Any, Any, str]:
    """(model, tokenizer, name) of what generates for an eval-like command: the model at
    `source` on the config's device, or with engine.kind openai no model (the server holds
    the weights; the tokenizer makes the token ids) and the server named."""
    from rlvr.rollout.models import load_policy, load_tokenizer

    quiet_libraries()
    if cfg.engine.kind == "openai":
        name = f"{cfg.engine.openai.served_model or source} at {cfg.engine.openai.base_url}"
        return None, load_tokenizer(source, cfg.model.cache_dir), name
    model, tok = load_policy(
        source, dtype=cfg.model.dtype, cache_dir=cfg.model.cache_dir, seed=cfg.seed, device=cfg.model.device
    )
    return model, tok, source


def before_after_table(title: str, before: Any, after: Any) -> Any:
    """A rich table with 'at the start' and 'at the end' columns, its first row the
    held-out pass@1 of two evaluations (EvalResult or None) when there is one."""
    from rich.table import Table  # the parser is built for every command: rich only when printing

    table = Table(title=title)
    table.add_column("")
    table.add_column("at the start", justify="right")
    table.add_column("at the end", justify="right")
    n = next((r.num_tasks for r in (before, after) if r is not None), 0)
    if n:
        fmt = lambda r: f"{r.pass_at_1:.3f}" if r is not None else "-"  # noqa: E731
        table.add_row(f"held-out pass@1 ({n} tasks, greedy)", fmt(before), fmt(after))
    return table
