"""The fast path of `parser.parse`: valid text → AST without building a Lark tree.

It runs Lark's own LALR tables (`tables.py`) with a contextual lexer that
makes Lark's decisions (a keyword only where the parser state accepts it and
its regex matches, else NAME; every other terminal is told by its first
character) and reduces straight to the frozen AST nodes, computing spans from
the first and last token of each rule as `propagate_positions` does (a
parenthesised region keeps its own span; its parent's span includes the
parentheses). It does not import Lark, which `scoreaudit check` would
otherwise pay for on every run.

Anything unusual — a syntax error, a positional argument after a keyword
argument (E0110), nesting that could reach `MAX_DEPTH` — raises `Bail`, and
`parser.py` redoes the file on its Lark path, which owns every diagnostic.
So this path only ever returns what the Lark path would have built.
"""

from __future__ import annotations

import re
from functools import lru_cache

from scoreaudit.grammar import ast
from scoreaudit.diagnostics import Span

#: A declaration with this many nesting tokens (`(`, `[`, `*`, `|`, `&`, `not`, `abs`)
#: may come near parser.MAX_DEPTH; the Lark path decides those (E0109).
NEST_LIMIT = 56


class Bail(Exception):
    """The fast path cannot vouch for this text; use the Lark path."""


class _Tok:
    """A token: terminal type, text, offsets and 1-based line/column of its start."""

    __slots__ = ("type", "value", "start", "end", "line", "col")

    def __init__(self, type_, value, start, end, line, col):
        self.type = type_
        self.value = value
        self.start = start
        self.end = end
        self.line = line
        self.col = col


class _Paren:
    """`( region )`: the region, plus the parentheses that count for the parent's span."""

    __slots__ = ("node", "open", "close")

    def __init__(self, node, open_, close):
        self.node = node
        self.open = open_
        self.close = close


class _Seq:
    """`on a, b` / `for s, t`: the names, plus the last token (the claim's end)."""

    __slots__ = ("kind", "items", "last")

    def __init__(self, kind, items, last):
        self.kind = kind
        self.items = items
        self.last = last


class _Inline(list):
    """Children of an inlined `_rule`, spliced into the parent's children."""

    __slots__ = ()


# ---------------------------------------------------------------- spans


def _start(x):
    """(line, column, offset) where `x` starts, parentheses included."""
    if isinstance(x, _Tok):
        return x.line, x.col, x.start
    if isinstance(x, _Paren):
        return _start(x.open)
    if isinstance(x, _Seq):  # pragma: no cover - never first in a rule
        raise Bail("sequence first")
    s = x.span
    return s.line, s.column, s.start


def _end(x):
    """(line, column, offset) just after `x`, parentheses included."""
    if isinstance(x, _Tok):
        return x.line, x.col + (x.end - x.start), x.end
    if isinstance(x, _Paren):
        return _end(x.close)
    if isinstance(x, _Seq):
        return _end(x.last)
    s = x.span
    return s.end_line, s.end_column, s.end


def _span(first, last) -> Span:
    line, col, start = _start(first)
    end_line, end_col, end = _end(last)
    return Span(line, col, end_line, end_col, start, end)


def _tspan(t: _Tok) -> Span:
    return Span(t.line, t.col, t.line, t.col + (t.end - t.start), t.start, t.end)


def _unwrap(x):
    while isinstance(x, _Paren):
        x = x.node
    return x


def _label(c, i: int):
    """The `label: "..."` string at position `i` of a declaration's children, if written."""
    return c[i] if len(c) > i and isinstance(c[i], ast.String) else None


def _ident(t: _Tok) -> ast.Ident:
    return ast.Ident(t.value, _tspan(t))


def _number(t: _Tok) -> ast.Number:
    return ast.Number(float(t.value), t.value, _tspan(t))


# ---------------------------------------------------------------- rule callbacks (children keep every token)


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    from scoreaudit.grammar.parser import unescape  # (parser imports this module)

    return unescape(body)


