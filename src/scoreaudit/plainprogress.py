"""Progress off a terminal: plain periodic lines (`progress: STAGE done/total (pct) rate/s`), never silence.

A bottom-layer module so that every stage (the runtime's bars, the statistics, simulate) says the same thing
the same way when stderr is a CI log or `| tee`: a line every `SCOREAUDIT_PROGRESS_SECONDS` (default 10)
and one when the stage completes. On a terminal, `stage_bar` draws a transient rich bar instead.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from scoreaudit.termsafe import safe_text


class PlainLines:
    """Periodic `stage done/total (pct) rate` lines on a stream (no control codes)."""

    def __init__(self, stream=None, every: float | None = None):
        self.stream = stream or sys.stderr
        self.every = float(os.environ.get("SCOREAUDIT_PROGRESS_SECONDS", "10")) if every is None else every
        self.tasks: dict[str, list] = {}  # label -> [done, total, started, last printed]

    def add(self, label: str, total: int) -> None:
        now = time.monotonic()
        self.tasks[label] = [0, int(total), now, now]

    def advance(self, label: str, n: int) -> None:
        t = self.tasks[label]
        t[0] += n
        now = time.monotonic()
        if t[0] >= t[1] or now - t[3] >= self.every:
            t[3] = now
            self.line(label)

    def line(self, label: str) -> None:
        done, total, started, _ = self.tasks[label]
        rate = done / max(time.monotonic() - started, 1e-9)
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        print(f"progress: {safe_text(label)} {done}/{total}{pct} {rate:,.1f}/s", file=self.stream, flush=True)

    def log(self, message: str) -> None:
        print(safe_text(message, keep_newlines=True), file=self.stream, flush=True)


def terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class StageBar:
    """One stage's progress: a transient rich bar on a terminal, plain lines elsewhere.

    `advance(n, note)` (the note, e.g. the cell being computed, shows on the bar only); `close()`.
    """

    def __init__(self, label: str, total: int, stream=None):
        self.label = label
        stream = stream or sys.stderr
        self._plain: PlainLines | None = None
        self._rich: Any = None
        if not terminal(stream):
            self._plain = PlainLines(stream)
            self._plain.add(label, total)
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        # labels and notes are text, not rich markup: `[` in a name is shown, not parsed
        self._rich = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                              MofNCompleteColumn(), TextColumn("{task.fields[note]}", markup=False),
                              TimeElapsedColumn(), transient=True, console=Console(file=stream))
        self._rich.start()
        self._task = self._rich.add_task(safe_text(label), total=total, note="")

    def advance(self, n: int = 1, note: str = "") -> None:
        if self._plain is not None and n:
            self._plain.advance(self.label, n)
        if self._rich is not None:
            self._rich.update(self._task, advance=n, note=safe_text(note))

    def stage(self, note: str) -> None:
        """A slow step begins (e.g. `laying out the PDF pages`): a line of its own off a terminal, so a log
        never sits silent through it; the bar's note on a terminal."""
        if self._plain is not None:
            done, total = self._plain.tasks[self.label][:2]
            self._plain.log(f"progress: {self.label} {done}/{total}: {note}")
        if self._rich is not None:
            self._rich.update(self._task, note=safe_text(note))

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None


def stage_bar(enabled: bool, label: str, total: int) -> StageBar | None:
    """A `StageBar` when progress is wanted, else None."""
    return StageBar(label, total) if enabled else None
