"""Untrusted code execution (see `rlvr.sandbox.process` for what is and is not protected)."""

from rlvr.sandbox.process import Limits, execute, execute_many

__all__ = ["Limits", "execute", "execute_many"]
