"""Sandbox throughput table; same as `rlvr sandbox bench`. See rlvr/sandbox/bench.py.

    .venv/bin/python bench/sandbox_throughput.py [--n 300] [--humaneval] [--json PATH]
    .venv/bin/python bench/sandbox_throughput.py --smoke   # a few runs per cell, JSON last (the test suite)

A failed run (a baseline's, or a canonical solution's) is one line on stderr and exit
status 3, as `rlvr sandbox bench` says it, never a figure.
"""

import sys

from rlvr.sandbox.bench import main
from rlvr.sandbox.pool import SandboxError

if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SandboxError as e:
        print(f"sandbox bench: {e}", file=sys.stderr)
        sys.exit(3)
