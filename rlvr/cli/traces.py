"""`rlvr traces`: SQL over a run's trace store, and one trajectory as a person reads it.

rlvr traces RUN                                   the views, their row counts and columns
rlvr traces RUN "SQL" [--json|--csv] [--wide]     a query's result as a table (or for scripts)
rlvr traces show RUN --step N [--task ID] [--sample K] [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

MAX_ROWS = 1000  # rows printed as a table; --json and --csv print every row
MAX_CELL = 80  # characters of a cell in a table; --wide prints whole cells


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "traces",
        help="query a run's trace store with SQL (DuckDB), or show one trajectory",
        description='rlvr traces RUN "SQL" runs SQL over the run\'s views (trajectories, turns, tests, '
        "metrics, alerts, evals, eval_trajectories; docs/traces.md). rlvr traces RUN lists them. "
        "rlvr traces show RUN --step N [--task ID] prints trajectories as a person reads them. "
        "RUN is a run directory or a trace store's path or URL; a live run can be queried.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("words", nargs="+", metavar="RUN [SQL] | show RUN", help="what to read")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON (a list of rows as objects)")
    out.add_argument("--csv", action="store_true", help="print CSV with a header line")
    p.add_argument("--wide", action="store_true", help="do not shorten long cells in the table")
    p.add_argument("--step", type=int, help="show: the training step")
    p.add_argument("--task", help="show: the task id (default: every task of the step)")
    p.add_argument("--sample", type=int, help="show: which sample of the group (0-based)")
    p.add_argument("--dropped", action="store_true", help="show: include dropped trajectories")


def run(args: argparse.Namespace) -> int:
    from rlvr.config.base import ConfigError
    from rlvr.trace.parquet import run_store_uri

    words = list(args.words)
    if words[0] == "show":
        if len(words) != 2:
            raise ConfigError("usage: rlvr traces show RUN --step N [--task ID] [--sample K]")
        if args.step is None:
            raise ConfigError("rlvr traces show: --step N is required (the training step to show)")
        return _show(run_store_uri(words[1]), args)
    if args.step is not None or args.task or args.sample is not None or args.dropped:
        raise ConfigError("--step, --task, --sample and --dropped belong to `rlvr traces show RUN ...`")
    if len(words) > 2:
        raise ConfigError(f"rlvr traces: one SQL statement in quotes, got {len(words) - 1} words: quote the query")
    uri = run_store_uri(words[0])
    if len(words) == 1:
        return _describe(uri)
    from rlvr.trace.query import query

    columns, rows = query(uri, words[1])
    _print_rows(columns, rows, args)
    return 0


def _describe(uri: str) -> int:
    from rlvr.trace.query import VIEWS, connect

    con = connect(uri)
    print(f"trace store: {uri}")
    for view in VIEWS:
        n = con.sql(f"SELECT count(*) FROM {view}").fetchall()[0][0]
        cols = con.sql(f"SELECT * FROM {view} LIMIT 0").columns
        print(f"  {view} ({n} rows): {', '.join(cols)}")
    print('example: rlvr traces RUN "SELECT step, avg(reward) FROM trajectories GROUP BY step ORDER BY step"')
    return 0


def _cell(v: Any, wide: bool) -> str:
    s = "" if v is None else (json.dumps(v, default=str) if isinstance(v, dict | list) else str(v))
    if isinstance(v, float):
        s = f"{v:.6g}"
    return s if wide or len(s) <= MAX_CELL else s[: MAX_CELL - 1] + "…"


def _print_rows(columns: list[str], rows: list[tuple[Any, ...]], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], default=str, ensure_ascii=False))
        return
    if args.csv:
        w = csv.writer(sys.stdout)
        w.writerow(columns)
        for r in rows:
            w.writerow([json.dumps(v, default=str) if isinstance(v, dict | list) else v for v in r])
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(show_edge=False, header_style="bold")
    for c in columns:
        table.add_column(c, overflow="fold")
    for r in rows[:MAX_ROWS]:
        table.add_row(*(_cell(v, args.wide) for v in r), end_section=False)
    console = Console(soft_wrap=args.wide)
    console.print(table)
    more = f", first {MAX_ROWS} shown (--json or --csv print all)" if len(rows) > MAX_ROWS else ""
    console.print(f"({len(rows)} row{'s' if len(rows) != 1 else ''}{more})", style="dim")


def _show(uri: str, args: argparse.Namespace) -> int:
    from rlvr.trace.parquet import StoreError
    from rlvr.trace.query import connect

    con = connect(uri)
    where, params = ["step = ?"], [args.step]
    if args.task:
        where.append("task_id = ?")
        params.append(args.task)
    if args.sample is not None:
        where.append("sample = ?")
        params.append(args.sample)
    if not args.dropped:
        where.append("trained")
    rel = con.execute(f"SELECT * FROM trajectories WHERE {' AND '.join(where)} ORDER BY group_id, sample", params)
    columns = [d[0] for d in rel.description]
    rows = [dict(zip(columns, r, strict=True)) for r in rel.fetchall()]
    if not rows:
        steps = [r[0] for r in con.sql("SELECT DISTINCT step FROM trajectories ORDER BY 1").fetchall()]
        if args.step not in steps:
            shown = f"{steps[0]}..{steps[-1]}" if steps else "none yet"
            raise StoreError(f"no step {args.step} in {uri} (steps: {shown})")
        tasks = [
            r[0]
            for r in con.execute("SELECT DISTINCT task_id FROM trajectories WHERE step = ?", [args.step]).fetchall()
        ]
        raise StoreError(
            f"no trajectory of step {args.step} matches (tasks at that step: {', '.join(sorted(tasks)[:10])}"
            f"{', …' if len(tasks) > 10 else ''}; --dropped includes dropped ones)"
        )
    if args.json:
        print(json.dumps(rows, default=str, ensure_ascii=False, indent=1))
        return 0
    for i, row in enumerate(rows):
        if i:
            print()
        print(format_trajectory(row))
    return 0


def format_trajectory(row: dict[str, Any]) -> str:
    """One trajectory (a row of the trajectories table) as text a person reads: who, the
    reward and why, every message, the verdicts and the sandbox's output."""
    out = []
    kept = "trained" if row["trained"] else "dropped"
    head = (
        f"step {row['step']} · task {row['task_id']} ({row['domain']}) · group {row['group_id']} "
        f"sample {row.get('sample')} · {kept} · policy v{row['policy_version']}"
    )
    out.append(head)
    out.append("=" * min(len(head), 100))
    if row["status"] != "ok":
        out.append(f"EPISODE FAILED: {row['error']}")
    comps = row.get("reward_components") or {}
    comp_text = ", ".join(f"{k} {v:.3f}" if v is not None else f"{k} -" for k, v in dict(comps).items())
    reward = "-" if row["reward"] is None else f"{row['reward']:.3f}"
    adv = "" if row["advantage"] is None else f" · advantage {row['advantage']:+.3f}"
    out.append(f"reward {reward}{adv}  ({comp_text})")
    details = json.loads(row["reward_details"]) if row.get("reward_details") else {}
    for h in details.get("hacks", []):
        out.append(f"FLAG {h.get('name')} at line {h.get('line')}: {h.get('what')}")
    for flag in row.get("reward_flags") or []:
        if not any(h.get("name") == flag for h in details.get("hacks", [])):
            out.append(f"FLAG {flag}")
    if details.get("hack_action"):
        out.append(f"  ({details['hack_action']})")
    attempt = 0
    seen_assistant = False
    for turn in row.get("turns") or []:
        role = turn["role"]
        if role == "assistant":
            attempt += 1
            seen_assistant = True
            label = f"assistant · attempt {attempt} · {turn['n_tokens']} tokens"
        elif role == "user":
            label = "user · feedback" if seen_assistant else "user · prompt"
        else:
            label = role
        out.append(f"--- {label} ---")
        out.append(turn["content"].rstrip())
    out.append(f"--- finish: {row['finish_reason'] or '-'} · {row['completion_tokens']} completion tokens ---")
    if row.get("exec_status") is not None:
        out.append(
            f"--- sandbox: {row['exec_status']} · {row['exec_passed']}/{row['exec_total']} tests passed · "
            f"{row['exec_wall_s']:.2f}s wall, {row['exec_cpu_s']:.2f}s CPU, {row['exec_peak_mb']:.0f} MB ---"
        )
        for t in row.get("tests") or []:
            msg = f"  ({t['message']})" if t.get("message") else ""
            out.append(f"  {t['status']:<7} {t['name']}{msg}")
        if row.get("exec_error"):
            out.append(f"error: {row['exec_error']}")
        if (row.get("exec_stderr") or "").strip():
            out.append("stderr:\n" + row["exec_stderr"].rstrip())
        if (row.get("exec_stdout") or "").strip():
            out.append("stdout:\n" + row["exec_stdout"].rstrip())
    return "\n".join(out)
