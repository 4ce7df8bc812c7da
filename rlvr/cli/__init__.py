"""The `rlvr` command (rlvr.cli.main); one module per subcommand."""

from rlvr.cli.main import main

__all__ = ["main"]
