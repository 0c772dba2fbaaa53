"""Progress bars (rich) with counts and rates; plain lines off a terminal; a silent twin when off.

One bar per (arm, stage): "decode + regions", "operators + measures" and one
"score <scorer>" per scorer. Rich writes to stderr so stdout stays clean, and
`enabled=False` creates no console at all (tests see no output). Labels and messages are text, never
rich markup, and pass through `termsafe.safe_text`. When stderr
is not a terminal (CI logs, `| tee`), a bar would be invisible or garbage, so
each stage prints a plain line every `SCOREAUDIT_PROGRESS_SECONDS` (default
10) and when it completes: `progress: real: score laion 280/560 (50%) 41.2/s`.
"""

from __future__ import annotations

import sys
from typing import Any

from scoreaudit.plainprogress import PlainLines, terminal as _terminal  # PlainLines re-exported
from scoreaudit.termsafe import safe_text


class Progress:
    """`task(label, total)` returns an id; `advance(id, n)`; use as a context manager."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._rich: Any = None
        self._plain: PlainLines | None = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> Progress:
        if self.enabled and not _terminal(sys.stderr):
            self._plain = PlainLines()
        elif self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress as RichProgress,
                ProgressColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.text import Text

            class Rate(ProgressColumn):
                def render(self, task) -> Text:
                    speed = task.finished_speed or task.speed
                    return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")

            self._rich = RichProgress(
                TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                TaskProgressColumn(), Rate(), TimeElapsedColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=False)
            self._rich.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._rich is not None:
            self._rich.__exit__(*exc)
            self._rich = None

    def task(self, label: str, total: int) -> str:
        if self._plain is not None and label not in self._plain.tasks:
            self._plain.add(label, total)
        if self._rich is not None and label not in self._tasks:
            self._tasks[label] = self._rich.add_task(safe_text(label), total=total)
        return label

    def advance(self, label: str, n: int = 1) -> None:
        if self._plain is not None and label in self._plain.tasks and n:
            self._plain.advance(label, n)
        if self._rich is not None and label in self._tasks and n:
            self._rich.advance(self._tasks[label], n)

    def log(self, message: str) -> None:
        if self._plain is not None:
            self._plain.log(message)
        if self._rich is not None:
            self._rich.console.print(safe_text(message, keep_newlines=True), markup=False, highlight=False)
