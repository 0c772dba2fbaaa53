"""run.log: one line per step saying whether it ran or came from the cache, and why.

Format (tab-separated, one step per line):
    <key>  <cached|ran>  <reason>  <kind>  <slot>
where reason is `cached`, `new`, `parameters changed`, `plugin version changed`
or `input changed` (runtime/cache.py: `explain`). Lines starting with `#` are
run-level notes (start, device, batch commits, end).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, TextIO


def _one_line(text: str) -> str:
    """Data (ids, titles, reasons) cannot start a line or a field: tabs and control characters escaped."""
    from scoreaudit.diagnostics import safe_text

    return safe_text(str(text)).replace("\t", "\\t")


class RunLog:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh: TextIO = path.open("w", encoding="utf-8")
        self.counts: Counter[tuple[str, str]] = Counter()  # (kind, reason) -> steps
        # scorer -> score steps computed (not cached): the forward passes the run made, which the plan's
        # `forward_passes` predicts for an empty cache (run.json counts.forward_passes)
        self.forward: Counter[str] = Counter()
        self.capture: list | None = None  # set by runtime.memo.Capture: (step, reason) of the batch in flight

    def note(self, text: str) -> None:
        self._fh.write(f"# {_one_line(text)}\n")

    def step(self, step: Any, reason: str) -> None:
        status = "cached" if reason == "cached" else "ran"
        self._fh.write(f"{step.key}\t{status}\t{reason}\t{step.kind}\t{_one_line(step.slot)}\n")
        self.counts[(step.kind, reason)] += 1
        if step.kind == "score" and reason != "cached":  # slot: "score NAME arm/image operator@dose"
            parts = str(step.slot).split(" ", 2)
            if len(parts) > 1:
                self.forward[parts[1]] += 1
        if self.capture is not None:
            self.capture.append((step, reason))

    def cached(self, lines: str, counts: Any) -> None:
        """Many cached steps at once: their lines as written (`cached_lines`) and (kind, steps) counts
        (a memo's replay)."""
        self._fh.write(lines)
        for kind, n in counts:
            self.counts[(kind, "cached")] += n

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def summary(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (kind, reason), n in sorted(self.counts.items()):
            out.setdefault(kind, {})[reason] = n
        return out


def cached_lines(steps: Any) -> str:
    """The run.log lines of steps taken from the cache, as `RunLog.step` writes them."""
    return "".join(f"{s.key}\tcached\tcached\t{s.kind}\t{_one_line(s.slot)}\n" for s in steps)


def read_run_log(path: Path) -> list[dict[str, str]]:
    """The step lines of a run.log as dicts (key, status, reason, kind, slot)."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        key, status, reason, kind, slot = line.split("\t", 4)
        rows.append({"key": key, "status": status, "reason": reason, "kind": kind, "slot": slot})
    return rows
