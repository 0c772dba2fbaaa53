"""First screen: pre-registration status, auditability verdicts, every hypothesis cell."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable

from scoreaudit.compiler import settings as setting_defs
from scoreaudit.compiler.settings import CLAIM_RULE, claim_level
from scoreaudit.reports import fmt, labels
from scoreaudit.reports.sections import section
from scoreaudit.reports.sections.arm_prompts import generated_arms
from scoreaudit.reports.sentences import OUTCOME_ICON, cell_sentence
from scoreaudit.stats.sentences import signed  # one sentence source: which statistics carry a sign

LOCK_HEADINGS = {
    "pre-registered": ("Pre-registered", "The hypotheses were locked before any image was scored."),
    "not pre-registered": ("Not pre-registered", "The hypotheses were not locked before scoring began: "
                           "read the outcomes as exploratory."),
    "deviation": ("DEVIATION from the pre-registration", "The audit that ran differs from the one locked. "
                  "Outcomes that depend on the items listed below were not pre-registered as run."),
}
CHANGE_WORDS = {"added": "added after locking", "removed": "locked but removed", "changed": "changed after locking"}


_TOKENS = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|-?[0-9][0-9.eE+-]*|.")


def marked(a: str | None, b: str | None) -> tuple[list, list]:
    """The locked and the current text as [(piece, changed)] runs: what differs is marked, so a reader
    finds `>0` vs `>0.01` in a long hypothesis without comparing it character by character."""
    if a is None or b is None:
        return ([(a, False)] if a is not None else []), ([(b, False)] if b is not None else [])
    ta, tb = _TOKENS.findall(a), _TOKENS.findall(b)
    ra, rb = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        ra.append(("".join(ta[i1:i2]), op != "equal"))
        rb.append(("".join(tb[j1:j2]), op != "equal"))
    return [r for r in ra if r[0]], [r for r in rb if r[0]]


def _deviation(d: dict) -> dict:
    locked, current = marked(d.get("locked"), d.get("current"))
    return {"hypothesis": d.get("hypothesis", "?"), "change": d.get("change", "changed"),
            "item": d.get("item") or d.get("hypothesis", "?"), "locked": locked, "current": current,
            "words": CHANGE_WORDS.get(d.get("change"), d.get("change", ""))}


@section("preregistration", order=10, title="Pre-registration", first_screen=True)
def preregistration(ctx) -> dict:
    lock = dict(ctx.results.get("lock") or {})
    status = lock.get("status") or "not pre-registered"
    heading, meaning = LOCK_HEADINGS.get(status, (status, ""))
    return {
        "status": status,
        "css": {"pre-registered": "ok", "deviation": "deviation"}.get(status, "neutral"),
        "heading": heading,
        "meaning": meaning,
        "detail": relative_paths(lock.get("detail") or "", (ctx.results.get("spec") or {}).get("path")),
        "locked_at": utc_time(lock.get("locked_at")),
        "first_score_at": utc_time(lock.get("first_score_at")),
        "deviations": [_deviation(d) for d in lock.get("deviations") or []],
        "attestation": lock.get("attestation") or "",
        "lock_sha256": lock.get("lock_sha256"),
        "generated": generated_arms(ctx),  # which prompt each generated arm's images were scored with
    }


def utc_time(stamp) -> str | None:
    """`2026-12-04T04:32:25.063326Z` as a reader reads it: `2026-12-04 04:32:25 UTC` (to the second; the
    bundle keeps the exact stamp); anything that is not such a stamp is shown as written."""
    from datetime import datetime, timezone

    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if t.tzinfo is None:
        return stamp
    return t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


_ABS_PATH = re.compile(r"(?<![\w.~-])/(?:[^\s;,()'\"]+)")


def relative_paths(text: str, spec_path: str | None) -> str:
    """`text` with every absolute path as the reader's project sees it: relative to the spec's folder when
    under it, else its last two parts (the machine's folders say nothing to a reader and leak its layout)."""
    from pathlib import PurePosixPath

    base = PurePosixPath(str(spec_path)).parent if spec_path and str(spec_path).startswith("/") else None

    def one(m: re.Match) -> str:
        raw = m.group(0)
        trail = raw[len(raw.rstrip(".:")):]
        p = PurePosixPath(raw.rstrip(".:"))
        if base is not None and (p == base or base in p.parents):
            rel = p.relative_to(base).as_posix()
            return (rel if rel != "." else "the spec's folder") + trail
        return "\u2026/" + "/".join(p.parts[-2:]) + trail

    return _ABS_PATH.sub(one, text)


def _condition_value(c: dict) -> str:
    v, name = c.get("value"), c.get("name", "")
    if v is None:
        return fmt.UNDEFINED
    if isinstance(v, dict):  # e.g. validity per arm: {"real": {"r2": .., "monotonic": ..}}
        return "; ".join(f"{k}: " + (", ".join(f"{kk} {fmt.num(vv)}" for kk, vv in x.items()) if isinstance(x, dict)
                                     else fmt.num(x)) for k, x in v.items())
    if name == "pixel isolation":
        return "leakage " + fmt.pct(v)
    if name == "measurement validity":
        return "r\u00b2 " + fmt.num(v)
    if name == "real-data arm":
        return fmt.count(v) + " clusters"
    return fmt.num(v)


@section("verdict", order=20, title="Auditability verdict", first_screen=True)
def verdict(ctx) -> dict:
    verdicts = []
    for v in ctx.results.get("verdicts") or []:
        bias = v.get("verdict") == "bias-measurement"
        conds = [{"name": c.get("name", "?"), "held": bool(c.get("held")), "value": _condition_value(c),
                  "detail": c.get("detail") or ""} for c in v.get("conditions") or []]
        verdicts.append({
            "axis": f"{v.get('measure', '?')} \u00d7 {ctx.label('operator', v.get('operator', '?'))}",
            "measure": v.get("measure", "?"), "operator": v.get("operator", "?"),
            "bias": bias, "label": "Bias measurement" if bias else "Mechanistic stress test only",
            "failed": [c["name"] for c in conds if not c["held"]], "conditions": conds,
        })
    operators = [ctx.label("operator", o) for o, op in ctx.operators.items() if not (op or {}).get("placebo_of")]
    return {"verdicts": verdicts, "operators": ", ".join(operators), "about": _about(ctx)}


def _about(ctx) -> str:
    """What an audit without operators tests, from its cells: optimisation probes, cross-image comparisons."""
    cells = ctx.results.get("cells") or []
    probe = [c for c in cells if str(c.get("statistic") or "").startswith("probe") or c.get("probe")
             or any(str(r.get("statistic") or "").startswith("probe") for r in (c.get("detail") or {}).get("readings") or [])]
    kinds = []
    if probe:
        kinds.append("optimisation probes (how the scorer moves an image it is optimised for)")
    if len(probe) < len(cells):
        kinds.append("cross-image comparisons")
    return " and ".join(kinds)


OUTCOMES = ("supported", "refuted", "inconclusive")
COMPARISONS = ("difference", "ratio")  # statistics that compare two readings (their arms read "A vs B")
CORRECTION_WORDS = {"bh": "false discovery rate (Benjamini\u2013Hochberg)", "by": "false discovery rate (Benjamini\u2013Yekutieli)",
                    "holm": "familywise error rate (Holm)", "bonferroni": "familywise error rate (Bonferroni)",
                    "none": "no multiplicity correction"}


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement that inserts `text` as written (a label may hold backslashes)."""
    return lambda _m: text


def _after_group(text: str) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement: the match's first group, a space, then `text` as written."""
    return lambda m: f"{m.group(1)} {text}"


def labelled(sentence: str, cell: dict, ctx) -> str:
    """The cell's sentence with the spec's display labels for its scorer(s) and arm(s), where it names them.

    Only the sentence's own words change, never the claim it quotes (`(claim: ...)` keeps the spec's names);
    a comparison's two scorers (`hps:laion`) and two arms are each labelled.
    """
    head, sep, tail = sentence.partition(" (claim: ")
    for scorer in scorer_parts(cell):
        label = ctx.label("scorer", scorer)
        if label != scorer:
            head = re.sub(rf"(?<![\w.]){re.escape(scorer)}'s(?=\s)", _literal(f"{label}'s"), head)
    for arm in cell.get("arms") or ([cell["arm"]] if cell.get("arm") else []):
        alabel = ctx.label("arm", arm)
        if alabel != arm:
            head = re.sub(rf"\b(On|on|From|to|Across) {re.escape(arm)}(?=[\s,.:;)])",
                          _after_group(alabel), head)
    return head + sep + tail


def cell_anchor(index: int) -> str:
    """The id of a cell's sentence (the glance matrix links to it)."""
    return f"cell-{index + 1}"


def _hypothesis_order(ctx) -> list[str]:
    cells = ctx.results.get("cells") or []
    order = [h.get("name") for h in ctx.results.get("hypotheses") or []]
    for c in cells:
        if c.get("hypothesis") not in order:
            order.append(c.get("hypothesis"))
    return order


def scorer_parts(cell: dict) -> list[str]:
    """The scorer(s) of a cell: one, or two for a comparison of two scorers' readings (`hps:laion`)."""
    return [s for s in str(cell.get("scorer") or "").split(":") if s]


def _scorer_order(ctx) -> list[str]:
    """The scorers the cells use (a comparison's two count as themselves), in declaration order."""
    cells = ctx.results.get("cells") or []
    declared = list(ctx.ir.get("scorers") or (ctx.results.get("environment") or {}).get("scorers") or {})
    used = list(dict.fromkeys(p for c in cells for p in scorer_parts(c)))
    return [s for s in declared if s in used] + [s for s in used if s not in declared]


def legend(ctx) -> list[tuple[str, str, str]]:
    """(outcome, icon, rule in plain words), from the audit's own alpha, correction and interval level."""
    settings = ctx.results.get("settings") or {}
    alpha = ctx.alpha
    correction = settings.get("correction", setting_defs.default("correction"))
    corr = CORRECTION_WORDS.get(correction, str(correction))
    level = labels.level_pct(claim_level(alpha))
    return [
        ("supported", OUTCOME_ICON["supported"],
         f"the claim holds at \u03b1 = {fmt.plain(alpha)}: its p-value, adjusted for {corr}, is q \u2264 {fmt.plain(alpha)}."),
        ("refuted", OUTCOME_ICON["refuted"],
         f"the {level} interval ({CLAIM_RULE}) lies entirely on the other side of the claim's threshold "
         "(for a claimed interval: entirely outside it)."),
        ("inconclusive", OUTCOME_ICON["inconclusive"],
         "neither: the data cannot tell (or the statistic is undefined)."),
    ]


def summary(ctx) -> str:
    """One paragraph of what was found, generated from the cells and verdicts (no free text)."""
    cells = ctx.results.get("cells") or []
    if not cells:
        return ""
    total = Counter(c.get("outcome") or "inconclusive" for c in cells)
    hyps = _hypothesis_order(ctx)
    scorers = _scorer_order(ctx)
    parts = [f"{len(cells)} cell{'s' if len(cells) != 1 else ''} over {len(hyps)} hypothes{'es' if len(hyps) != 1 else 'is'} "
             f"and {len(scorers)} scorer{'s' if len(scorers) != 1 else ''}: "
             + ", ".join(f"{total.get(o, 0)} {o}" for o in OUTCOMES) + "."]
    parts.append(_survivors(ctx, cells))
    for outcome, verb in (("supported", "supported"), ("refuted", "refuted")):
        whole, some = [], []
        for h in hyps:
            hc = [c for c in cells if c.get("hypothesis") == h]
            k = sum(1 for c in hc if (c.get("outcome") or "inconclusive") == outcome)
            if hc and k == len(hc):
                whole.append(h)
            elif k:
                some.append(f"{h} ({k} of {len(hc)})")
        if whole:
            parts.append(f"{_join(whole)} {'is' if len(whole) == 1 else 'are'} {verb} in every cell.")
        if some:
            parts.append(f"Partly {verb}: {_join(some)}.")
    refuted_scorers = Counter(c.get("scorer") for c in cells if c.get("outcome") == "refuted")
    if refuted_scorers:
        worst, n = refuted_scorers.most_common(1)[0]
        parts.append(f"Most refuted cells: {ctx.label('scorer', worst)} ({n}).")
    for v in ctx.results.get("verdicts") or []:
        axis = f"{v.get('measure', '?')} \u00d7 {ctx.label('operator', v.get('operator', '?'))}"
        if v.get("verdict") == "bias-measurement":
            parts.append(f"The {axis} axis is a bias measurement.")
        else:
            failed = [c.get("name", "?") for c in v.get("conditions") or [] if not c.get("held")]
            parts.append(f"The {axis} axis is a mechanistic stress test only"
                         + (f" ({_join(failed)} not met)." if failed else "."))
    return " ".join(parts)


def _survivors(ctx, cells: list[dict]) -> str:
    """"k of m raw-significant cells survive the correction" (as the seed paper reports it): m cells with
    p <= alpha before the correction, k of them with q <= alpha after it."""
    alpha = ctx.alpha
    raw = [c for c in cells if isinstance(c.get("p"), (int, float)) and c["p"] <= alpha]
    if not raw:
        return f"No cell is significant before the correction (p \u2264 {fmt.plain(alpha)})."
    kept = sum(1 for c in raw if isinstance(c.get("q"), (int, float)) and c["q"] <= alpha)
    corr = (ctx.results.get("settings") or {}).get("correction", "bh")
    return (f"{kept} of {len(raw)} raw-significant cell{'s' if len(raw) != 1 else ''} (p \u2264 {fmt.plain(alpha)}) "
            f"survive{'s' if len(raw) == 1 else ''} the {CORRECTION_WORDS.get(corr, corr)} correction (q \u2264 {fmt.plain(alpha)}).")


def _join(xs: list[str]) -> str:
    xs = [str(x) for x in xs]
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


#: scorer columns per matrix: more are split into further matrices (the same rows), so that the matrix fits
#: an A4 page and a laptop screen whatever the number of scorers; on a phone each row becomes a card
GLANCE_COLUMNS = 4


@section("glance", order=25, title="At a glance", first_screen=True)
def glance(ctx) -> dict | None:
    """Hypotheses × scorers (one row per arm where a hypothesis runs on several), each cell's outcome and estimate;
    at most GLANCE_COLUMNS scorers per matrix."""
    cells = ctx.results.get("cells") or []
    if not cells:
        return None
    scorers = _scorer_order(ctx)
    index = {id(c): i for i, c in enumerate(cells)}
    chunks = [scorers[i:i + GLANCE_COLUMNS] for i in range(0, len(scorers), GLANCE_COLUMNS)] or [[]]
    tables = []
    for k, chunk in enumerate(chunks):
        rows = []
        for h in _hypothesis_order(ctx):
            hc = [c for c in cells if c.get("hypothesis") == h]
            wheres = list(dict.fromkeys(ctx.arm_text(c) for c in hc))
            first = True
            for where in wheres:
                entries = []
                for s in chunk:  # a comparison of two scorers sits under the first, "vs" the second
                    mine = [c for c in hc if (scorer_parts(c) or [None])[0] == s and ctx.arm_text(c) == where]
                    entries.append([_glance_entry(c, index[id(c)], ctx) for c in mine])
                if not any(entries) and chunk:
                    continue  # none of this matrix's scorers is tested here
                rows.append({"hypothesis": h, "title": ctx.hypothesis_titles.get(h, "") if first else "",
                             "where": where, "first": first, "entries": entries})
                first = False
        tables.append({"scorers": [ctx.label("scorer", s) for s in chunk], "rows": rows,
                       "caption": (f"Scorers {k * GLANCE_COLUMNS + 1}\u2013{k * GLANCE_COLUMNS + len(chunk)} of "
                                   f"{len(scorers)}" if len(chunks) > 1 else "")})
    return {"tables": tables, "scorers": [ctx.label("scorer", s) for s in scorers], "summary": summary(ctx),
            "comparisons": any(c.get("statistic") in COMPARISONS for c in cells),
            "legend": legend(ctx), "level": labels.level_pct(claim_level(ctx.alpha)),
            "note": labels.interval_note(ctx.alpha)}


def _glance_entry(c: dict, i: int, ctx) -> dict:
    outcome = c.get("outcome") or "inconclusive"
    statistic = c.get("statistic") or ""
    number = fmt.signed if signed(statistic) else fmt.num
    est = c.get("estimate")
    text = (c.get("detail") or {}).get("class") or fmt.UNDEFINED if est is None else number(est)
    if est is not None and statistic == "ratio":
        text = fmt.num(est) + "\u00d7"  # as the sentence says it: 0.027×
    parts = scorer_parts(c)
    return {"anchor": cell_anchor(i), "outcome": outcome, "icon": OUTCOME_ICON.get(outcome, "?"),
            "estimate": text, "versus": " vs ".join(ctx.label("scorer", p) for p in parts[1:]),
            "title": f"{outcome}: {c.get('claim_text') or statistic}"}


def seed_text(r: dict | None) -> str:
    """A cell's robustness over generation seeds (stats/seeds.py) in one sentence; "" when it has none."""
    if not isinstance(r, dict) or not r.get("per_seed"):
        return ""
    per = [p for p in r["per_seed"] if isinstance(p, dict)]
    n = len(per)
    parts = []
    if r.get("same_sign_rate") is not None:
        parts.append(f"same sign as the estimate in {round(r['same_sign_rate'] * n)} of {n}")
    if r.get("same_outcome_rate") is not None:
        parts.append(f"same outcome in {round(r['same_outcome_rate'] * n)} of {n}")
    each = "; ".join(f"seed {p.get('seed')}: {fmt.signed(p.get('estimate'))} {p.get('outcome', '')}".rstrip()
                     for p in per)
    return f"Over {n} generation seeds: {', '.join(parts) or 'no estimate'} ({each})."


@section("hypotheses", order=30, title="Hypotheses and outcomes", first_screen=True)
def hypotheses(ctx) -> dict | None:
    cells = ctx.results.get("cells") or []
    if not cells:
        return None
    deviated = {d.get("hypothesis"): d.get("change") for d in (ctx.results.get("lock") or {}).get("deviations") or []}
    from scoreaudit.reports.sections.influence import movers_text, top_movers

    movers = top_movers(ctx)
    groups = []
    for name in _hypothesis_order(ctx):
        rows = []
        for i, c in enumerate(cells):
            if c.get("hypothesis") != name:
                continue
            outcome = c.get("outcome") or "inconclusive"
            rows.append({"id": c.get("id", ""), "anchor": cell_anchor(i), "outcome": outcome,
                         "icon": OUTCOME_ICON.get(outcome, "?"), "sentence": labelled(cell_sentence(c), c, ctx),
                         "scorer": ctx.label("scorer", c.get("scorer")), "arm": ctx.arm_text(c),
                         "estimate": fmt.signed(c.get("estimate")), "ci": fmt.ci(c.get("ci_low"), c.get("ci_high")),
                         "level": labels.ci(labels.cell_level(c, ctx.alpha)), "p_label": labels.cell_p(c),
                         "p": fmt.pval(c.get("p")), "q": fmt.pval(c.get("q")), "test": labels.cell_test(c),
                         "floor": labels.p_floor(c, (ctx.results.get("settings") or {}).get("bootstrap")),
                         "seeds": seed_text(c.get("seed_robustness")),
                         "movers": movers_text(movers.get((c.get("arm"), c.get("scorer"),
                                                           (c.get("params") or {}).get("operator")), []))})
        counts = Counter(r["outcome"] for r in rows)
        groups.append({"name": name, "title": ctx.hypothesis_titles.get(name, ""), "rows": rows,
                       "claim": next((c.get("claim_text") for c in cells if c.get("hypothesis") == name), ""),
                       "deviation": deviated.get(name), "counts": counts})
    total = Counter(c.get("outcome") or "inconclusive" for c in cells)
    settings = ctx.results.get("settings") or {}
    return {"groups": groups, "total": total, "n": len(cells), "alpha": fmt.plain(settings.get("alpha", ctx.alpha)),
            "correction": settings.get("correction", setting_defs.default("correction")),
            "levels": sorted({labels.ci(labels.cell_level(c, ctx.alpha)) for c in cells})}
