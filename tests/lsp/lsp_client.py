"""A small synchronous JSON-RPC client that drives `scoreaudit lsp` over stdio.

It frames messages by hand (Content-Length headers) and builds and reads them
with lsprotocol's types and converter, so the tests see exactly the bytes a
real editor would, with no pygls on the client side.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from lsprotocol.converters import get_converter

CONVERTER = get_converter()
SRC = Path(__file__).resolve().parents[2] / "src"


class ServerError(Exception):
    def __init__(self, error: dict):
        self.code = error.get("code")
        self.message = error.get("message", "")
        super().__init__(f"{self.code}: {self.message}")


class Client:
    def __init__(self, debounce_ms: int = 20, snippets: bool = True, encodings=("utf-16",)):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen([sys.executable, "-m", "scoreaudit.cli", "lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self._id = 0
        self.responses: dict[int, dict] = {}
        self.notifications: "queue.Queue[dict]" = queue.Queue()
        self.server_requests: list[dict] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        caps = t.ClientCapabilities(
            general=t.GeneralClientCapabilities(position_encodings=list(encodings)),
            text_document=t.TextDocumentClientCapabilities(
                completion=t.CompletionClientCapabilities(
                    completion_item=t.ClientCompletionItemOptions(snippet_support=snippets)),
                hover=t.HoverClientCapabilities(content_format=[t.MarkupKind.Markdown]),
                rename=t.RenameClientCapabilities(prepare_support=True),
                document_symbol=t.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True)))
        self.init = self.request("initialize", t.InitializeParams(
            capabilities=caps, process_id=os.getpid(), initialization_options={"debounce_ms": debounce_ms}),
            t.InitializeResult)
        self.notify("initialized", t.InitializedParams())
        self.versions: dict[str, int] = {}

    # ------------------------------------------------------------ wire

    def _send(self, msg: dict) -> None:
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            msg = json.loads(out.read(length))
            if "id" in msg and "method" not in msg:
                with self._cond:
                    self.responses[msg["id"]] = msg
                    self._cond.notify_all()
            elif "id" in msg:  # a request from the server (e.g. workspace/configuration): answer null
                self.server_requests.append(msg)
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            else:
                self.notifications.put(msg)

    def request(self, method: str, params: Any, result_type: Any = None, timeout: float = 60) -> Any:
        self._id += 1
        rid = self._id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method,
                    "params": CONVERTER.unstructure(params) if params is not None else None})
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to {method} in {timeout} s; stderr: {self.stderr_tail()}")
                self._cond.wait(left)
            msg = self.responses.pop(rid)
        if "error" in msg and msg["error"] is not None:
            raise ServerError(msg["error"])
        result = msg.get("result")
        return CONVERTER.structure(result, result_type) if result_type is not None and result is not None else result

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": CONVERTER.unstructure(params)})

    def stderr_tail(self) -> str:
        if self.proc.poll() is None:
            return "(server still running)"
        return self.proc.stderr.read().decode("utf-8", "replace")[-2000:]

    # ------------------------------------------------------------ documents

    def open(self, uri: str, text: str) -> None:
        self.versions[uri] = 1
        self.notify("textDocument/didOpen", t.DidOpenTextDocumentParams(
            t.TextDocumentItem(uri=uri, language_id="audit", version=1, text=text)))

    def change(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.notify("textDocument/didChange", t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)]))

    def edit(self, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        """An incremental change, as editors send while typing."""
        self.versions[uri] += 1
        self.notify("textDocument/didChange", t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[t.TextDocumentContentChangePartial(
                range=t.Range(t.Position(*start), t.Position(*end)), text=text)]))

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 60) -> list[t.Diagnostic]:
        """The next diagnostics published for `uri` (for `version` when given)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {uri}; stderr: {self.stderr_tail()}")
            msg = self.notifications.get(timeout=left)
            if msg.get("method") != "textDocument/publishDiagnostics":
                continue
            p = CONVERTER.structure(msg["params"], t.PublishDiagnosticsParams)
            if p.uri == uri and (version is None or p.version == version):
                return list(p.diagnostics)

    def position_params(self, cls, uri: str, line: int, character: int, **kw):
        return cls(text_document=t.TextDocumentIdentifier(uri=uri), position=t.Position(line, character), **kw)

    def close(self) -> int:
        try:
            self.request("shutdown", None, timeout=20)
            self._send({"jsonrpc": "2.0", "method": "exit"})
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
