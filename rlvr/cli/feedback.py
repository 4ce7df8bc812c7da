"""`rlvr feedback`: people's feedback on model outputs into a feedback store, and SQL over it.

rlvr feedback import FILE [FILE ...] --store DIR     records in docs/feedback.md's schema (.jsonl)
rlvr feedback import --from-run RUN --store DIR [--steps A:B] [--min-margin M]
                                                     a run's own groups as preference records
rlvr feedback query --store DIR [SQL]                SQL over the view `feedback` (default: a summary)
"""

from __future__ import annotations

import argparse
from typing import Any

SUMMARY_SQL = (
    "SELECT kind, source, count(*) AS records, count(DISTINCT who) AS people, "
    "round(avg(label), 3) AS mean_label, strftime(min(time), '%Y-%m-%d') AS first, "
    "strftime(max(time), '%Y-%m-%d') AS last FROM feedback GROUP BY kind, source ORDER BY kind, source"
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "feedback",
        help="people's feedback on model outputs: import it, query it",
        description="Feedback records (ratings, thumbs, preferences, accepted/edited/rejected outputs; "
        "docs/feedback.md) go into a feedback store that rlvr rm train reads.",
    )
    fs = p.add_subparsers(dest="feedback_command", required=True)
    imp = fs.add_parser("import", help="validate records and append them to a feedback store")
    imp.add_argument("files", nargs="*", metavar="FILE", help="feedback files (.jsonl, one record per line)")
    imp.add_argument("--store", required=True, metavar="DIR", help="the feedback store (a directory or fsspec URL)")
    imp.add_argument("--from-run", metavar="RUN", help="a run directory or trace store: its groups' preference pairs")
    imp.add_argument("--steps", metavar="A:B", help="--from-run: the training steps to read")
    imp.add_argument("--min-margin", type=float, metavar="M", help="--from-run: least reward difference of a pair")
    q = fs.add_parser("query", help="SQL over the store's view `feedback`")
    q.add_argument("sql", nargs="?", help="a query (default: records by kind and source)")
    q.add_argument("--store", required=True, metavar="DIR", help="the feedback store")
    q.add_argument("--json", action="store_true", help="rows as JSON lines")


def run(args: argparse.Namespace) -> int:
    if args.feedback_command == "import":
        return _import(args)
    return _query(args)


def _import(args: argparse.Namespace) -> int:
    from collections import Counter

    from rlvr.config import ConfigError
    from rlvr.feedback.records import read_file
    from rlvr.feedback.store import FeedbackStore

    if bool(args.files) == bool(args.from_run):
        raise ConfigError("rlvr feedback import: name feedback files, or --from-run RUN (one of the two)")
    if not args.from_run and (args.steps or args.min_margin is not None):
        raise ConfigError("--steps and --min-margin apply to --from-run only")
    skipped: Counter[str] = Counter()
    # every file is read (and checked) before anything is written
    records = _run_records(args, skipped) if args.from_run else [r for f in args.files for r in read_file(f)]
    done = FeedbackStore(args.store).append(records)
    line = f"imported {done.added} of {len(records)} records into {args.store}"
    if done.duplicates:
        line += f" ({done.duplicates} already there)"
    if skipped:
        line += "; left out: " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
    print(line)
    return 0


def _run_records(args: argparse.Namespace, skipped: Any) -> list[Any]:
    from datetime import UTC, datetime
    from pathlib import Path

    from rlvr.config import ConfigError
    from rlvr.feedback.runs import run_records
    from rlvr.trace.export import parse_steps, store_rows
    from rlvr.trace.parquet import run_store_uri

    if args.min_margin is not None and not args.min_margin > 0:
        raise ConfigError(f"--min-margin must be > 0 (ties are never pairs), got {args.min_margin}")
    rows, summary = store_rows(
        run_store_uri(args.from_run), "preference", min_margin=args.min_margin, steps=parse_steps(args.steps)
    )
    skipped.update(summary.skipped)
    name = Path(args.from_run.rstrip("/")).name or args.from_run
    return run_records(rows, name, datetime.now(UTC), skipped)


def _query(args: argparse.Namespace) -> int:
    import json

    import duckdb

    from rlvr.feedback.store import open_store
    from rlvr.trace.query import one_line
    from rlvr.trace.store import StoreError

    con = open_store(args.store).connect()
    try:
        rel = con.sql(args.sql or SUMMARY_SQL)
        if rel is None:
            return 0
        cols, rows = list(rel.columns), rel.fetchall()
    except duckdb.Error as e:
        raise StoreError(f"query failed: {one_line(str(e))}") from None
    finally:
        con.close()
    if args.json:
        for r in rows:
            print(json.dumps(dict(zip(cols, r, strict=True)), default=str, ensure_ascii=False))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(*cols)
    for r in rows:
        table.add_row(*("" if v is None else str(v) for v in r))
    Console().print(table)
    return 0
