"""`rlvr score TASK_FILE COMPLETION_FILE [--config CONFIG] [--task-id ID] [--step N] [--json]`: one
reply's whole reward breakdown and hack flags, judged exactly as training judges it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, load_config, load_plugins


def add_parser(sub: Any) -> None:
    sc = sub.add_parser(
        "score",
        help="the full reward breakdown and hack flags of one completion for one task",
        description="Judge COMPLETION_FILE (the assistant's whole reply) on one task exactly as "
        "training does, and print every reward component, the combined reward and the hack flags.",
    )
    sc.add_argument("task_file", help="task file: JSONL (use --task-id if it has several) or one task as .json")
    sc.add_argument("completion_file", help="the reply to score, as plain text ('-' for stdin)")
    sc.add_argument("--config", help="run config whose reward section applies (default: the defaults)")
    sc.add_argument("--task-id", help="which task of a multi-task file")
    sc.add_argument(
        "--tokens", action="store_true", help="count the reply's tokens with the config's model (length component)"
    )
    sc.add_argument(
        "--step",
        type=int,
        default=0,
        help="the training step whose hidden tests to draw (reward.hidden_tests; default 0)",
    )
    sc.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from rlvr.envs.scoring import load_one_task, report, score_completion
    from rlvr.rewards.hacks import BEHAVIOURAL

    cfg = load_config(args.config)
    load_plugins(cfg)
    task = load_one_task(args.task_file, args.task_id)
    if args.completion_file == "-":
        completion = sys.stdin.read()
    else:
        cp = Path(args.completion_file)
        if not cp.is_file():
            raise ConfigError(f"completion file not found: {cp}")
        completion = cp.read_text()
    num_tokens = None
    if args.tokens:
        from rlvr.rollout.models import load_tokenizer

        tok = load_tokenizer(cfg.model.name_or_path, cfg.model.cache_dir)
        num_tokens = len(tok(completion, add_special_tokens=False)["input_ids"])
    out = report(score_completion(task, completion, cfg, num_tokens, step=args.step))
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    from rich.console import Console  # the parser is built for every command: rich only when printing
    from rich.table import Table

    console = Console()
    table = Table(title=f"{out['task_id']} ({out['domain']}): reward {out['total']:.3f}")
    table.add_column("component")
    table.add_column("value", justify="right")
    table.add_column("details")
    details = out["details"]
    for name, value in out["components"].items():
        table.add_row(name, f"{value:.3f}", json.dumps(details.get(name, ""), default=str)[:100])
    console.print(table)
    if details.get("gated_out"):
        console.print(f"gated out: {', '.join(details['gated_out'])}")
    if out["flags"]:
        console.print(f"[red]hack flags: {', '.join(out['flags'])}[/red]")
        for h in details.get("hacks", []):
            where = f"line {h['line']}" if h["line"] else ("run" if h["name"] in BEHAVIOURAL else "code")
            console.print(f"  {where}: {h['name']} ({h.get('severity', 'strong')}): {h['what']}")
        if details.get("hack_action"):
            console.print(f"[red]{details['hack_action']}[/red]")
    ex = out["execution"]
    if ex:
        console.print(f"sandbox: {ex['status']}, {ex['passed']}/{ex['total']} tests passed")
        for t in ex["tests"]:
            if t["status"] != "PASSED":
                console.print(f"  {t['status']:<7} {t['name']}  -- {t['message'][:200]}")
    return 0
