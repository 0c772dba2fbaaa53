"""Give freed memory back to the system between the stages of a run.

A run's stages peak one after another (the tables, then the statistics, then the report's layout),
but memory a stage frees stays in the process: CPython's allocator keeps glibc arenas, and Arrow
keeps its pool's pages. So each stage's peak sat on top of the last one's leftovers, and the whole
run's peak grew with the number of images although no stage holds more than its own data (issue 33:
+13% at 10x the images, most of it from building the tables). `trim()` after a stage returns those
pages: Arrow's unused pool memory, and glibc's `malloc_trim` where the C library has it. It changes
no result and costs well under a millisecond.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's malloc_trim, or None (another C library, or none found)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None


def prefer_system_allocator() -> None:
    """Let Arrow allocate with the C library's malloc unless the user chose a pool (ARROW_DEFAULT_MEMORY_POOL).

    Arrow's default pool (mimalloc) keeps freed pages mapped: reading and writing the bundle's tables
    left tens of MB per 1,000 images in the process for the rest of the run, which `trim` cannot give
    back; glibc's malloc hands them back on `malloc_trim`. Only the command line calls this, before
    anything imports pyarrow (a library must not choose its caller's allocator)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def trim() -> None:
    """Return freed pages (no garbage collection: a full one costs ~60 ms on a run's objects, and what a stage
    drops is freed by reference counting already)."""
    arrow = sys.modules.get("pyarrow")  # only when a stage used Arrow: trimming never imports it
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    fn = _malloc_trim()
    if fn is not None:
        fn(0)


__all__ = ["prefer_system_allocator", "trim"]
