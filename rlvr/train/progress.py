"""The training progress display: a rich progress bar with the step, the last step's
reward, pass rate and generation speed, the ETA, and what the run is doing inside the
step (generating n/N sequences, executing n/N replies, learning micro-batch n/N); one
plain line per step when output is not a terminal or `plain` is set; nothing with `quiet`.

Rollouts and the learner report phases from their own threads (async rollouts generate
the next step while this one learns), so both are shown side by side."""

from __future__ import annotations

import sys
import threading
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
    def __init__(self, total: int, start: int = 0, quiet: bool = False, plain: bool = False) -> None:
        self.quiet = quiet
        self.console = Console(stderr=True)
        self.interactive = self.console.is_terminal and not quiet and not plain
        self._bar = RichProgress(
            TextColumn("[bold]step"),
            MofNCompleteColumn(),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[stats]}"),
            TextColumn("[cyan]{task.fields[phase]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.interactive,
        )
        self._task = self._bar.add_task("train", total=total, completed=start, stats="", phase="starting")
        self._phases: dict[str, tuple[str, int, int]] = {}  # source -> (phase, done, total)
        self._lock = threading.Lock()

    def __enter__(self) -> Progress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(f"[dim]{text}[/dim]")

    def alert(self, text: str) -> None:
        """An alert or a warning about the run: printed even with --quiet."""
        self.console.print(text, style="bold red" if self.interactive else None, markup=False, highlight=False)

    def phase(self, source: str, name: str, done: int, total: int) -> None:
        """What `source` ('rollout', 'learner') is doing now, e.g. ('rollout', 'executing', 3, 16)."""
        with self._lock:
            # another source's finished phase (rollouts done, now learning) is no longer news
            self._phases = {k: v for k, v in self._phases.items() if k == source or v[1] < v[2]}
            self._phases[source] = (name, done, total)
            text = " · ".join(f"{n} {d}/{t}" for n, d, t in (self._phases[k] for k in sorted(self._phases)))
        self._bar.update(self._task, phase=f"| {text}")

    def update(self, step: int, row: dict[str, Any]) -> None:
        speed = f"gen {row['time/gen_tokens_per_s']:.0f} tok/s" if row.get("time/gen_tokens_per_s") else ""
        if "reward/mean" in row:
            stats = f"reward {row['reward/mean']:+.3f}  pass {row['reward/pass_rate']:.0%}  {speed}"
        else:
            stats = f"nothing trained (every group dropped)  {speed}"
        wait, learn = row["time/rollout_wait_s"], row["time/train_s"]
        self.show(step, stats, f"step {step}: {stats}  ({wait:.1f}s rollout wait, {learn:.1f}s train)")

    def show(self, step: int, stats: str, line: str) -> None:
        """Step `step` done: `stats` beside the bar, or `line` printed when the display is
        plain (the supervised stage's steps come here with their own figures)."""
        with self._lock:
            self._phases.clear()  # the next report (the next step's, or async rollouts') sets them again
        self._bar.update(self._task, completed=step, stats=stats, phase="")
        if not self.interactive and not self.quiet:
            print(line, file=sys.stderr, flush=True)
