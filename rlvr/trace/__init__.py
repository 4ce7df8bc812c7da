"""What a run records: the Parquet trace store (`parquet.py`) and its DuckDB queries,
the JSONL logs (`store.py`), the metric sinks (`sinks.py`), the monitor and its alert
rules (`monitor.py`, `alerts.py`), and export (`export.py`)."""

from rlvr.trace.store import JsonlStore, summarize_step

__all__ = ["JsonlStore", "summarize_step"]
