"""The pygls server: protocol types in, `features` over the document text, protocol types out.

Diagnostics are published after the text has been still for a short delay
(`debounce_ms`, 150 by default; clients may pass `{"debounce_ms": N}` as
initialization options), and at once when a file is opened or saved; on open
and save precomputed tables are read too (their E08xx findings are kept while
the lines they point at are unchanged). Requests run on the event loop one at
a time: parsing and checking share module-level state (the parser tables, the
garbage-collector pause), so nothing runs in threads.
"""

from __future__ import annotations

import asyncio
import sys
from urllib.parse import unquote, urlparse

from lsprotocol import types as t
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from scoreaudit import version
from scoreaudit.diagnostics import Diagnostic
from scoreaudit.lsp import features
from scoreaudit.lsp.positions import Lines

SEVERITY = {"error": t.DiagnosticSeverity.Error, "warning": t.DiagnosticSeverity.Warning,
            "note": t.DiagnosticSeverity.Information}
COMPLETION_KIND = {"keyword": t.CompletionItemKind.Keyword, "plugin": t.CompletionItemKind.Function,
                   "declared": t.CompletionItemKind.Variable, "setting": t.CompletionItemKind.Property,
                   "parameter": t.CompletionItemKind.Field, "value": t.CompletionItemKind.EnumMember}
SYMBOL_KIND = {"audit": t.SymbolKind.Namespace, "report": t.SymbolKind.File, "scorer": t.SymbolKind.Class,
               "arm": t.SymbolKind.Module, "region": t.SymbolKind.Object, "measure": t.SymbolKind.Field,
               "covariate": t.SymbolKind.Field, "operator": t.SymbolKind.Function,
               "placebo": t.SymbolKind.Function, "selection": t.SymbolKind.Method,
               "validate": t.SymbolKind.Property, "hypothesis": t.SymbolKind.Event,
               "claim": t.SymbolKind.Boolean, "probe": t.SymbolKind.Event}
DEFAULT_DEBOUNCE_MS: float = 150


def uri_to_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


class AuditServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("scoreaudit", version(), text_document_sync_kind=t.TextDocumentSyncKind.Incremental)
        self.debounce_ms = DEFAULT_DEBOUNCE_MS
        self.docs: dict[str, features.Document] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.table_diags: dict[str, list[tuple[Diagnostic, str]]] = {}  # uri → (diagnostic, its line's text)

    def start_io(self, stdin=None, stdout=None) -> None:
        """pygls' stdio loop with `framing`'s reader: a bad frame is answered and skipped, never fatal."""
        import json
        import threading

        from pygls.io_ import StdoutWriter

        from scoreaudit.lsp import framing

        self._stop_event = threading.Event()
        writer = StdoutWriter(stdout or sys.stdout.buffer)
        self.protocol.set_writer(writer)
        reader = framing.BoundedReader(stdin or sys.stdin.buffer)
        try:
            asyncio.run(framing.serve(reader, self._stop_event,
                                      lambda body: json.loads(body, object_hook=self.protocol.structure_message),
                                      self.protocol.handle_message, writer.write))
        except BrokenPipeError:
            pass  # the client went away
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            reader.close()
            self.shutdown()

    # ------------------------------------------------------------ documents

    def document(self, uri: str) -> features.Document:
        """The analysis of the document's current text (cached per text)."""
        text = self.workspace.get_text_document(uri).source
        doc = self.docs.get(uri)
        if doc is None or doc.text != text:
            doc = self.docs[uri] = features.Document(text, uri_to_path(uri))
        return doc

    def lines(self, doc: features.Document) -> Lines:
        enc = self.workspace.position_encoding or t.PositionEncodingKind.Utf16
        return Lines(doc.text, str(getattr(enc, "value", enc)))

    def range(self, lines: Lines, start: int, end: int) -> t.Range:
        (l0, c0), (l1, c1) = lines.position(start), lines.position(end)
        return t.Range(t.Position(l0, c0), t.Position(l1, c1))

    def offset(self, doc: features.Document, pos: t.Position) -> int:
        return self.lines(doc).offset(pos.line, pos.character)

    # ------------------------------------------------------------ diagnostics

    def publish(self, uri: str, tables: bool = False) -> None:
        doc = self.document(uri)
        lines = self.lines(doc)
        diags = doc.diagnostics(tables=tables)
        if tables:  # precomputed-table findings are the E08xx/W08xx group (scoreaudit.diagnostics)
            self.table_diags[uri] = [(d, _line_text(doc.text, d)) for d in diags if d.code[1:3] == "08"]
        else:
            seen = {(d.code, d.message, d.span) for d in diags}
            diags = diags + [d for d, line in self.table_diags.get(uri, [])
                             if _line_text(doc.text, d) == line and (d.code, d.message, d.span) not in seen]
        version = self.workspace.get_text_document(uri).version
        self.text_document_publish_diagnostics(t.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[to_lsp(d, lines) for d in diags]))

    def schedule(self, uri: str) -> None:
        """Re-check after the text has been still for `debounce_ms`."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()

        async def later() -> None:
            await asyncio.sleep(self.debounce_ms / 1000)
            self.pending.pop(uri, None)
            self.publish(uri)

        self.pending[uri] = asyncio.get_running_loop().create_task(later())


def _line_text(text: str, d: Diagnostic) -> str | None:
    if d.span is None:
        return None
    lines = text.splitlines()
    return lines[d.span.line - 1] if 0 < d.span.line <= len(lines) else None


def to_lsp(d: Diagnostic, lines: Lines) -> t.Diagnostic:
    """`check`'s diagnostic as LSP's: same code and span; notes and help follow the message."""
    if d.span is not None:
        (l0, c0), (l1, c1) = lines.span_range(d.span)
    else:
        l0 = c0 = l1 = c1 = 0
    message = "\n".join([d.message] + [f"note: {n}" for n in d.notes] + ([f"help: {d.help}"] if d.help else []))
    return t.Diagnostic(range=t.Range(t.Position(l0, c0), t.Position(l1, c1)), message=message,
                        severity=SEVERITY.get(d.severity, t.DiagnosticSeverity.Error), code=d.code,
                        source="scoreaudit", data={"help": d.help} if d.help else None)


def build_server() -> AuditServer:
    server = AuditServer()

    @server.feature(t.INITIALIZE)
    def initialize(ls: AuditServer, params: t.InitializeParams) -> None:
        opts = params.initialization_options
        if isinstance(opts, dict) and isinstance(opts.get("debounce_ms"), (int, float)):
            ls.debounce_ms = max(0, float(opts["debounce_ms"]))

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AuditServer, params: t.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri, tables=True)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AuditServer, params: t.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AuditServer, params: t.DidSaveTextDocumentParams) -> None:
        ls.publish(params.text_document.uri, tables=True)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AuditServer, params: t.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.docs.pop(uri, None)
        ls.table_diags.pop(uri, None)
        ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls: AuditServer, params: t.HoverParams) -> t.Hover | None:
        doc = ls.document(params.text_document.uri)
        text = features.hover(doc, ls.offset(doc, params.position))
        if text is None:
            return None
        return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text))

    @server.feature(t.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: AuditServer, params: t.DefinitionParams) -> t.Location | None:
        doc = ls.document(params.text_document.uri)
        hit = features.definition(doc, ls.offset(doc, params.position))
        if hit is None:
            return None
        return t.Location(uri=params.text_document.uri, range=ls.range(ls.lines(doc), *hit))

    @server.feature(t.TEXT_DOCUMENT_REFERENCES)
    def references(ls: AuditServer, params: t.ReferenceParams) -> list[t.Location]:
        doc = ls.document(params.text_document.uri)
        lines = ls.lines(doc)
        hits = features.references(doc, ls.offset(doc, params.position), params.context.include_declaration)
        return [t.Location(uri=params.text_document.uri, range=ls.range(lines, s, e)) for s, e in hits]

    @server.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: AuditServer, params: t.PrepareRenameParams):
        doc = ls.document(params.text_document.uri)
        hit = features.prepare_rename(doc, ls.offset(doc, params.position))
        if hit is None:
            return None
        return t.PrepareRenamePlaceholder(range=ls.range(ls.lines(doc), hit[0], hit[1]), placeholder=hit[2])

    @server.feature(t.TEXT_DOCUMENT_RENAME, t.RenameOptions(prepare_provider=True))
    def rename(ls: AuditServer, params: t.RenameParams) -> t.WorkspaceEdit | None:
        doc = ls.document(params.text_document.uri)
        try:
            edits = features.rename(doc, ls.offset(doc, params.position), params.new_name)
        except features.RenameError as e:
            raise JsonRpcInvalidParams(str(e)) from None
        lines = ls.lines(doc)
        return t.WorkspaceEdit(changes={params.text_document.uri: [
            t.TextEdit(range=ls.range(lines, s, e), new_text=new) for s, e, new in edits]})

    @server.feature(t.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: AuditServer, params: t.DocumentFormattingParams) -> list[t.TextEdit]:
        doc = ls.document(params.text_document.uri)
        out = features.formatted(doc)
        if out is None or out == doc.text:
            return []
        return [t.TextEdit(range=ls.range(ls.lines(doc), 0, len(doc.text)), new_text=out)]

    @server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: AuditServer, params: t.DocumentSymbolParams) -> list[t.DocumentSymbol]:
        doc = ls.document(params.text_document.uri)
        lines = ls.lines(doc)

        def convert(s: features.Symbol) -> t.DocumentSymbol:
            return t.DocumentSymbol(name=s.name, kind=SYMBOL_KIND.get(s.kind, t.SymbolKind.Variable),
                                    range=ls.range(lines, s.start, s.end),
                                    selection_range=ls.range(lines, s.sel_start, s.sel_end),
                                    detail=s.detail or None, children=[convert(c) for c in s.children] or None)

        return [convert(s) for s in features.symbols(doc)]

    @server.feature(t.TEXT_DOCUMENT_COMPLETION,
                    t.CompletionOptions(trigger_characters=[" ", "(", ",", ":"]))
    def completion(ls: AuditServer, params: t.CompletionParams) -> t.CompletionList:
        doc = ls.document(params.text_document.uri)
        offset = ls.offset(doc, params.position)
        start, items = features.complete(doc.text, offset)
        rng = ls.range(ls.lines(doc), start, offset)
        snippets = _snippet_support(ls)
        out = []
        for i, c in enumerate(items):
            use_snippet = snippets and c.snippet is not None
            text = c.snippet if use_snippet else (c.insert or c.label)
            out.append(t.CompletionItem(
                label=c.label, kind=COMPLETION_KIND.get(c.kind), detail=c.detail or None,
                documentation=t.MarkupContent(kind=t.MarkupKind.Markdown, value=c.documentation)
                if c.documentation else None,
                sort_text=f"{i:04d}", filter_text=c.label,
                insert_text_format=t.InsertTextFormat.Snippet if use_snippet else t.InsertTextFormat.PlainText,
                text_edit=t.TextEdit(range=rng, new_text=text)))
        return t.CompletionList(is_incomplete=False, items=out)

    return server


def _snippet_support(ls: AuditServer) -> bool:
    caps = ls.client_capabilities
    try:
        return bool(caps.text_document.completion.completion_item.snippet_support)
    except AttributeError:
        return False


def main() -> int:
    """Serve one client over stdin/stdout until it exits."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() (a third-party plugin) must not corrupt the protocol stream
    build_server().start_io(stdin, stdout)
    return 0
