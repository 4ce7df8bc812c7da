"""Sandbox throughput table; same as `rlvr sandbox bench`. See rlvr/sandbox/bench.py."""

import sys

from rlvr.sandbox.bench import main

if __name__ == "__main__":
    main(sys.argv[1:])
