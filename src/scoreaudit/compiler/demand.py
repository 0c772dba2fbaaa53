"""What an audit needs computed: the demand its hypotheses (and validations, probes) place on the data.

One audit can be one benchmark: a face arm with a skin operator and a body
arm with a torso warp, an images arm and a pairs arm, scorers that apply to
one arm only. The plan therefore holds the work something reads, never the
cross product of the declarations (spec/language.md, "What runs"). This pass
is a pure function of the IR: every unit of work it returns names what needs
it (cell ids, `validate …`, `probe …`), which `scoreaudit plan` prints and
the plan's steps carry as `needed_by`.

Sources of demand, in order:
- each cell's readings (arm, scorer, statistic): the statistic's registry
  `reads` (compiler/reads.py) give the operators scored (the original always:
  the SD scale and every identity dose read it), the measures under them,
  the selections; a cell's axis adds its measure;
- a scorer that reads a measure (`planted(slope_by: m)`) needs it wherever
  it scores a variant;
- `validate m under o`: the measure under o on every arm where o runs (on
  every images arm in both scopes when no claim runs o: a validation is an
  explicit request, and costs no forward pass);
- the report's dose curves: an operator no claim reads runs on every images
  arm in its scope that a claim scores, under the scorers read there; a
  placebo no claim reads runs wherever its operator runs (the placebo table);
- covariates describe the operators (the report's artifact columns): each is
  measured under every operator that runs on an arm in its scope; the
  builtin leakage likewise;
- regions: those the needed operators and measures use, with their
  dependencies;
- probes: those a cell reads.
A spec without claims is exploratory: every declaration runs on every arm in
its scope (its tables are what the user asked for). Anything declared and
needed by nothing is reported by `unused` (warnings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from scoreaudit import registry
from scoreaudit.compiler.ir import ORIGINAL, AuditIR, CellIR, readings_of, walk_stats
from scoreaudit.compiler.reads import reads


def in_scope(on: Iterable[str], arm: str) -> bool:
    """A declaration's scope (`... on a, b`; empty: every arm) includes `arm`."""
    on = tuple(on or ())
    return not on or arm in on


def scope_of(decl) -> tuple[str, ...]:
    return tuple(getattr(decl, "on", ()) or ())


REPORT_CURVES = "report: dose curves"  # what an operator no claim reads is run for
REPORT_PLACEBO = "report: placebo table"  # likewise a placebo

Work = tuple  # ("score", arm, scorer, op) | ("operator", arm, op) | ("measure", arm, op, m) | ("region", arm, r)
#              | ("select", arm, selection) | ("probe", probe)


@dataclass
class Demand:
    """Unit of work → what needs it (insertion-ordered, deduplicated)."""

    needs: dict[Work, dict[str, None]] = field(default_factory=dict)

    def add(self, work: Work, by: str) -> None:
        self.needs.setdefault(work, {})[by] = None

    def has(self, work: Work) -> bool:
        return work in self.needs

    def by(self, work: Work) -> tuple[str, ...]:
        return tuple(self.needs.get(work, ()))

    def of(self, kind: str, arm: str | None = None) -> list[Work]:
        return [w for w in self.needs if w[0] == kind and (arm is None or w[1] == arm)]

    def operators(self, arm: str) -> list[str]:
        return [w[2] for w in self.of("operator", arm)]

    def scorers(self, arm: str, op: str = ORIGINAL) -> list[str]:
        return [w[2] for w in self.of("score", arm) if w[3] == op]

    def measures(self, arm: str, op: str) -> list[str]:
        return [w[3] for w in self.of("measure", arm) if w[2] == op]

    def regions(self, arm: str) -> list[str]:
        return [w[2] for w in self.of("region", arm)]

    def pixels(self, audit: AuditIR, arm: str) -> bool:
        """Whether the arm's images are decoded: anything but scores read from data needs pixels."""
        a = audit.arms[arm]
        if a.source == "pairs" and a.call.params.get("images") is False:
            return False
        if self.of("operator", arm) or self.of("region", arm) or self.of("measure", arm):
            return True
        return any(not registry.reads_data(audit.scorers[w[2]].call.plugin) for w in self.of("score", arm))


