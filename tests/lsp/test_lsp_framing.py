"""A bad frame on the language server's stdin costs that frame only (issue 27).

Each case writes hostile bytes to a real `scoreaudit lsp` process, then a good request, and expects the
good request answered (and the server alive). Before the fix `Content-Length: 1000000000000` killed the
server (MemoryError) and an undercounting header left it answering nothing ever again.
"""

from __future__ import annotations

import json
import time

import pytest
from lsp_client import Client, t

SPEC = 'audit "framing" { version: 1 seed: 1 }\nscorer s = planted()\n'
URI = "file:///nonexistent-scoreaudit-lsp/framing.audit"


@pytest.fixture(scope="module")
def client():
    c = Client(debounce_ms=20)
    c.open(URI, SPEC)
    c.diagnostics(URI, version=1)
    yield c
    assert c.close() == 0


def _raw(client: Client, data: bytes) -> None:
    client.proc.stdin.write(data)
    client.proc.stdin.flush()


def _frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _symbols_answered(client: Client) -> None:
    """A good request after the bad bytes gets its answer: the stream is in step again."""
    res = client.request("textDocument/documentSymbol",
                         t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri=URI)), timeout=30)
    assert client.proc.poll() is None, client.stderr_tail()
    assert {s["name"] for s in res} >= {"s"}


def _null_error(client: Client, code: int, timeout: float = 30) -> dict:
    """The JSON-RPC error (id null) the server answers an unreadable frame with."""
    deadline = time.monotonic() + timeout
    with client._cond:
        while None not in client.responses:
            left = deadline - time.monotonic()
            assert left > 0, f"no error response; stderr: {client.stderr_tail()}"
            client._cond.wait(left)
        msg = client.responses.pop(None)
    assert msg["error"]["code"] == code, msg
    return msg["error"]


HOSTILE = {
    # announced far above the limit: refused without reading it, then resynchronised on the next header
    "huge length": (b"Content-Length: 1000000000000\r\n\r\n" + b'{"jsonrpc": "2.0", "method": "x"}', -32600),
    "huge length, no body": (b"Content-Length: 1000000000000\r\n\r\n", -32600),
    "length of 5000 digits": (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", -32600),
    # undercounted: 5 bytes of the body are read, the rest is glued in front of the next header
    "undercounted": (b"Content-Length: 5\r\n\r\n" + json.dumps({"jsonrpc": "2.0", "id": 999, "method":
                                                                 "shutdown"}).encode(), -32700),
    # overcounted: the body swallows the start of the next frame, which is given back
    "overcounted": (b"Content-Length: 40\r\n\r\n" + b'{"jsonrpc": "2.0",', -32700),
    "not JSON": (b"Content-Length: 9\r\n\r\nnot json!", -32700),
    "not UTF-8": (b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc", -32700),
    "nested 200,000 deep": (b"Content-Length: 200000\r\n\r\n" + b"[" * 200000, -32700),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_bad_frame_costs_that_frame_only(client, name):
    data, code = HOSTILE[name]
    _raw(client, data)
    if name == "overcounted":  # its error comes once the next frame's bytes complete the 40
        _symbols_answered(client)
        _null_error(client, code)
        return
    _null_error(client, code)
    _symbols_answered(client)


def test_a_megabyte_line_without_newline_is_skipped(client):
    _raw(client, b"x" * (1 << 20))  # no header, no newline: skipped in bounded pieces, nothing answered
    _symbols_answered(client)


def test_header_glued_to_junk_still_starts_a_frame(client):
    _raw(client, b"garbage without a newline" + _frame({"jsonrpc": "2.0", "method": "$/noop"}))
    _symbols_answered(client)
