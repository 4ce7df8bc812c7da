"""SQL over a trace store (DuckDB), for `rlvr traces` and for scripts.

    con = connect("runs/quickstart/traces")      # or s3://..., memory://...
    con.sql("SELECT step, avg(reward) FROM trajectories GROUP BY step ORDER BY step")

Views (docs/traces.md has every column):
    trajectories        one row per trajectory (trained or dropped)
    turns               one row per message of a trajectory: step, group_id, sample, task_id,
                        domain, trained, turn (0-based), role, content, n_tokens, trainable
    tests               one row per test verdict: step, group_id, sample, task_id, domain,
                        trained, test (0-based), name, status, message, duration_s, held_out
                        (a held-out test: named held_out/<i>)
    metrics             one row per metric per step: step, name, value
    alerts              one row per alert: step, rule, category, action, value, threshold, message
    evals               one row per held-out evaluation: step, phase, pass_at_1, ...
    eval_trajectories   the evaluations' trajectories (same columns as trajectories)

The views read the parts present when `connect` is called; parts land whole, so a live
run can be queried at any time (connect again to see newer steps).
"""

from __future__ import annotations

from typing import Any

import duckdb
import fsspec

from rlvr.trace.parquet import SCHEMAS, StoreError, TraceStore

VIEWS = ("trajectories", "turns", "tests", "metrics", "alerts", "evals", "eval_trajectories")
_KEY = "step, group_id, sample, task_id, domain, trained"


def connect(uri: str) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the store's views defined (see the module's docstring)."""
    store = TraceStore.open(uri)
    con = duckdb.connect()
    local = isinstance(store.fs, fsspec.implementations.local.LocalFileSystem)
    if not local:
        con.register_filesystem(store.fs)
    proto = "" if local else _protocol(store.fs)
    for table in SCHEMAS:
        parts = store.parts(table)
        if parts:
            files = ", ".join(_sql_str(f"{proto}{p}") for p in parts)
            source = f"read_parquet([{files}], union_by_name = true)"
        else:  # no part yet: an empty table with the documented columns
            con.register(f"_empty_{table}", SCHEMAS[table].empty_table())
            source = f"_empty_{table}"
        if table == "metrics":
            con.execute(
                'CREATE VIEW metrics AS SELECT step, unnest(map_keys("values")) AS name, '
                f'unnest(map_values("values")) AS value FROM {source}'
            )
            continue
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM {source}")
    con.execute(
        f"CREATE VIEW turns AS SELECT {_KEY}, generate_subscripts(turns, 1) - 1 AS turn, "
        "unnest(turns, recursive := true) FROM trajectories"
    )
    con.execute(
        "CREATE VIEW tests AS SELECT *, starts_with(name, 'held_out/') AS held_out FROM "
        f"(SELECT {_KEY}, generate_subscripts(tests, 1) - 1 AS test, "
        "unnest(tests, recursive := true) FROM trajectories)"
    )
    return con


def query(uri: str, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(column names, rows) of `sql` over the store at `uri`; a bad query is a StoreError
    that carries DuckDB's message."""
    con = connect(uri)
    try:
        rel = con.sql(sql)
        if rel is None:  # a statement without a result (SET, CREATE ...)
            return [], []
        return list(rel.columns), rel.fetchall()
    except duckdb.Error as e:
        raise StoreError(f"query failed: {one_line(str(e))}") from None
    finally:
        con.close()


def one_line(message: str) -> str:
    """DuckDB's message on one line, without its echo of the query and the caret under it."""
    lines = [x.strip() for x in message.splitlines()]
    return " ".join(x for x in lines if x and not x.startswith("LINE ") and set(x) != {"^"})


def _protocol(fs: fsspec.AbstractFileSystem) -> str:
    p = fs.protocol
    return f"{p if isinstance(p, str) else p[0]}://"


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