def _measure_refs(audit: AuditIR, scorer: str) -> list[str]:
    """Declared measures a scorer's parameters name (`Ref("measure")`, e.g. planted's slope_by)."""
    from scoreaudit.compiler.params import fields_of

    sc = audit.scorers[scorer]
    registry.load_plugins()
    try:
        entry = registry.REGISTRIES["scorer"].get(sc.call.plugin)
        specs = fields_of(entry.params)
    except Exception:  # noqa: BLE001 - an unknown plugin was reported by check
        return []
    out = []
    for spec in specs.values():
        if spec.ref in ("measure", "covariate"):
            v = sc.call.params.get(spec.name)
            if isinstance(v, str) and v in audit.measures:
                out.append(v)
    return list(dict.fromkeys(out))


def _probes_of(cell: CellIR) -> list[str]:
    out = []
    for stat in [cell.statistic] + [r.statistic for r in readings_of(cell.statistic)]:
        for s in walk_stats(stat):
            p = s.params.get("probe")
            if isinstance(p, str):
                out.append(p)
    return out


def demand(audit: AuditIR) -> Demand:
    """The work the audit's cells, validations and probes read (see the module docstring)."""
    d = Demand()
    images = {n for n, a in audit.arms.items() if a.source == "images"}

    def need_operator(arm: str, op: str, by: str) -> None:
        if op != ORIGINAL and op in audit.operators and arm in images:
            d.add(("operator", arm, op), by)

    def need_measure(arm: str, op: str, m: str, by: str) -> None:
        if m in audit.measures and arm in images:
            need_operator(arm, op, by)
            d.add(("measure", arm, op, m), by)

    if not audit.cells():  # no claims: an exploratory run, every declaration on every arm in its scope
        _everything(d, audit, images)
    for c in audit.cells():
        for p in _probes_of(c):
            if p in audit.probes:
                d.add(("probe", p), c.id)
        for arm, scorer, stat in c.parts():
            if arm not in audit.arms or scorer not in audit.scorers:
                continue
            r = reads(stat, audit)
            d.add(("score", arm, scorer, ORIGINAL), c.id)
            for op in r.operators:
                if op == ORIGINAL or (op in audit.operators and arm in images):
                    d.add(("score", arm, scorer, op), c.id)
                    need_operator(arm, op, c.id)
            for op, m in r.measures:
                need_measure(arm, op, m, c.id)
            for sel in r.selections:
                d.add(("select", arm, sel), c.id)
                s = audit.selections[sel]
                d.add(("score", arm, scorer, s.operator or ORIGINAL), c.id)
            if c.axis is not None and c.axis[1] in r.operators:
                need_measure(arm, c.axis[1], c.axis[0], c.id)

    # the report's dose curves and operator-uniformity table: an operator no claim reads runs on every
    # images arm in its scope that some claim scores, under the scorers read there
    claimed = {w[2] for w in d.of("operator")}
    for o, op in audit.operators.items():
        if o in claimed or op.placebo_of:
            continue
        for arm in audit.arms:
            scorers = d.scorers(arm)
            if arm in images and scorers and in_scope(scope_of(op), arm):
                need_operator(arm, o, REPORT_CURVES)
                for s in scorers:
                    d.add(("score", arm, s, o), REPORT_CURVES)
    # the report's placebo table: a placebo no claim reads runs wherever its operator runs, under its scorers
    for o, op in audit.operators.items():
        if o in claimed or not op.placebo_of:
            continue
        for arm in list(audit.arms):
            if d.has(("operator", arm, op.placebo_of)) and in_scope(scope_of(op), arm):
                need_operator(arm, o, REPORT_PLACEBO)
                for s in d.scorers(arm, op.placebo_of):
                    d.add(("score", arm, s, o), REPORT_PLACEBO)

    # a scorer that reads a measure needs it wherever it scores a variant
    for w in list(d.of("score")):
        _, arm, scorer, op = w
        for m in _measure_refs(audit, scorer):
            if op != ORIGINAL and in_scope(scope_of(audit.measures[m]), arm):
                need_measure(arm, op, m, f"scorer {scorer}")

    for v in audit.validations:
        by = f"validate {v.measure} under {v.operator}"
        running = [a for a in images if d.has(("operator", a, v.operator))]
        if not running:
            running = [a for a in audit.arms if a in images and in_scope(scope_of(audit.operators.get(v.operator)), a)
                       and in_scope(scope_of(audit.measures.get(v.measure)), a)]
        for a in running:
            need_measure(a, v.operator, v.measure, by)

    # covariates describe every operator that runs on an arm in their scope
    for w in list(d.of("operator")):
        _, arm, op = w
        for m in audit.measures.values():
            if m.role == "covariate" and in_scope(scope_of(m), arm):
                d.add(("measure", arm, op, m.name), f"operator {op}")

    # a measure taken under an operator is taken on the unaltered image too (the reference of its changes)
    for w in list(d.of("measure")):
        _, arm, op, m = w
        if op != ORIGINAL:
            for by in d.by(w):
                d.add(("measure", arm, ORIGINAL, m), by)

    # regions of what runs, then the regions those regions are built from
    for w in list(d.needs):
        kind, arm = w[0], w[1] if len(w) > 1 else None
        if kind == "operator":
            reg = audit.operators[w[2]].region
            if reg:
                _need_region(d, audit, arm, reg, f"operator {w[2]}")
        elif kind == "measure":
            reg = audit.measures[w[3]].region
            if reg:
                _need_region(d, audit, arm, reg, f"{audit.measures[w[3]].role} {w[3]}")
    return d


