"""`rlvr config CONFIG [key.path=value ...]` prints the resolved config; `rlvr config --keys`
every key, its default and its meaning."""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from rlvr.cli.common import config_args, keys_help
from rlvr.config import load_config, load_plugins


def add_parser(sub: Any) -> None:
    c = sub.add_parser("config", help="print the resolved config, or every key with --keys")
    config_args(c, required=False)
    c.add_argument("--keys", action="store_true", help="list every config key, its default and its meaning")


def run(args: argparse.Namespace) -> int:
    if args.keys:
        print(keys_help())
        return 0
    cfg = load_config(args.config, args.overrides)
    from rlvr.rollout.registry import check_engine_kind
    from rlvr.trace.alerts import check_alert_rules

    load_plugins(cfg)  # names other packages own, plugins' included (reward terms: when the run starts)
    check_engine_kind(cfg)
    check_alert_rules(cfg)
    print(yaml.safe_dump(cfg.model_dump(), sort_keys=False), end="")
    return 0
