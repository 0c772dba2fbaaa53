"""Property: random valid specs (built from the grammar's constructs) parse, and fmt
round-trips and is idempotent on them, comments included."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoreaudit.grammar.ast import strip_spans
from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar.parser import parse
import pytest

pytestmark = pytest.mark.slow  # fuzz: hypothesis over generated specs

# keywords are fine as argument names and values, so include a few
names = st.sampled_from(["a", "skin", "x1", "light_rest", "by", "from", "to", "under", "on", "of", "step", "_z"])
# function names: a claim may start right after `on`/`for` lists, so a function
# called `on` would read as an arms clause (documented limitation of the language)
func_names = st.sampled_from(["f", "skin", "lab_shift", "by", "from", "step", "under_x"])
decl_names = st.sampled_from(["a", "b", "skin", "h2", "best4", "q_"])
numbers = st.one_of(
    st.integers(-1000, 10**6).map(str),
    st.tuples(st.integers(-99, 99), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.tuples(st.integers(1, 9), st.sampled_from(["e", "E"]), st.integers(-5, 5)).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
)
strings = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"), max_size=12
).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')
ws = st.sampled_from([" ", "  ", "\t", " \n  "])
comment = st.sampled_from(["", "", "  # note", " #x", "   # a # b"])


def calls(values):
    pos = st.lists(values, max_size=2)
    kw = st.lists(st.tuples(names, values), max_size=2)
    return st.tuples(func_names, pos, kw).map(
        lambda t: f"{t[0]}(" + ", ".join(t[1] + [f"{k}: {v}" for k, v in t[2]]) + ")"
    )


atoms = st.one_of(numbers, strings, names, names.map(lambda n: f"column({n})"))
values = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        calls(inner),
        st.tuples(names, names).map(lambda t: f"{t[0]} * {t[1]}"),
    ),
    max_leaves=6,
)
call = calls(values)
regions = st.recursive(
    st.one_of(names, calls(atoms)),
    lambda inner: st.one_of(
        inner.map(lambda r: f"not {r}"),
        st.tuples(inner, st.sampled_from(["&", "|"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    ),
    max_leaves=5,
)
doses = st.one_of(
    st.lists(numbers, min_size=1, max_size=5).map(", ".join),
    st.tuples(numbers, numbers, numbers).map(lambda t: f"{t[0]}..{t[1]} step {t[2]}"),
)
cmp = st.sampled_from(["<", ">", "<=", ">="])
qualifier = st.one_of(
    decl_names.map(lambda n: f" on {n}"),
    decl_names.map(lambda n: f" for {n}"),
    st.tuples(names, st.one_of(strings, numbers)).map(lambda t: f" where {t[0]} = {t[1]}"),
)
reading = st.tuples(call, st.lists(qualifier, max_size=3)).map(lambda t: t[0] + "".join(t[1]))
comparison = st.tuples(st.sampled_from(["difference", "ratio"]), reading, reading).map(
    lambda t: f"{t[0]}({t[1]}, {t[2]})")
stat = st.one_of(call, call.map(lambda c: f"abs({c})"), comparison, comparison.map(lambda c: f"abs({c})"))
claim_expr = st.one_of(
    st.tuples(stat, cmp, numbers).map(" ".join),
    st.tuples(stat, numbers, numbers).map(lambda t: f"{t[0]} within [{t[1]}, {t[2]}]"),
    call,
)
claims = st.tuples(
    claim_expr,
    st.lists(decl_names, max_size=2).map(lambda xs: f" on {', '.join(xs)}" if xs else ""),
    st.one_of(st.just(""), st.just(" for each scorer"),
              st.lists(decl_names, min_size=1, max_size=2).map(lambda xs: " for " + ", ".join(xs))),
    comment,
).map(lambda t: "".join(t))
settings_ = st.lists(
    st.tuples(names, st.lists(values, min_size=1, max_size=2), comment, ws).map(
        lambda t: f"{t[0]}: {', '.join(t[1])}{t[2]}\n" if t[2] else f"{t[0]}: {', '.join(t[1])}{t[3]}"
    ),
    max_size=3,
).map("".join)

decls = st.one_of(
    st.tuples(st.sampled_from(["scorer", "arm", "measure", "covariate"]), decl_names, call).map(
        lambda t: f"{t[0]} {t[1]} = {t[2]}"),
    st.tuples(decl_names, regions).map(lambda t: f"region {t[0]} = {t[1]}"),
    st.tuples(decl_names, call, doses).map(lambda t: f"operator {t[0]} = {t[1]} doses {t[2]}"),
    st.tuples(decl_names, call, decl_names).map(lambda t: f"placebo {t[0]} = {t[1]} of {t[2]}"),
    st.tuples(decl_names, decl_names, st.lists(st.tuples(names, cmp, numbers).map(" ".join), min_size=1, max_size=3))
    .map(lambda t: f"validate {t[0]} under {t[1]}: {', '.join(t[2])}"),
    st.tuples(decl_names, st.integers(1, 64), st.one_of(st.just(""), decl_names.map(lambda n: f" under {n}")),
              decl_names).map(lambda t: f"select {t[0]} = best_of {t[1]}{t[2]} by {t[3]}"),
    st.tuples(decl_names, strings, st.lists(claims, max_size=3)).map(
        lambda t: f"hypothesis {t[0]} {t[1]} {{\n" + "\n".join("  " + c for c in t[2]) + "\n}"),
    settings_.map(lambda s: f"report {{ {s} }}"),
)
specs = st.tuples(
    strings, settings_, st.lists(st.tuples(decls, comment, st.sampled_from(["\n", "\n\n", "\n# c\n"])), max_size=6)
).map(lambda t: f"audit {t[0]} {{\n{t[1]}\n}}\n" + "".join(d + c + sep for d, c, sep in t[2]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_random_valid_specs_round_trip(src):
    m1, diags = parse(src)
    assert diags == [] and m1 is not None, (src, diags)
    out = format_module(m1)
    m2, diags2 = parse(out)
    assert diags2 == [], (out, diags2)
    assert strip_spans(m2) == strip_spans(m1)
    assert [c.text for c in m2.comments] == [c.text for c in m1.comments]
    assert format_module(m2) == out