class _Builder:
    """One method per rule name (alias or origin), called with the rule's children."""

    def __init__(self, text: str):
        self.text = text

    def _decl(self, node, c):
        seg = self.text[_start(c[0])[2]:_end(c[-1])[2]]
        nest = (seg.count("(") + seg.count("[") + seg.count("*") + seg.count("|") + seg.count("&")
                + seg.count("not") + seg.count("abs"))
        if nest >= NEST_LIMIT:
            raise Bail("deep nesting")
        return node

    def start(self, c):
        return tuple(c)

    def audit(self, c):
        t = c[1]
        title = ast.String(_unescape(t.value[1:-1]), _tspan(t))
        return self._decl(ast.AuditBlock(title, tuple(c[3:-1]), _span(c[0], c[-1])), c)

    def report(self, c):
        return self._decl(ast.ReportDecl(tuple(c[2:-1]), _span(c[0], c[-1])), c)

    def setting(self, c):
        values = c[2::2]
        if len(values) == 1:
            value = values[0]
        else:
            a, b = values[0].span, values[-1].span
            value = ast.ListValue(tuple(values), Span(a.line, a.column, b.end_line, b.end_column, a.start, b.end),
                                  bracketed=False)
        return ast.Setting(_ident(c[0]), value, _span(c[0], c[-1]))

    def scorer(self, c):
        return self._decl(ast.ScorerDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _label(c, 4)), c)

    def arm(self, c):
        return self._decl(ast.ArmDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _label(c, 4)), c)

    def label(self, c):
        t = c[2]
        return ast.String(_unescape(t.value[1:-1]), _tspan(t))

    def measure(self, c):
        return self._decl(ast.MeasureDecl(_ident(c[1]), c[3], _span(c[0], c[-1])), c)

    def covariate(self, c):
        return self._decl(ast.CovariateDecl(_ident(c[1]), c[3], _span(c[0], c[-1])), c)

    def region(self, c):
        return self._decl(ast.RegionDecl(_ident(c[1]), _unwrap(c[3]), _span(c[0], c[-1])), c)

    def operator(self, c):
        return self._decl(ast.OperatorDecl(_ident(c[1]), c[3], c[5], _span(c[0], c[-1]), _label(c, 6)), c)

    def dose_list(self, c):
        return ast.DoseList(tuple(_number(n) for n in c[::2]), _span(c[0], c[-1]))

    def dose_range(self, c):
        return ast.DoseRange(_number(c[0]), _number(c[2]), _number(c[4]), _span(c[0], c[-1]))

    def placebo(self, c):
        return self._decl(ast.PlaceboDecl(_ident(c[1]), c[3], _ident(c[5]), _span(c[0], c[-1]), _label(c, 6)), c)

    def validate(self, c):
        return ast.ValidateDecl(_ident(c[1]), _ident(c[3]), tuple(c[5::2]), _span(c[0], c[-1]))

    def check(self, c):
        return ast.Check(_ident(c[0]), c[1].value, _number(c[2]), _span(c[0], c[-1]))

    def under(self, c):
        return _Seq("under", _ident(c[1]), c[1])

    def select(self, c):
        under = c[5].items if len(c) == 8 else None
        return ast.SelectDecl(_ident(c[1]), _number(c[4]), under, _ident(c[-1]), _span(c[0], c[-1]))

    def hypothesis(self, c):
        t = c[2]
        title = ast.String(_unescape(t.value[1:-1]), _tspan(t))
        return self._decl(ast.HypothesisDecl(_ident(c[1]), title, tuple(c[4:-1]), _span(c[0], c[-1])), c)

    def claim(self, c):
        arms: tuple = ()
        scorers: object = ()
        for r in c[1:]:
            if isinstance(r, ast.EachScorer):
                scorers = r
            elif r.kind == "on":
                arms = r.items
            else:
                scorers = r.items
        return ast.Claim(c[0], arms, scorers, _span(c[0], c[-1]))

    def compare(self, c):
        return ast.Compare(c[0], c[1].value, _number(c[2]), _span(c[0], c[-1]))

    def within(self, c):
        return ast.Within(c[0], _number(c[3]), _number(c[5]), _span(c[0], c[-1]))

    def bare(self, c):
        return ast.Bare(c[0], c[0].span)

    def abs(self, c):
        return ast.Abs(c[2], _span(c[0], c[-1]))

    def difference(self, c):
        return ast.Comparison("difference", c[2], c[4], _span(c[0], c[-1]))

    def ratio(self, c):
        return ast.Comparison("ratio", c[2], c[4], _span(c[0], c[-1]))

    def reading(self, c):
        arms, scorers, where = [], [], []
        for q in c[1:]:
            kind, node = q
            (arms if kind == "on" else scorers if kind == "for" else where).append(node)
        return ast.Reading(c[0], tuple(arms), tuple(scorers), tuple(where),
                           _span(c[0], c[-1] if len(c) == 1 else c[-1][1]))

    def reading_on(self, c):
        return ("on", _ident(c[1]))

    def reading_for(self, c):
        return ("for", _ident(c[1]))

    def reading_where(self, c):
        v = c[3]
        value = (ast.String(_unescape(v.value[1:-1]), _tspan(v)) if v.type == "STRING" else _number(v))
        return ("where", ast.Where(_ident(c[1]), value, _span(c[0], c[-1])))

    def on_arms(self, c):
        return _Seq("on", tuple(_ident(t) for t in c[1::2]), c[-1])

    def each_scorer(self, c):
        return ast.EachScorer(_span(c[0], c[-1]))

    def scorer_list(self, c):
        return _Seq("for", tuple(_ident(t) for t in c[1::2]), c[-1])

    def region_union(self, c):
        return ast.BinaryRegion("|", _unwrap(c[0]), _unwrap(c[2]), _span(c[0], c[-1]))

    def region_inter(self, c):
        return ast.BinaryRegion("&", _unwrap(c[0]), _unwrap(c[2]), _span(c[0], c[-1]))

    def region_neg(self, c):
        return ast.Not(_unwrap(c[1]), _span(c[0], c[-1]))

    def region_atom(self, c):
        return _Paren(c[1], c[0], c[2])

    def name(self, c):
        t = c[0]
        return ast.Name(t.value, _tspan(t))

    def number(self, c):
        return _number(c[0])

    def string(self, c):
        t = c[0]
        return ast.String(_unescape(t.value[1:-1]), _tspan(t))

    def product(self, c):
        return ast.Product(c[0], c[2], _span(c[0], c[-1]))

    def list(self, c):
        return ast.ListValue(tuple(c[1:-1:2]), _span(c[0], c[-1]), bracketed=True)

    def call(self, c):
        args = c[2:-1:2]
        seen_kw = False
        for a in args:
            if a.name is not None:
                seen_kw = True
            elif seen_kw:
                raise Bail("E0110")
        func = c[0]
        span = _span(func, c[-1])
        if (func.value == "column" and len(args) == 1 and args[0].name is None
                and isinstance(args[0].value, ast.Name)):
            inner = args[0].value
            return ast.Column(ast.Ident(inner.name, inner.span), span)
        return ast.Call(_ident(func), tuple(args), span)

    def kwarg(self, c):
        return ast.Arg(_ident(c[0]), c[2], _span(c[0], c[-1]))

    def posarg(self, c):
        v = c[0]
        return ast.Arg(None, v, v.span)


