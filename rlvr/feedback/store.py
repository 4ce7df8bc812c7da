"""The feedback store: every imported record as Parquet, under a local path or any fsspec
URL, queryable with SQL like the trace store.

    <uri>/records/part-000001.parquet     the records of one import, in file order

An import writes one part, under a temporary name and then moved into place, so a
reader never sees half an import and a failed import leaves nothing. Records whose id
is already in the store are not written again (and are counted), so importing the same
file twice is a no-op. Every part carries `rlvr.schema_version` in its metadata; the
columns are documented in docs/feedback.md.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rlvr.feedback.records import SCHEMA_VERSION, FeedbackError, FeedbackRecord

_PART = re.compile(r"part-(\d+)\.parquet$")
_MSG = pa.struct([("role", pa.string()), ("content", pa.string())])
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("prompt", pa.list_(_MSG)),
        ("output", pa.string()),
        ("output_b", pa.string()),
        ("preferred", pa.string()),
        ("rating", pa.float64()),
        ("scale_low", pa.float64()),
        ("scale_high", pa.float64()),
        ("thumbs", pa.string()),
        ("edited", pa.string()),
        ("label", pa.float64()),  # rating, thumbs, accepted, rejected on 0..1 (null otherwise)
        ("source", pa.string()),
        ("time", pa.timestamp("us", tz="UTC")),
        ("who", pa.string()),
        ("task_id", pa.string()),
        ("family", pa.string()),
        ("conversation", pa.string()),
        ("meta", pa.string()),  # JSON
    ]
)


def _row(r: FeedbackRecord) -> dict[str, Any]:
    return {
        "id": r.id,
        "kind": r.kind,
        "prompt": r.messages(),
        "output": r.output,
        "output_b": r.output_b,
        "preferred": r.preferred,
        "rating": r.rating,
        "scale_low": r.scale[0] if r.scale else None,
        "scale_high": r.scale[1] if r.scale else None,
        "thumbs": r.thumbs,
        "edited": r.edited,
        "label": r.label(),
        "source": r.source,
        "time": r.time,
        "who": r.who,
        "task_id": r.task_id,
        "family": r.family,
        "conversation": r.conversation,
        "meta": json.dumps(r.meta, sort_keys=True, ensure_ascii=False) if r.meta else None,
    }


def _record(row: dict[str, Any]) -> FeedbackRecord:
    scale = (row["scale_low"], row["scale_high"]) if row["scale_low"] is not None else None
    return FeedbackRecord(
        kind=row["kind"],
        prompt=tuple((m["role"], m["content"]) for m in row["prompt"]),
        output=row["output"],
        source=row["source"],
        time=row["time"],
        who=row["who"],
        id=row["id"],
        output_b=row["output_b"],
        preferred=row["preferred"],
        rating=row["rating"],
        scale=scale,
        thumbs=row["thumbs"],
        edited=row["edited"],
        task_id=row["task_id"],
        family=row["family"],
        conversation=row["conversation"],
        meta=json.loads(row["meta"]) if row["meta"] else {},
    )


@dataclass
class Imported:
    added: int
    duplicates: int  # already in the store, or repeated within the import
    part: str | None  # the part written (None: nothing new)


class FeedbackStore:
    def __init__(self, uri: str, *, create: bool = True) -> None:
        self.uri = uri.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.uri)
        if create:
            self.fs.makedirs(f"{self.root}/records", exist_ok=True)
        elif not self.fs.isdir(f"{self.root}/records"):
            raise FeedbackError(
                f"{uri}: no feedback store there (no records/ folder); create one with rlvr feedback import"
            )

    def parts(self) -> list[str]:
        if not self.fs.isdir(f"{self.root}/records"):
            return []
        names = self.fs.ls(f"{self.root}/records", detail=False)
        found = [(int(m.group(1)), str(n)) for n in names if (m := _PART.search(str(n)))]
        return [n for _, n in sorted(found)]

    def _read(self, columns: Sequence[str] | None = None) -> pa.Table:
        tables = []
        for path in self.parts():
            with self.fs.open(path, "rb") as f, pq.ParquetFile(f) as part:
                tables.append(part.read(columns=columns, use_threads=False))
        if not tables:
            schema = SCHEMA if columns is None else pa.schema([SCHEMA.field(c) for c in columns])
            return schema.empty_table()
        return pa.concat_tables(tables, promote_options="default")

    def ids(self) -> set[str]:
        return set(self._read(["id"]).column("id").to_pylist())

    def append(self, records: Sequence[FeedbackRecord]) -> Imported:
        """Write the records not already in the store as one new part."""
        seen = self.ids()
        fresh = []
        for r in records:
            if r.id not in seen:
                seen.add(r.id)
                fresh.append(r)
        if not fresh:
            return Imported(0, len(records), None)
        parts = self.parts()
        n = int(_PART.search(parts[-1]).group(1)) + 1 if parts else 1  # type: ignore[union-attr]
        final = f"{self.root}/records/part-{n:06d}.parquet"
        tmp = f"{self.root}/records/.part-{n:06d}.{uuid.uuid4().hex}.tmp"
        table = pa.Table.from_pylist([_row(r) for r in fresh], schema=SCHEMA)
        table = table.replace_schema_metadata({"rlvr.schema_version": str(SCHEMA_VERSION), "rlvr.table": "feedback"})
        with self.fs.open(tmp, "wb") as f:
            pq.write_table(table, f, compression="zstd")
        self.fs.mv(tmp, final)
        return Imported(len(fresh), len(records) - len(fresh), final)

    def records(self) -> list[FeedbackRecord]:
        """Every record, in import order."""
        return [_record(row) for row in self._read().to_pylist()]

    def connect(self) -> Any:
        """A DuckDB connection with one view, `feedback` (the columns of SCHEMA)."""
        import duckdb

        con = duckdb.connect()
        con.register("_feedback", self._read())
        con.execute("CREATE VIEW feedback AS SELECT * FROM _feedback")
        return con


def open_store(uri: str) -> FeedbackStore:
    """An existing store, for reading."""
    return FeedbackStore(uri, create=False)
