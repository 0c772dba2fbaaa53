"""A faster drive of Lark's contextual lexer: the same tokens and errors, fewer Python layers per token.

This is the one module that reaches into Lark's internals (a scanner's compiled
regexes, the lexer state's line counter); `tests/grammar/test_grammar_quick_lexer.py`
holds its tokens, ASTs and errors equal to Lark's own lexer on every example.
"""

from __future__ import annotations

from typing import Any

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.lexer import BasicLexer, ContextualLexer, Lexer


class QuickLexer(Lexer):
    """Lark's contextual lexer without its per-token Python layers (same tokens, same errors).

    At each token the contextual lexer matches the regex of the terminals the parser state
    accepts; this does the same match with the same compiled regex (Lark's own scanner of that
    state) inline, and makes the token with the same type, text and positions. Anything unusual
    (no terminal matches, a terminal with a callback, a state split over several regexes) is one
    step of Lark's own lexer, so errors and their parser states are exactly Lark's. Lexing was
    about half of a long file's parse (20,000 declarations: bench/diagnostics.py).
    """

    def __init__(self, inner: ContextualLexer):
        self.inner = inner
        root: Any = inner.root_lexer  # a BasicLexer: its ignore and newline types are not in Lark's abstract type
        self.ignore = frozenset(root.ignore_types)
        self.newline_types = frozenset(root.newline_types)
        self._match: dict[int, object] = {}  # parser state -> its scanner's match (None: Lark's path)

    def make_lexer_state(self, text):
        return self.inner.make_lexer_state(text)

    def _state_match(self, state: int):
        lexer: Any = self.inner.lexers[state]  # a BasicLexer (checked below) whose scanner is built lazily
        scanner = lexer.scanner  # builds lexer.callback too
        ok = len(scanner._mres) == 1 and not lexer.callback and type(lexer) is BasicLexer
        self._match[state] = found = scanner._mres[0].match if ok else None
        return found

    def _lark_step(self, lexer_state, parser_state):
        """One token by Lark's contextual lexer (None at the end), errors as it raises them."""
        inner = self.inner
        lexer = inner.lexers[parser_state.position]
        try:
            return lexer.next_token(lexer_state, parser_state)
        except EOFError:
            return None
        except UnexpectedCharacters as e:  # the same report as ContextualLexer.lex
            try:
                last_token = lexer_state.last_token
                token = inner.root_lexer.next_token(lexer_state, parser_state)
                raise UnexpectedToken(token, e.allowed, state=parser_state, token_history=[last_token],
                                      terminals_by_name=inner.root_lexer.terminals_by_name)
            except UnexpectedCharacters:
                raise e from None

    def lex(self, lexer_state, parser_state):
        text_slice = lexer_state.text
        text, end = text_slice.text, text_slice.end
        ctr = lexer_state.line_ctr
        ignore, newline_types, matchers = self.ignore, self.newline_types, self._match
        stack = parser_state.state_stack
        make = getattr(Token, "_future_new", Token)  # Token(...) without its keyword-compatibility layer
        while ctr.char_pos < end:
            pos = ctr.char_pos
            state = stack[-1]
            match = matchers[state] if state in matchers else self._state_match(state)
            m = match(text, pos, end) if match is not None else None
            if m is None:
                t = self._lark_step(lexer_state, parser_state)
                if t is None:
                    return
                yield t
                continue
            type_ = m.lastgroup
            value = m.group(0)
            if type_ in ignore:
                ctr.feed(value, type_ in newline_types)
                continue
            line, column = ctr.line, ctr.column
            if type_ in newline_types:
                ctr.feed(value)
            else:
                ctr.char_pos = pos + len(value)
                ctr.column = ctr.char_pos - ctr.line_start_pos + 1
            t = make(type_, value, pos, line, column, ctr.line, ctr.column, ctr.char_pos)
            lexer_state.last_token = t
            yield t