# ---------------------------------------------------------------- tables → driver data


class _Grammar:
    def __init__(self, tables: dict):
        self.start_state = tables["start_state"]
        self.end_state = tables["end_state"]
        # state -> {symbol: (is_shift, target state | rule index)}
        self.states = {int(s): {sym: (a == 1, arg) for sym, (a, arg) in acts.items()}
                       for s, acts in tables["states"].items()}
        # rule index -> (origin, size, inline positions, mode, callback name)
        self.rules = []
        for origin, expansion, alias, expand1 in tables["rules"]:
            inline = tuple(i for i, sym in enumerate(expansion) if sym.startswith("_") and not sym.isupper()
                           and not _is_terminal(sym, tables["terminals"]))
            if origin.startswith("_"):
                mode = "inline"
            elif expand1 and alias is None:
                mode = "expand1"
            else:
                mode = "call"
            self.rules.append((origin, len(expansion), inline, mode, alias or origin))
        terms = tables["terminals"]
        self.keywords = {name: re.compile(rx) for name, (rx, prio) in terms.items() if prio > 0}
        for name in ("NAME", "NUMBER", "STRING", "CMP"):
            if name not in terms:  # pragma: no cover - guarded by the grammar tests
                raise RuntimeError(f"grammar lost terminal {name}")
        self.name_re = re.compile(terms["NAME"][0])
        self.number_re = re.compile(terms["NUMBER"][0])
        self.string_re = re.compile(terms["STRING"][0])
        self.cmp_re = re.compile(terms["CMP"][0])
        self.skip_re = re.compile("(?:" + "|".join(terms[t][0] for t in tables["ignore"]) + ")*")
        # single characters and fixed strings (punctuation, `..`)
        self.fixed = {}
        for name, (rx, prio) in terms.items():
            lit = _literal(rx)
            if lit is not None and name not in self.keywords:
                self.fixed[lit] = name
        self._kw_cache: dict[str, tuple[str, ...]] = {}

    def keywords_for(self, word: str) -> tuple[str, ...]:
        hit = self._kw_cache.get(word)
        if hit is None:
            hit = tuple(k for k, rx in self.keywords.items() if rx.fullmatch(word))
            self._kw_cache[word] = hit
        return hit


def _is_terminal(sym: str, terminals: dict) -> bool:
    return sym in terminals or sym == "$END"


