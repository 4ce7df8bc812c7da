"""The training progress display: a rich progress bar with step, reward, pass rate,
tokens/s and ETA; plain lines when output is not a terminal or `quiet` is set."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import (
    Progress as RichProgress,
)


class Progress:
    def __init__(self, total: int, start: int = 0, quiet: bool = False) -> None:
        self.quiet = quiet
        self.console = Console(stderr=True)
        self.interactive = self.console.is_terminal and not quiet
        self._bar = RichProgress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.interactive,
        )
        self._task = self._bar.add_task("train", total=total, completed=start, stats="")

    def __enter__(self) -> Progress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(f"[dim]{text}[/dim]")

    def update(self, step: int, row: dict[str, Any]) -> None:
        stats = f"reward {row['reward_mean']:+.3f}  pass {row['pass_rate']:.0%}  {row['tokens_per_s']:.0f} tok/s"
        self._bar.update(self._task, completed=step, stats=stats)
        if not self.interactive and not self.quiet:
            print(
                f"step {step}: {stats}  ({row['rollout_wait_s']:.1f}s rollout wait, {row['train_s']:.1f}s train)",
                file=sys.stderr,
                flush=True,
            )
