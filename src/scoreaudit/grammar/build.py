"""Grammar rules → frozen AST nodes, built while Lark parses (no parse tree in between).

`Builder` is the inline transformer of the parser in `parser.py`: Lark calls
the method named after each rule (or its `-> alias`) with the rule's children
when it reduces that rule. The parser keeps every token (`keep_all_tokens`),
so a node's span runs from its first token to its last, punctuation
included; a parenthesised region keeps its own span while its parent's span
includes the parentheses. Rules whose name starts with `_` are spliced into
their parent by Lark and need no method. A new grammar rule needs one method
here (children are the rule's symbols in order, tokens included).

Two findings need a whole call or declaration and must not stop the parse,
so they are recorded for the parser to report: a positional argument after
a keyword argument (E0110), and the first declaration nested more than
`MAX_DEPTH` levels deep (E0109). Recording them needs per-parse state:
`begin()` starts it, and the parser holds a lock around each parse.
"""

from __future__ import annotations

from lark import Token

from scoreaudit.diagnostics import Span
from scoreaudit.grammar import ast
from scoreaudit.grammar.literals import unescape

MAX_DEPTH = 64  # nesting of calls / lists / region and product chains


class _Paren:
    """`( region )`: the region, plus the parentheses that count for the parent's span."""

    __slots__ = ("close", "node", "open")

    def __init__(self, node, open_, close):
        self.node = node
        self.open = open_
        self.close = close


class _Seq:
    """`on a, b` / `for s, t` / `under o`: the names, plus the last token (the claim's end)."""

    __slots__ = ("items", "kind", "last")

    def __init__(self, kind, items, last):
        self.kind = kind
        self.items = items
        self.last = last


# ---------------------------------------------------------------- spans


def _start(x) -> tuple[int, int, int]:
    """(line, column, offset) where `x` starts, parentheses included."""
    if isinstance(x, Token):
        return x.line, x.column, x.start_pos
    if isinstance(x, _Paren):
        return _start(x.open)
    s = x.span
    return s.line, s.column, s.start


def _end(x) -> tuple[int, int, int]:
    """(line, column, offset) just after `x`, parentheses included."""
    if isinstance(x, Token):
        return x.end_line, x.end_column, x.end_pos
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


def _tspan(t: Token) -> Span:
    return Span(t.line, t.column, t.end_line, t.end_column, t.start_pos, t.end_pos)


def _unwrap(x):
    while isinstance(x, _Paren):
        x = x.node
    return x


def _label(c, i: int):
    """The `label: "..."` string among a declaration's children from position `i`, if written."""
    return next((x for x in c[i:] if isinstance(x, ast.String)), None)


def _scope(c, i: int) -> tuple:
    """The arms of `on ARM, ARM` among a declaration's children from position `i` (empty when absent)."""
    return next((x.items for x in c[i:] if isinstance(x, _Seq) and x.kind == "on"), ())


def _ident(t: Token) -> ast.Ident:
    return ast.Ident(str(t), _tspan(t))


def _number(t: Token) -> ast.Number:
    return ast.Number(float(t), str(t), _tspan(t))


def _string(t: Token) -> ast.String:
    return ast.String(unescape(str(t)[1:-1]), _tspan(t))


def _nested(node) -> tuple:
    """The children of `node` one nesting level down (what E0109 counts).

    `abs(ratio(...))` is the exception: the comparison sits at the level of
    the `abs` (`_same_level`), so a reading's statistic is at depth 3 either way.
    """
    if isinstance(node, ast.Call):
        return tuple(a.value for a in node.args)
    if isinstance(node, ast.Comparison):
        return node.a, node.b
    if isinstance(node, ast.Reading):
        return (node.call,)
    if isinstance(node, ast.ListValue):
        return node.items
    if isinstance(node, (ast.Product, ast.BinaryRegion)):
        return node.left, node.right
    if isinstance(node, ast.Not):
        return (node.operand,)
    if isinstance(node, ast.Column):
        return (node.name,)
    if isinstance(node, ast.Abs) and not isinstance(node.call, ast.Comparison):
        return (node.call,)
    return ()


def _same_level(node) -> tuple:
    """Children at the same nesting level as `node` (see `_nested`)."""
    if isinstance(node, ast.Abs) and isinstance(node.call, ast.Comparison):
        return (node.call,)
    return ()