def _literal(rx: str) -> str | None:
    """The text a regex made from a plain string matches (`\\{` → `{`, `\\.\\.` → `..`), else None."""
    out, i = [], 0
    while i < len(rx):
        ch = rx[i]
        if ch == "\\" and i + 1 < len(rx) and not rx[i + 1].isalnum():
            out.append(rx[i + 1])
            i += 2
        elif ch.isalnum() or ch in " ,:;=<>!@%'\"-_~`/":
            if ch.isalnum():
                return None
            out.append(ch)
            i += 1
        else:
            return None
    lit = "".join(out)
    return lit if lit and re.fullmatch(rx, lit) else None


@lru_cache(maxsize=1)
def _grammar() -> _Grammar:
    from scoreaudit.grammar.tables import load_tables

    return _Grammar(load_tables())


# ---------------------------------------------------------------- the driver


def parse_decls(text: str) -> tuple:
    """The declarations of `text`, or `Bail` when the Lark path must decide."""
    g = _grammar()
    states = g.states
    rules = g.rules
    fixed = g.fixed
    keywords = g.keywords
    b = _Builder(text)
    callbacks = {}
    state_stack = [g.start_state]
    value_stack: list = []
    pos, n, line, line_start = 0, len(text), 1, 0
    skip = g.skip_re.match
    name_m, number_m, string_m, cmp_m = g.name_re.match, g.number_re.match, g.string_re.match, g.cmp_re.match

    def reduce(rule_i):
        origin, size, inline, mode, cb = rules[rule_i]
        if size:
            children = value_stack[-size:]
            del state_stack[-size:]
            del value_stack[-size:]
        else:
            children = []
        if inline:
            out = None
            for i, ch in enumerate(children):
                if i in inline:
                    if out is None and i == 0:
                        out = ch  # left recursion: extend the list in place
                    else:
                        if out is None:
                            out = _Inline(children[:i])
                        out.extend(ch)
                elif out is not None:
                    out.append(ch)
            if out is not None:
                children = out
        if mode == "inline":
            value = children if isinstance(children, _Inline) else _Inline(children)
        elif mode == "expand1" and len(children) == 1:
            value = children[0]
        else:
            f = callbacks.get(cb)
            if f is None:
                f = callbacks[cb] = getattr(b, cb)
            value = f(children)
        goto = states[state_stack[-1]].get(origin)
        if goto is None or not goto[0]:  # pragma: no cover - tables are consistent
            raise Bail("goto")
        state_stack.append(goto[1])
        value_stack.append(value)

    while True:
        e = skip(text, pos).end()
        if e != pos:
            k = text.count("\n", pos, e)
            if k:
                line += k
                line_start = text.rfind("\n", pos, e) + 1
            pos = e
        if pos >= n:
            break
        acts = states[state_stack[-1]]
        ch = text[pos]
        if ch.isalpha() or ch == "_":
            m = name_m(text, pos)
            if m is None:
                raise Bail("name")
            end = m.end()
            ttype = None
            for kw in g.keywords_for(m.group()):
                if kw in acts:
                    km = keywords[kw].match(text, pos)
                    if km is not None:
                        if ttype is not None or km.end() != end:
                            raise Bail("keyword")
                        ttype = kw
            if ttype is None:
                ttype = "NAME"
        elif ch.isdigit() or ch == "-":
            m = number_m(text, pos)
            if m is None:
                raise Bail("number")
            end, ttype = m.end(), "NUMBER"
        elif ch == '"':
            m = string_m(text, pos)
            if m is None:
                raise Bail("string")
            end, ttype = m.end(), "STRING"
        elif ch == "<" or ch == ">":
            end, ttype = cmp_m(text, pos).end(), "CMP"
        else:
            ttype = fixed.get(ch)
            end = pos + 1
            if ttype is None:
                ttype = fixed.get(text[pos:pos + 2])
                end = pos + 2
                if ttype is None:
                    raise Bail("character")
        tok = _Tok(ttype, text[pos:end], pos, end, line, pos - line_start + 1)
        while True:
            act = acts.get(ttype)
            if act is None:
                raise Bail("token")
            if act[0]:
                state_stack.append(act[1])
                value_stack.append(tok)
                break
            reduce(act[1])
            acts = states[state_stack[-1]]
        pos = end

    end_state = g.end_state
    while True:
        act = states[state_stack[-1]].get("$END")
        if act is None or act[0]:
            raise Bail("end")
        reduce(act[1])
        if state_stack[-1] == end_state:
            return value_stack[-1]