EXPLORATORY = "no hypotheses: every declaration"


def _everything(d: Demand, audit: AuditIR, images: set[str]) -> None:
    """A spec without claims asks for its tables: every scorer, operator and measure on every arm in scope."""
    for arm in audit.arms:
        scorers = [s for s, sc in audit.scorers.items() if in_scope(scope_of(sc), arm)]
        for s in scorers:
            d.add(("score", arm, s, ORIGINAL), EXPLORATORY)
        if arm not in images:
            continue
        for m, mi in audit.measures.items():
            if in_scope(scope_of(mi), arm):
                d.add(("measure", arm, ORIGINAL, m), EXPLORATORY)
        for o, op in audit.operators.items():
            if not in_scope(scope_of(op), arm):
                continue
            d.add(("operator", arm, o), EXPLORATORY)
            for s in scorers:
                d.add(("score", arm, s, o), EXPLORATORY)
            for m, mi in audit.measures.items():
                if in_scope(scope_of(mi), arm):
                    d.add(("measure", arm, o, m), EXPLORATORY)


def _need_region(d: Demand, audit: AuditIR, arm: str, name: str, by: str) -> None:
    if name not in audit.regions:
        return
    d.add(("region", arm, name), by)
    for dep in audit.regions[name].depends_on:
        _need_region(d, audit, arm, dep, f"region {name}")


def unused(audit: AuditIR, d: Demand) -> list[tuple[str, str]]:
    """(kind, name) of every declaration nothing needs: scorers, operators and placebos, regions,
    measures (covariates are needed wherever an operator runs), selections."""
    out = []
    probed = {p.scorer for p in audit.probes.values()}
    for s in audit.scorers:
        if s not in probed and not any(w[2] == s for w in d.of("score")):
            out.append(("scorer", s))
    for o, op in audit.operators.items():
        if not any(w[2] == o for w in d.of("operator")):
            out.append(("placebo" if op.placebo_of else "operator", o))
    for r in audit.regions:
        if not any(w[2] == r for w in d.of("region")):
            out.append(("region", r))
    for m, mi in audit.measures.items():
        if mi.role == "measure" and not any(w[3] == m for w in d.of("measure")) and not _probe_measure(audit, m):
            out.append(("measure", m))
    for s in audit.selections:
        if not any(w[2] == s for w in d.of("select")):
            out.append(("selection", s))
    return out


def _probe_measure(audit: AuditIR, m: str) -> bool:
    return any(m in p.measures for p in audit.probes.values())


_LAST: list = []  # (ir, its demand): the run asks for one audit's demand once per arm and step


def demand_of(audit: AuditIR) -> Demand:
    """`demand(audit)`, remembered for the last audit asked about (the IR is frozen)."""
    if _LAST and _LAST[0] is audit:
        return _LAST[1]
    d = demand(audit)
    _LAST[:] = [audit, d]
    return d