class Builder:
    """One method per rule name (alias or origin), called with the rule's children.

    Helper names must not be rule names: Lark would call them as callbacks.
    """

    def __init__(self):
        self.begin()

    def begin(self) -> None:
        """Forget the previous parse's findings."""
        #: (argument, the first keyword argument before it) per E0110, in source post-order
        self.positional_after_keyword: list[tuple[ast.Arg, ast.Arg]] = []
        #: (declaration, first node nested deeper than MAX_DEPTH) for the first such declaration
        self.too_deep: tuple[object, object] | None = None
        self._height: dict[int, int] = {}  # id(node) -> levels of nesting it holds (leaves: 1)

    # ------------------------------------------------------------ nesting depth (E0109)

    def _level(self, node):
        """Record the height of a node (the nesting levels it holds, itself included); returns the node."""
        h = self._height
        below = max((h.get(id(k), 1) for k in _nested(node)), default=0)
        h[id(node)] = max([1 + below, *(h.get(id(k), 1) for k in _same_level(node))])
        return node

    def _depth_checked(self, decl, *roots):
        """Note `decl` when one of its expressions (at depth 1) nests deeper than MAX_DEPTH."""
        if self.too_deep is None:
            h = self._height
            for root in roots:
                if h.get(id(root), 1) > MAX_DEPTH:
                    self.too_deep = (decl, self._deepest(root))
                    break
        return decl

    def _deepest(self, node):
        """The first node (source order, outermost first) at depth MAX_DEPTH + 1 under `node`."""
        h = self._height
        depth = 1
        while depth <= MAX_DEPTH:
            same = [k for k in _same_level(node) if depth + h.get(id(k), 1) - 1 > MAX_DEPTH]
            if same:
                node = same[0]
                continue
            node = next(k for k in _nested(node) if depth + h.get(id(k), 1) > MAX_DEPTH)
            depth += 1
        return node

    # ------------------------------------------------------------ declarations

    def start(self, c):
        return tuple(c)

    def audit(self, c):
        return self._depth_checked(ast.AuditBlock(_string(c[1]), tuple(c[3:-1]), _span(c[0], c[-1])),
                          *(v for s in c[3:-1] for v in _setting_values(s)))

    def report(self, c):
        return self._depth_checked(ast.ReportDecl(tuple(c[2:-1]), _span(c[0], c[-1])),
                          *(v for s in c[2:-1] for v in _setting_values(s)))

    def setting(self, c):
        values = c[2::2]
        if len(values) == 1:
            value = values[0]
        else:
            value = ast.ListValue(tuple(values), _span(values[0], values[-1]), bracketed=False)
        return ast.Setting(_ident(c[0]), value, _span(c[0], c[-1]))

    def scorer(self, c):
        return self._depth_checked(ast.ScorerDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _label(c, 4),
                                                  _scope(c, 4)), c[3])

    def arm(self, c):
        return self._depth_checked(ast.ArmDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _label(c, 4)), c[3])

    def probe(self, c):
        return self._depth_checked(ast.ProbeDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _label(c, 4)), c[3])

    def label(self, c):
        """`label: "..."` after a declaration's call or doses: the report's name for it."""
        return _string(c[2])

    def measure(self, c):
        return self._depth_checked(ast.MeasureDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _scope(c, 4)), c[3])

    def covariate(self, c):
        return self._depth_checked(ast.CovariateDecl(_ident(c[1]), c[3], _span(c[0], c[-1]), _scope(c, 4)), c[3])

    def region(self, c):
        expr = _unwrap(c[3])
        return self._depth_checked(ast.RegionDecl(_ident(c[1]), expr, _span(c[0], c[-1]), _scope(c, 4)), expr)

    def operator(self, c):
        return self._depth_checked(ast.OperatorDecl(_ident(c[1]), c[3], c[5], _span(c[0], c[-1]), _label(c, 6),
                                                    _scope(c, 6)), c[3])

    def dose_list(self, c):
        return ast.DoseList(tuple(_number(n) for n in c[::2]), _span(c[0], c[-1]))

    def dose_range(self, c):
        return ast.DoseRange(_number(c[0]), _number(c[2]), _number(c[4]), _span(c[0], c[-1]))

    def placebo(self, c):
        return self._depth_checked(ast.PlaceboDecl(_ident(c[1]), c[3], _ident(c[5]), _span(c[0], c[-1]),
                                                   _label(c, 6), _scope(c, 6)), c[3])

    def validate(self, c):
        return ast.ValidateDecl(_ident(c[1]), _ident(c[3]), tuple(c[5::2]), _span(c[0], c[-1]))

    def check(self, c):
        return ast.Check(_ident(c[0]), str(c[1]), _number(c[2]), _span(c[0], c[-1]))

    def under(self, c):
        return _Seq("under", _ident(c[1]), c[1])

    def select(self, c):
        under = c[5].items if len(c) == 8 else None
        return ast.SelectDecl(_ident(c[1]), _number(c[4]), under, _ident(c[-1]), _span(c[0], c[-1]))

    def hypothesis(self, c):
        claims = tuple(c[4:-1])
        return self._depth_checked(ast.HypothesisDecl(_ident(c[1]), _string(c[2]), claims, _span(c[0], c[-1])),
                          *(_claim_root(k) for k in claims))

    # ------------------------------------------------------------ claims

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
        return ast.Compare(c[0], str(c[1]), _number(c[2]), _span(c[0], c[-1]))

    def within(self, c):
        return ast.Within(c[0], _number(c[3]), _number(c[5]), _span(c[0], c[-1]))

    def bare(self, c):
        return ast.Bare(c[0], c[0].span)

    def abs(self, c):
        return self._level(ast.Abs(c[2], _span(c[0], c[-1])))

    # ------------------------------------------------------------ comparisons between readings

    def difference(self, c):
        return self._level(ast.Comparison("difference", c[2], c[4], _span(c[0], c[-1])))

    def ratio(self, c):
        return self._level(ast.Comparison("ratio", c[2], c[4], _span(c[0], c[-1])))

    def reading(self, c):
        arms, scorers, where = [], [], []
        for kind, node in c[1:]:
            (arms if kind == "on" else scorers if kind == "for" else where).append(node)
        last = c[-1][1] if len(c) > 1 else c[0]
        return self._level(ast.Reading(c[0], tuple(arms), tuple(scorers), tuple(where), _span(c[0], last)))

    def stratum(self, c):
        """A statistic restricted by `where`: a reading with no arm or scorer of its own."""
        where = tuple(node for _, node in c[1:])
        return self._level(ast.Reading(c[0], (), (), where, _span(c[0], c[-1][1])))

    def reading_on(self, c):
        return "on", _ident(c[1])

    def reading_for(self, c):
        return "for", _ident(c[1])

    def reading_where(self, c):
        v = c[3]
        value = _string(v) if v.type == "STRING" else _number(v)
        return "where", ast.Where(_ident(c[1]), value, _span(c[0], c[-1]))

    def on_arms(self, c):
        return _Seq("on", tuple(_ident(t) for t in c[1::2]), c[-1])

    def each_scorer(self, c):
        return ast.EachScorer(_span(c[0], c[-1]))

    def scorer_list(self, c):
        return _Seq("for", tuple(_ident(t) for t in c[1::2]), c[-1])

    # ------------------------------------------------------------ region algebra

    def region_union(self, c):
        return self._level(ast.BinaryRegion("|", _unwrap(c[0]), _unwrap(c[2]), _span(c[0], c[-1])))

    def region_inter(self, c):
        return self._level(ast.BinaryRegion("&", _unwrap(c[0]), _unwrap(c[2]), _span(c[0], c[-1])))

    def region_neg(self, c):
        return self._level(ast.Not(_unwrap(c[1]), _span(c[0], c[-1])))

    def region_atom(self, c):
        return _Paren(c[1], c[0], c[2])

    # ------------------------------------------------------------ values

    def name(self, c):
        return ast.Name(str(c[0]), _tspan(c[0]))

    def number(self, c):
        return _number(c[0])

    def string(self, c):
        return _string(c[0])

    def value_range(self, c):
        return ast.Range(_number(c[0]), _number(c[2]), _span(c[0], c[-1]))

    def product(self, c):
        return self._level(ast.Product(c[0], c[2], _span(c[0], c[-1])))

    def list(self, c):
        return self._level(ast.ListValue(tuple(c[1:-1:2]), _span(c[0], c[-1]), bracketed=True))

    def call(self, c):
        args = c[2:-1:2]
        first_kw = None
        for a in args:
            if a.name is not None:
                first_kw = first_kw or a
            elif first_kw is not None:
                self.positional_after_keyword.append((a, first_kw))
        func = c[0]
        span = _span(func, c[-1])
        if (func == "column" and len(args) == 1 and args[0].name is None
                and isinstance(args[0].value, ast.Name)):
            inner = args[0].value
            return self._level(ast.Column(ast.Ident(inner.name, inner.span), span))
        return self._level(ast.Call(_ident(func), tuple(args), span))

    def kwarg(self, c):
        return ast.Arg(_ident(c[0]), c[2], _span(c[0], c[-1]))

    def posarg(self, c):
        v = c[0]
        return ast.Arg(None, v, v.span)


def _setting_values(s: ast.Setting) -> tuple:
    """A setting's values, each at depth 1 (`html, pdf` is not a nesting level)."""
    v = s.value
    return v.items if isinstance(v, ast.ListValue) and not v.bracketed else (v,)


def _claim_root(claim: ast.Claim):
    """The expression at depth 1 of a claim: a statistic call or `abs(...)`."""
    e = claim.expr
    return e.call if isinstance(e, ast.Bare) else e.left
