"""What machine a bench ran on, for its results: the CPU's name and its vector kind."""

from __future__ import annotations

import contextlib
import platform
from pathlib import Path


def _cpuinfo(field: str) -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(field):
                return line.split(":", 1)[1].strip()
    return ""


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), or what platform knows of it."""
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_kind() -> str:
    """The widest vector kind the CPU reports: AVX-512 BF16, AVX-512, AVX2 or other."""
    flags = _cpuinfo("flags").split()
    if "avx512_bf16" in flags:
        return "AVX-512 BF16"
    return "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "other")
