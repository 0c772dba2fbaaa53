"""report.html → report.pdf bytes with WeasyPrint: the one place that imports it and lays out pages.

Used in the process that renders (`render.write_pdf`) and in the PDF process a run starts early
(`pdf_process.py`), so both write the same bytes. Every URL fetch but the embedded `data:` thumbnails is
refused: the report is self-contained.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PDF_INSTALL_HINT = ("PDF output needs WeasyPrint: install it with `pip install 'scoreaudit[pdf]'` "
                    "(on Debian/Ubuntu also `apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0`). "
                    "The HTML report was written.")

#: the PDF variant asked of WeasyPrint: tagged (structure tree, reading order, alt texts) for screen readers
PDF_VARIANT = "pdf/ua-1"


class PdfUnavailable(RuntimeError):
    """WeasyPrint (or its system libraries) is missing; the message says how to install it."""


def load_weasyprint():
    """WeasyPrint's HTML class, or PdfUnavailable with the install hint."""
    try:
        from PIL import ImageFile

        strict = ImageFile.LOAD_TRUNCATED_IMAGES
        from weasyprint import HTML

        ImageFile.LOAD_TRUNCATED_IMAGES = strict  # weasyprint flips this process-wide on import
    except (ImportError, OSError) as e:  # OSError: pango / harfbuzz missing
        raise PdfUnavailable(f"{PDF_INSTALL_HINT} ({type(e).__name__}: {e})") from None
    return HTML


def _refuse_fetch(url: str, *args: Any, **kwargs: Any):
    raise ValueError(f"the report must be self-contained; refused to fetch {url}")


def fetcher():
    """A URL fetcher that reads only `data:` URIs (the embedded thumbnails) and refuses every other URL."""
    try:
        from weasyprint.urls import URLFetcher
    except ImportError:  # WeasyPrint before 68: a plain function
        from weasyprint import default_url_fetcher

        def fetch(url: str, *args: Any, **kwargs: Any):
            if not url.startswith("data:"):
                _refuse_fetch(url)
            return default_url_fetcher(url, *args, **kwargs)

        return fetch
    return URLFetcher(allowed_protocols={"data"})


def lay_out(html: str):
    """The laid-out WeasyPrint document (its `pages` are the PDF's pages)."""
    return load_weasyprint()(string=html, url_fetcher=fetcher()).render()


@contextmanager
def _collector_relaxed() -> Iterator[None]:
    """Python's cycle collector at a hundredth of its usual pace while WeasyPrint works.

    A layout allocates hundreds of thousands of small containers, which set off a collection every 700;
    almost none of them is garbage until the PDF is written. At 100,000 the demo's 14-page PDF took
    0.2 s less (1.87 → 1.69 s, four runs each, bench/rerun.py's bundle) for 1.5 MiB more peak memory."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def convert(html: str, on_laid_out: Callable[[int], None] | None = None) -> bytes:
    """`html` as PDF bytes; `on_laid_out(pages)` is called between the layout and the writing."""
    with _collector_relaxed():
        document = lay_out(html)
        if on_laid_out is not None:
            on_laid_out(len(document.pages))
        return pdf_bytes(document)


def pdf_bytes(document) -> bytes:
    """The PDF as PDF/UA-1 (tagged) where this WeasyPrint writes it, else a plain PDF."""
    try:
        return document.write_pdf(pdf_variant=PDF_VARIANT)
    except (TypeError, ValueError, KeyError):  # a WeasyPrint without that variant
        return document.write_pdf()


__all__ = ["PDF_INSTALL_HINT", "PDF_VARIANT", "PdfUnavailable", "convert", "fetcher", "lay_out", "load_weasyprint",
           "pdf_bytes"]
