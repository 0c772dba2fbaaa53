"""The language server's wire: `Content-Length` frames read off stdin, a bad frame costing that frame only.

pygls' own loop trusts the header: `Content-Length: 1000000000000` makes it allocate the body at once
(MemoryError, the server dies), and a header that undercounts its body leaves the rest of the body glued to
the next header, so no later header is recognised and the server answers nothing again. Here

- a frame above `MAX_FRAME` bytes (or a length of more digits than any such frame has) is refused with a
  JSON-RPC error (id null) and its body is never read as a whole;
- a body that is not JSON (an undercounted or corrupted frame) is answered with a parse error;
- a body that swallowed the start of the next frame (an overcounting header) gives that frame back;
- after any of these, reading resynchronises on the next line that *ends* in a `Content-Length` header, so
  whatever junk precedes that header on its line (the rest of a miscounted body) is skipped;
- lines are read in bounded pieces, so a stream without newlines cannot exhaust memory either.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

MAX_FRAME = 32 * 1024 * 1024  # bytes of one message body: far above any .audit document an editor sends
LINE_PIECE = 64 * 1024  # the most one readline call returns
HEADER_TAIL = 128  # bytes of an unfinished line kept: a header ending the line starts within them
MAX_DIGITS = len(str(MAX_FRAME))
HEADER = re.compile(rb"content-length:[ \t]*(\d+)[ \t]*\r?\n\Z", re.IGNORECASE)
NEXT_HEADER = re.compile(rb"content-length:", re.IGNORECASE)
PARSE_ERROR, INVALID_REQUEST = -32700, -32600

logger = logging.getLogger(__name__)


class BoundedReader:
    """stdin read off the event loop, one line piece (at most `LINE_PIECE` bytes) or body at a time.

    `unread` puts bytes back in front of the stream (the next frame found inside an overcounted body).
    """

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.pending = b""
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lsp-stdin")

    def unread(self, data: bytes) -> None:
        self.pending = data + self.pending

    async def readline(self) -> bytes:
        if self.pending:
            end = self.pending.find(b"\n", 0, LINE_PIECE)
            cut = LINE_PIECE if end < 0 else end + 1
            line, self.pending = self.pending[:cut], self.pending[cut:]
            return line
        return await asyncio.get_running_loop().run_in_executor(self.pool, self.stream.readline, LINE_PIECE)

    async def read(self, n: int) -> bytes:
        head, self.pending = self.pending[:n], self.pending[n:]
        if len(head) == n:
            return head
        return head + await asyncio.get_running_loop().run_in_executor(self.pool, self.stream.read, n - len(head))

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def error_frame(code: int, message: str) -> bytes:
    """A JSON-RPC error response with id null (the id of a frame that could not be read is unknown)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def serve(reader: BoundedReader, stop: threading.Event, parse: Callable[[bytes], Any],
                handle: Callable[[Any], None], send: Callable[[bytes], None]) -> None:
    """Read frames until end of input or `stop`; `parse` a body, `handle` the message, `send` error frames."""
    length: int | None = None  # the length the last header announced, until its blank line
    carry = b""
    while not stop.is_set():
        piece = await reader.readline()
        if not piece:
            break
        if not piece.endswith(b"\n"):  # a long line: keep only the tail a header at its end could start in
            carry = (carry + piece)[-HEADER_TAIL:]
            continue
        line, carry = carry + piece, b""
        m = HEADER.search(line)
        if m is not None:
            if m.start():
                logger.warning("skipped %d bytes before a Content-Length header", m.start())
            digits = m.group(1)
            length = int(digits) if len(digits.lstrip(b"0")) <= MAX_DIGITS else MAX_FRAME + 1
            continue
        if line.strip() or length is None:  # another header (Content-Type), or junk while resynchronising
            continue
        n, length = length, None
        if n > MAX_FRAME:
            logger.error("refused a message of %d bytes (the limit is %d)", n, MAX_FRAME)
            send(error_frame(INVALID_REQUEST, f"message of {n} bytes refused: the limit is {MAX_FRAME} bytes; "
                                              "its body is skipped up to the next Content-Length header"))
            continue
        body = await reader.read(n)
        if len(body) < n:  # end of input inside the body
            break
        try:
            message = parse(body)
        except Exception as e:  # noqa: BLE001 - not JSON, not UTF-8, nested too deep, not a JSON-RPC message
            logger.error("unreadable message of %d bytes: %s", n, e)
            send(error_frame(PARSE_ERROR, f"message of {n} bytes is not a JSON-RPC message "
                                          f"({type(e).__name__}); it is skipped"))
            nxt = NEXT_HEADER.search(body, 1)  # an overcounted body swallowed the start of the next frame
            if nxt is not None:
                reader.unread(body[nxt.start():])
            continue
        try:
            handle(message)
        except Exception:
            logger.exception("unable to handle a message")
