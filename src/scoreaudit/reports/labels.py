"""How the report names an interval's level and a p-value's sidedness: read from the data, never assumed.

Cells carry `ci_level` (1 − 2α, the interval the outcome rule reads) and a
test (`greater`, `less`, `equivalence`, `claim`); section rows carry their own
`ci_level` (1 − α, descriptive) and, where the statistics say so, the sidedness
of each p (`*_sided`). A bundle without those fields gets the documented
defaults of the statistics that wrote it (spec/methods.md), named here once.
"""

from __future__ import annotations

from scoreaudit.compiler import settings as setting_defs
from scoreaudit.compiler.settings import CLAIM_RULE, claim_level
from scoreaudit.reports import fmt

# sidedness words, keyed by what the statistics write
SIDED = {
    "greater": "one-sided",
    "less": "one-sided",
    "two-sided": "two-sided",
    "equivalence": "two one-sided tests (TOST)",
    "omnibus": "omnibus",
}


def level_pct(level, default: float = 0.95) -> str:
    """0.9 → "90%"."""
    try:
        v = float(level)
    except (TypeError, ValueError):
        v = default
    if not 0 < v < 1:
        v = default
    return f"{round(100 * v, 4):g}%"


def ci(level, default: float = 0.95, kind: str = "CI") -> str:
    """"90% CI" (or "95% Wilson CI" with kind="Wilson CI")."""
    return f"{level_pct(level, default)} {kind}"


def row_level(rows, key: str = "ci_level", default: float = 0.95) -> float:
    """The one level a section's rows share (their own field), else `default`."""
    levels = {float(r[key]) for r in rows if isinstance(r, dict) and r.get(key) is not None}
    if len(levels) == 1:
        return levels.pop()
    return default


def section_level(ctx, rows, key: str = "ci_level") -> float:
    """A section's descriptive interval level: its rows' own field, else 1 − α."""
    return row_level(rows, key, 1 - ctx.alpha)


def cell_level(cell: dict, alpha: float = setting_defs.default("alpha")) -> float:
    v = cell.get("ci_level")
    return float(v) if v is not None else claim_level(alpha)


def cell_p(cell: dict) -> str:
    """How a cell's p was computed, in words: "one-sided p, H₀: θ ≤ 0.5"."""
    t = cell.get("test") or {}
    kind = t.get("kind")
    if kind == "greater":
        return f"one-sided p, H\u2080: \u03b8 \u2264 {fmt.plain(t.get('threshold'))}"
    if kind == "less":
        return f"one-sided p, H\u2080: \u03b8 \u2265 {fmt.plain(t.get('threshold'))}"
    if kind == "equivalence":
        return f"TOST p, H\u2080: \u03b8 outside [{fmt.plain(t.get('low'))}, {fmt.plain(t.get('high'))}]"
    if cell.get("statistic") == "homogeneous":
        return "omnibus p, H\u2080: equal effects across strata"
    return ""


def sided(value: str | None, default: str) -> str:
    """Words for a `*_sided` field ("greater" → "one-sided")."""
    return SIDED.get(value or default, value or default)


def interval_note(alpha: float) -> str:
    """Why cells and charts show different levels: one sentence for the first screen."""
    cell, chart = level_pct(claim_level(alpha)), level_pct(1 - alpha)
    return (f"Cells show {cell} intervals ({CLAIM_RULE}): a one-sided test at \u03b1 = {fmt.plain(alpha)} "
            f"rejects exactly when that interval excludes the threshold, so the outcome rule reads it. "
            f"The charts and tables below are descriptive and show {chart} intervals (1 \u2212 \u03b1).")


#: the statistics' own tests (a cell's detail `test` when its method is "own test"), in words
OWN_TESTS = {"kruskal": "Kruskal\u2013Wallis", "anova": "one-way ANOVA", "friedman": "Friedman",
             "mcnemar": "McNemar", "fisher_z": "Fisher z", "wilson": "Wilson score"}


def cell_test(cell: dict) -> str:
    """The test that gave a cell's p, as the statistics recorded it (`method`; an own test by its name)."""
    method = str(cell.get("method") or "")
    own = str((cell.get("detail") or {}).get("test") or "")
    if method in ("", "own test"):
        return OWN_TESTS.get(own, own.replace("_", " "))
    return method.replace(" (none inversion)", "")


def p_floor(cell: dict, bootstrap) -> str:
    """Said when a cell's p sits at the smallest its test can give (stats writes `smallest_p`): a bootstrap p
    cannot go below 1/(B + 1), an exact test below its own floor; "" otherwise."""
    d = cell.get("detail") or {}
    floor, p = d.get("smallest_p"), cell.get("p")
    if not isinstance(floor, (int, float)) or not isinstance(p, (int, float)) or p > floor * (1 + 1e-9):
        return ""
    if "bootstrap" in str(cell.get("method") or "") and bootstrap:
        return (f"p is at the floor of a {fmt.count(bootstrap)}-resample bootstrap, 1/(B + 1) = {fmt.pval(floor)}: "
                "the true p may be smaller")
    return f"p is the smallest this test can give ({fmt.pval(floor)})"
