"""Trajectory store and metric logs."""

from rlvr.trace.store import JsonlStore, summarize_step

__all__ = ["JsonlStore", "summarize_step"]
