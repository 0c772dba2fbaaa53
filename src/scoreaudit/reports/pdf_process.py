"""WeasyPrint in a process of its own, started when a run begins, so the PDF's fixed costs overlap the run.

Importing WeasyPrint and loading its fonts take about half a second, a seventh of what a re-run after a
hypothesis edit costs (issue 33). `run` starts this process right after compiling a spec that asks for a
PDF: it imports WeasyPrint and lays out a small page in the stylesheet (fonts loaded) on another core
while the pipeline, the statistics and report.html are computed, then waits for the HTML.

The process is a pure function, HTML bytes in and PDF bytes out over its pipes; it opens no file. The
parent writes the PDF (atomically, as ever). Messages are one JSON line each, a payload's bytes after
its line:

    parent → child   {"html_bytes": n}  + n bytes         (end of input: quit)
    child → parent   {"pages": k}                         (laid out; now writing)
                     {"pdf_bytes": m}   + m bytes
                     {"unavailable": message}             (WeasyPrint or its libraries missing)
                     {"error": message}                   (WeasyPrint raised)

Anything but a PDF or "unavailable" (the process died, an error) makes the parent lay the PDF out
itself, so a run never loses its PDF to this process and a real error surfaces with its traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from scoreaudit.reports.pdf import PdfUnavailable

#: the child's entry point; argv[1] is the folder that holds this scoreaudit package. `python -c` puts the
#: working folder first on the path (""): it is dropped before anything is imported, so no module in a project
#: (a `json.py` among the data) runs. The package's folder goes last (first, a site-packages folder would
#: shadow the standard library), and a scoreaudit found elsewhere first (another install) ends the child: the
#: parent then lays the PDF out with its own code. (`-P` does the first on Python 3.11 only.)
_CHILD = ("import os, sys; sys.path[:] = [p for p in sys.path if p]; root = os.path.realpath(sys.argv[1]); "
          "sys.path.append(root); import scoreaudit; "
          "sys.exit(3) if not os.path.realpath(scoreaudit.__file__).startswith(root + os.sep) else None; "
          "from scoreaudit.reports.pdf_process import serve; serve()")


class PdfProcess:
    """The parent's handle: `convert` HTML to a PDF (as often as needed), `close` (or leave the `with` block)
    to stop the process."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self._proc = proc

    @classmethod
    def start(cls) -> PdfProcess | None:
        """Start the process (it warms up on its own); None where no process can be started."""
        if not sys.executable or getattr(sys, "frozen", False):  # embedded or bundled: no interpreter to start
            return None
        root = str(Path(__file__).resolve().parents[2])
        try:
            # stderr: nothing to show (WeasyPrint logs to a null handler, as in-process); a crash shows
            # when the parent lays the PDF out itself
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, root], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            return None
        return cls(proc)

    def __enter__(self) -> PdfProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def convert(self, html: str, on_laid_out=None) -> bytes | None:
        """The PDF of `html`, or None when the process failed (the caller lays it out itself).

        Raises PdfUnavailable where WeasyPrint cannot be imported. `on_laid_out(pages)` is called between
        the layout and the writing (the progress bar's second stage)."""
        proc = self._proc
        if proc.stdin is None or proc.stdout is None or proc.poll() is not None:
            return None
        data = html.encode("utf-8")
        try:
            proc.stdin.write(json.dumps({"html_bytes": len(data)}).encode() + b"\n" + data)
            proc.stdin.flush()
            while True:
                msg = _read_message(proc.stdout)
                if msg is None or "error" in msg:
                    return None
                if "unavailable" in msg:
                    raise PdfUnavailable(str(msg["unavailable"]))
                if "pages" in msg:
                    if on_laid_out is not None:
                        on_laid_out(int(msg["pages"]))
                    continue
                n = int(msg["pdf_bytes"])
                pdf = proc.stdout.read(n)
                return pdf if len(pdf) == n else None
        except (OSError, ValueError, KeyError, TypeError):  # a broken pipe, a garbled line: the process is gone
            return None

    def close(self) -> None:
        """Stop the process (unused or done) and wait for it: nothing is left running."""
        proc = self._proc
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _read_message(stream: IO[bytes]) -> dict | None:
    line = stream.readline()
    if not line:
        return None
    msg = json.loads(line)
    return msg if isinstance(msg, dict) else None


def _warm_up() -> None:
    """Lay out one small page in the report's stylesheet: WeasyPrint's lazy imports and the fonts load now."""
    from importlib.resources import files

    from scoreaudit.reports.pdf import convert

    css = files("scoreaudit.reports").joinpath("templates/style.css").read_text(encoding="utf-8")
    page = (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>w</title><style>{css}</style></head>"
            "<body><main><h1>Warm</h1><p>up <b>bold</b> <em>em</em> <code>code</code></p>"
            "<table><tr><th>a</th><td>1.0</td></tr></table>"
            "<svg width='40' height='20' viewBox='0 0 40 20'><text x='1' y='12'>x</text>"
            "<line x1='0' y1='0' x2='40' y2='20' stroke='black'/></svg></main></body></html>")
    convert(page)


def serve(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """The child's loop (module docstring): warm up, then one PDF per request until the input ends."""
    from scoreaudit.reports.pdf import convert, load_weasyprint

    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    unavailable = None
    try:
        load_weasyprint()
        _warm_up()
    except PdfUnavailable as e:
        unavailable = str(e)
    except Exception:  # noqa: BLE001 - a failed warm-up only costs the time it saves
        pass

    def send(msg: dict, payload: bytes = b"") -> None:
        stdout.write(json.dumps(msg).encode() + b"\n" + payload)
        stdout.flush()

    while True:
        header = stdin.readline()
        if not header:
            return
        n = int(json.loads(header)["html_bytes"])
        html = stdin.read(n).decode("utf-8")
        if unavailable is not None:
            send({"unavailable": unavailable})
            continue
        try:
            pdf = convert(html, lambda pages: send({"pages": pages}))
        except Exception as e:  # noqa: BLE001 - reported; the parent lays it out itself and raises it there
            send({"error": f"{type(e).__name__}: {e}"})
            continue
        send({"pdf_bytes": len(pdf)}, pdf)


__all__ = ["PdfProcess", "serve"]
