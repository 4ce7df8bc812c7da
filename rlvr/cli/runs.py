"""The commands that read a run (its directory or its trace store), live or finished:

rlvr traces RUN "SQL" [--json|--csv]              SQL (DuckDB) over the trace store
rlvr traces show RUN --step N [--task ID]          one trajectory as a person reads it
rlvr replay RUN --step N [--task ID] [--config OTHER.yaml] [--train]
rlvr report RUN [RUN2 ...] [--out FILE]            one self-contained HTML report
rlvr dashboard RUN [--port P]                      the report, live, refreshing as steps land
rlvr export RUN --format preference|sft --out FILE reward-model / SFT data

Each lives in its own module with `add_parser(subparsers)` and `run(args) -> int`; a
module is imported only when its command runs, or when the parser is built (so the
modules keep heavy imports inside their functions).
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

COMMANDS = {
    "traces": "rlvr.cli.traces",
    "replay": "rlvr.train.replay",
    "report": "rlvr.cli.report",
    "dashboard": "rlvr.cli.report",
    "export": "rlvr.trace.export",
}


def _module(name: str) -> Any:
    return importlib.import_module(COMMANDS[name])


def add_parsers(sub: Any) -> None:
    """Register every run command that exists (a module not written yet is skipped)."""
    seen = set()
    for mod in COMMANDS.values():
        if mod in seen:
            continue
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name and mod.startswith(e.name):
                continue
            raise
        module.add_parser(sub)
        seen.add(mod)


def run(args: argparse.Namespace) -> int:
    return int(_module(args.command).run(args))
