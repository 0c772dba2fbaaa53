"""The execution plan: a DAG of content-addressed steps built from the IR.

Each step's `key` comes from the one key scheme (scoreaudit/keys.py: the
key-algorithm version, step kind, plugin name and version, canonical
parameters) with the keys of its input steps as its inputs, so a change
anywhere upstream changes every key downstream and nothing else: editing a
hypothesis changes only its statistic steps and the report, never a score.
The runtime keys each step's work on one image by the same scheme, with the
content hashes of what it reads as inputs (spec/bundle.md).

Image counts are read cheaply from the manifests when they exist (rows of a
CSV, parquet metadata); otherwise they are unknown and `render_plan` prints
formulas. Counts never enter keys or the fingerprint.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scoreaudit import registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.demand import demand_of as demand
from scoreaudit.compiler.reads import reads
from scoreaudit.datafiles import folder_images, manifest_rows
from scoreaudit.gcpause import paused_gc
from scoreaudit.keys import KEY_ALGO, canonical_json as canonical, digest, hash_value, sha256_text
from scoreaudit.registry import reads_data

PLAN_SCHEMA_VERSION = 1

#: Who executes each step kind, and when (the plan's schema says so on `Step.kind`): the runtime's
#: executor walks the plan (`walk`); what it hands to None is another component's, from the bundle.
EXECUTED_BY: dict[str, str] = {
    "generate": "executor, before the walk: generated arms are made first, then every manifest is checked",
    "decode": "executor (an arm's per-image steps stream together, one ArmStage)",
    "region": "executor (ArmStage)", "operator": "executor (ArmStage)", "measure": "executor (ArmStage)",
    "score": "executor (ArmStage)",
    "probe": "executor, in plan order",
    "select": "statistics engine (best-of-n from the score tables), from the bundle's plan.json",
    "statistic": "statistics engine: one cell per step (plan.cells_of), from the bundle's plan.json",
    "report": "report renderer, from results.json",
}

StepKind = Literal["generate", "decode", "region", "operator", "measure", "score", "select", "probe", "statistic",
                   "report"]


class Step(BaseModel):
    """One unit of work; `reads`/`writes` are logical table names, `depends_on` step ids."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: StepKind = Field(description="Who runs it: " + "; ".join(f"{k}: {v}" for k, v in EXECUTED_BY.items()))
    key: str
    plugin: str | None = None
    version: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    arm: str | None = None
    # images this step processes (probe steps: images made, trajectories × (iterations + 1)); None: unknown
    images: int | None = None
    forward_passes: int | None = None  # scorer forward passes (score steps); None: unknown
    denoising_steps: int | None = None  # generate steps: images × steps; None: unknown
    depends_on: tuple[str, ...] = ()
    # what needs this step (cell ids, `validate m under o`, `operator o`, `probe p`, ...): never part of its key
    needed_by: tuple[str, ...] = ()


class ExecutionPlan(BaseModel):
    """Versioned, JSON-serialisable DAG of steps (topologically ordered)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = PLAN_SCHEMA_VERSION
    key_algo_version: int = KEY_ALGO
    fingerprint: str
    steps: list[Step]
    images: dict[str, int | None] = Field(default_factory=dict)  # arm -> images (None: unknown)
    variants_per_image: dict[str, int] = Field(default_factory=dict)  # arm -> scored variants per image
    forward_passes: dict[str, int | None] = Field(default_factory=dict)  # scorer -> total (None: unknown)

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)


# ---------------------------------------------------------------- image counts


def count_images(arm: ir.ArmIR, base: Path | None) -> int | None:
    """Images in an arm from its manifest (pairs: 2 per row), or None when it cannot be read cheaply."""
    if base is None:
        return None
    p = arm.call.params
    if registry.generated_arm(arm.call.plugin):  # prompts × seeds, when the prompts can be read here
        from scoreaudit.compiler.prompts import PromptsError, expand_prompts, seed_list

        try:
            return len(expand_prompts(p["prompts"], base)) * len(seed_list(p.get("seeds", 1)))
        except PromptsError:
            return None
    manifest = p.get("manifest")
    from scoreaudit.safeio import file_problem, inside

    try:
        if manifest:
            path = (base / manifest)
            if not inside(path, base) or file_problem(path) is not None:  # outside: never opened (E0707)
                return None
            rows = manifest_rows(path)
            if rows is None:
                return None
            return rows * 2 if arm.source == "pairs" else rows
        folder = base / p.get("folder", "")
        if not inside(folder, base) or not folder.is_dir():  # outside: never listed (E0707)
            return None
        return len(folder_images(folder))
    except (OSError, UnicodeDecodeError, ValueError, csv.Error):
        return None


# ---------------------------------------------------------------- building


_STEP_FIELDS = frozenset(Step.model_fields)


def _fast_step(values: dict[str, Any]) -> Step:
    """A Step from values the planner built itself (already valid): pydantic's model_construct
    without its per-field default handling, which dominated planning time on 8,000-step plans."""
    step = Step.__new__(Step)
    object.__setattr__(step, "__dict__", values)
    object.__setattr__(step, "__pydantic_fields_set__", _STEP_FIELDS)
    object.__setattr__(step, "__pydantic_extra__", None)
    object.__setattr__(step, "__pydantic_private__", None)
    return step


class _Builder:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.by_id: dict[str, Step] = {}
        self.keys: dict[str, str] = {}

    def add(self, id: str, kind: str, *, plugin: str | None = None, version: str | None = None,
            params: Any = None, depends_on: Sequence[str] = (), params_json: str | None = None,
            reads: tuple[str, ...] = (), writes: tuple[str, ...] = (), arm: str | None = None,
            images: int | None = None, forward_passes: int | None = None,
            denoising_steps: int | None = None, needed_by: tuple[str, ...] = ()) -> Step:
        deps = tuple(dict.fromkeys(depends_on))
        params = params if params is not None else {}
        keys = self.keys
        pj = params_json if params_json is not None else canonical(params)
        key = digest(kind, plugin, version, sha256_text(pj), hash_value(sorted([keys[d] for d in deps])))
        # built from checked IR, so validation is skipped (it dominated planning time on large specs)
        step = _fast_step({"id": id, "kind": kind, "key": key, "plugin": plugin, "version": version, "params": params,
                           "depends_on": deps, "reads": reads, "writes": writes, "arm": arm, "images": images,
                           "forward_passes": forward_passes,
                           "denoising_steps": denoising_steps, "needed_by": tuple(needed_by)})
        self.steps.append(step)
        self.by_id[id] = step
        keys[id] = key
        return step


def _region_order(ir_: ir.AuditIR) -> list[str]:
    done: list[str] = []

    def visit(n: str) -> None:
        if n in done:
            return
        for d in ir_.regions[n].depends_on:
            visit(d)
        done.append(n)

    for n in ir_.regions:
        visit(n)
    return done


def _mul(n: int | None, k: int) -> int | None:
    return None if n is None else n * k


def count_trajectories(probe: ir.ProbeIR, base: Path | None) -> int | None:
    """A probe's trajectories (prompts × seeds), or None when its prompts cannot be read here."""
    if base is None:
        return None
    from scoreaudit.compiler.prompts import PromptsError, expand_prompts, seed_list

    p = probe.call.params
    try:
        return len(expand_prompts(p["prompts"], base)) * len(seed_list(p.get("seeds", 1)))
    except PromptsError:
        return None


def build_plan(audit: ir.AuditIR, base_dir: str | Path | None = None) -> ExecutionPlan:
    """IR → ExecutionPlan. `base_dir` (default: the spec's folder) resolves manifest paths."""
    with paused_gc():
        return _build_plan(audit, base_dir)


def _build_plan(audit: ir.AuditIR, base_dir: str | Path | None) -> ExecutionPlan:
    if base_dir is None and audit.source_path:
        base_dir = Path(audit.source_path).parent
    base = Path(base_dir) if base_dir is not None else None
    b = _Builder()
    need = demand(audit)
    wanted = {w[1] for w in need.needs if len(w) > 1}  # arms some work reads (others are not opened)
    images = {name: count_images(arm, base) if name in wanted else None for name, arm in audit.arms.items()}
    regions = _region_order(audit)
    settings = audit.settings.model_dump(mode="json")
    stat_settings = {k: settings[k] for k in ("seed", "bootstrap", "scale", "test", "ci", "robustness", "max_groups")}
    measure_names = list(audit.measures)
    variants: dict[str, int] = {}
    # a measure step's params are the same for every (arm, operator): canonicalise them once
    measure_specs = []
    for m_name in measure_names + ["leakage"]:
        m = audit.measures.get(m_name)
        plugin, version, params = (m.call.plugin, m.call.version, m.call.params) if m else ("leakage", "1", {})
        params = {"name": m_name, "role": m.role if m else "builtin", **params}
        measure_specs.append((m_name, plugin, version, params, canonical(params), m.region if m is not None else None))

    for arm_name, arm in audit.arms.items():
        n = images[arm_name]
        decode_deps: list[str] = []
        scored = [s for s in audit.scorers if need.has(("score", arm_name, s, ir.ORIGINAL))]
        if not scored and not need.of("operator", arm_name) and not need.of("measure", arm_name):
            variants[arm_name] = 1
            continue  # nothing reads this arm: no step at all
        by_arm = tuple(dict.fromkeys(c for w in need.needs if len(w) > 1 and w[1] == arm_name for c in need.by(w)))
        if registry.generated_arm(arm.call.plugin):
            b.add(f"generate/{arm_name}", "generate", plugin=arm.call.plugin, version=arm.call.version,
                  params={"arm": arm_name, **arm.call.params}, reads=(f"pipeline:{arm.call.params['pipeline']}",),
                  writes=(f"generated/{arm_name}",), arm=arm_name, images=n,
                  denoising_steps=_mul(n, int(arm.call.params.get("steps", 30))), needed_by=by_arm)
            decode_deps = [f"generate/{arm_name}"]
        pixels = need.pixels(audit, arm_name)
        decode_params = {"arm": arm_name, **arm.call.params,
                         "on_error": arm.call.params.get("on_error") or audit.settings.on_error}
        if not pixels and arm.source == "images":  # every score is read from data: nothing is decoded
            decode_params["pixels"] = False
        b.add(f"decode/{arm_name}", "decode", plugin=arm.call.plugin, version=arm.call.version,
              params=decode_params,
              reads=(f"generated/{arm_name}",) if decode_deps else
              (f"manifest:{arm.call.params.get('manifest') or arm.call.params.get('folder')}",),
              writes=(f"images/{arm_name}",), arm=arm_name, images=n, depends_on=decode_deps, needed_by=by_arm)
        per_image = 1  # the original
        if arm.source == "images":
            for r in regions:
                if not need.has(("region", arm_name, r)):
                    continue
                reg = audit.regions[r]
                deps = [f"decode/{arm_name}"] + [f"region/{arm_name}/{d}" for d in reg.depends_on]
                b.add(f"region/{arm_name}/{r}", "region", plugin=_region_plugin(reg), version=_region_version(reg),
                      params={"region": r, "expr": reg.expr.model_dump(mode="json")},
                      reads=(f"images/{arm_name}",) + tuple(f"masks/{arm_name}/{d}" for d in reg.depends_on),
                      writes=(f"masks/{arm_name}/{r}",), arm=arm_name, images=n, depends_on=deps,
                      needed_by=need.by(("region", arm_name, r)))
            for o_name, op in audit.operators.items():
                if not need.has(("operator", arm_name, o_name)):
                    continue
                k = len(op.doses) - 1  # the identity dose is the original image
                if any(need.has(("score", arm_name, s, o_name)) for s in audit.scorers):
                    per_image += k
                deps = [f"decode/{arm_name}"] + ([f"region/{arm_name}/{op.region}"] if op.region else [])
                b.add(f"operator/{arm_name}/{o_name}", "operator", plugin=op.call.plugin, version=op.call.version,
                      params={"operator": o_name, **op.call.params, "doses": list(op.doses), "identity": op.identity,
                              "seed": audit.settings.seed},
                      reads=(f"images/{arm_name}",) + ((f"masks/{arm_name}/{op.region}",) if op.region else ()),
                      writes=(f"variants/{arm_name}/{o_name}",), arm=arm_name, images=_mul(n, k), depends_on=deps,
                      needed_by=need.by(("operator", arm_name, o_name)))
                for m_name, plugin, version, params, pjson, region in measure_specs:
                    if m_name != "leakage" and not need.has(("measure", arm_name, o_name, m_name)):
                        continue
                    mdeps = [f"operator/{arm_name}/{o_name}"]
                    if region:
                        mdeps.append(f"region/{arm_name}/{region}")
                    b.add(f"measure/{arm_name}/{o_name}/{m_name}", "measure", plugin=plugin, version=version,
                          params=dict(params), params_json=pjson,
                          reads=(f"variants/{arm_name}/{o_name}",), writes=(f"measures/{arm_name}/{o_name}/{m_name}",),
                          arm=arm_name, images=_mul(n, len(op.doses)), depends_on=mdeps,
                          needed_by=need.by(("measure", arm_name, o_name, m_name)) if m_name != "leakage"
                          else (f"operator {o_name}",))
            for m_name, m in audit.measures.items():  # unaltered measures (selections and cross-image cells read them)
                if not need.has(("measure", arm_name, ir.ORIGINAL, m_name)):
                    continue
                b.add(f"measure/{arm_name}/{ir.ORIGINAL}/{m_name}", "measure", plugin=m.call.plugin,
                      version=m.call.version, params={"name": m.name, "role": m.role, **m.call.params},
                      reads=(f"images/{arm_name}",), writes=(f"measures/{arm_name}/{ir.ORIGINAL}/{m.name}",),
                      arm=arm_name, images=n,
                      depends_on=[f"decode/{arm_name}"] + ([f"region/{arm_name}/{m.region}"] if m.region else []),
                      needed_by=need.by(("measure", arm_name, ir.ORIGINAL, m_name)))
        variants[arm_name] = per_image
        for s_name, sc in audit.scorers.items():
            if not need.has(("score", arm_name, s_name, ir.ORIGINAL)):
                continue
            runs = 0 if reads_data(sc.call.plugin) else 1  # scores read from data cost no forward pass
            b.add(f"score/{arm_name}/{s_name}/{ir.ORIGINAL}", "score", plugin=sc.call.plugin, version=sc.call.version,
                  params={"scorer": s_name, **sc.call.params, "operator": ir.ORIGINAL},
                  reads=(f"images/{arm_name}",), writes=(f"scores/{arm_name}/{s_name}/{ir.ORIGINAL}",),
                  arm=arm_name, images=n, forward_passes=_mul(n, runs), depends_on=[f"decode/{arm_name}"],
                  needed_by=need.by(("score", arm_name, s_name, ir.ORIGINAL)))
            if arm.source == "images":
                for o_name, op in audit.operators.items():
                    if not need.has(("score", arm_name, s_name, o_name)):
                        continue
                    k = len(op.doses) - 1
                    b.add(f"score/{arm_name}/{s_name}/{o_name}", "score", plugin=sc.call.plugin,
                          version=sc.call.version, params={"scorer": s_name, **sc.call.params, "operator": o_name},
                          reads=(f"variants/{arm_name}/{o_name}",), writes=(f"scores/{arm_name}/{s_name}/{o_name}",),
                          arm=arm_name, images=_mul(n, k), forward_passes=_mul(_mul(n, k), runs),
                          depends_on=[f"operator/{arm_name}/{o_name}"],
                          needed_by=need.by(("score", arm_name, s_name, o_name)))

    cells = audit.cells()
    for w in need.of("select"):
        _, arm_name, sel_name = w
        sel = audit.selections[sel_name]
        ops = [sel.operator] if sel.operator else [ir.ORIGINAL]
        sel_scorers = [s for s in audit.scorers if all(f"score/{arm_name}/{s}/{o}" in b.by_id for o in ops)]
        deps = [f"score/{arm_name}/{s}/{o}" for s in sel_scorers for o in ops]
        deps += [f"measure/{arm_name}/{o}/{sel.measure}" for o in ops if f"measure/{arm_name}/{o}/{sel.measure}" in b.by_id]
        b.add(f"select/{arm_name}/{sel_name}", "select", plugin="best_of", version="1",
              params={**sel.model_dump(mode="json"), "seed": audit.settings.seed, "max_groups": audit.settings.max_groups},
              reads=tuple(f"scores/{arm_name}/{s}/{o}" for s in sel_scorers for o in ops),
              writes=(f"selections/{arm_name}/{sel_name}",), arm=arm_name, depends_on=deps, needed_by=need.by(w))

    # optimisation probes (spec/probes.md): one step each; every iteration is one image, one denoising
    # step and one scorer forward pass with its backward pass
    for p_name, probe in audit.probes.items():
        n_traj = count_trajectories(probe, base)
        n_img = _mul(n_traj, int(probe.call.params.get("iterations", 50)) + 1)
        b.add(f"probe/{p_name}", "probe", plugin=probe.call.plugin, version=probe.call.version,
              params={"probe": p_name, **probe.call.params},
              reads=(f"pipeline:{probe.call.params['pipeline']}", f"scorer:{probe.scorer}"),
              writes=(f"probes/{p_name}",), images=n_img, forward_passes=n_img, denoising_steps=n_img,
              needed_by=need.by(("probe", p_name)))

    stat_ids = []
    claim_memo: dict[tuple[str, int], list] = {}
    refs_memo: dict[tuple[str, int], tuple[list[str], list[str], list[str]]] = {}
    for c in cells:
        refs = refs_memo.get((c.hypothesis, c.claim))
        if refs is None:  # the cells of one claim share its statistic
            refs = refs_memo[(c.hypothesis, c.claim)] = (
                _operators_of(c.statistic, audit), _measures_of(c.statistic, audit), _selections_of(c.statistic, audit))
        operators_, measures_, selections_ = refs
        deps = []
        for a, scorer in dict.fromkeys((a, s) for a, s, _ in c.parts()):
            deps.append(f"score/{a}/{scorer}/{ir.ORIGINAL}")
            for o in operators_:
                deps.append(f"score/{a}/{scorer}/{o}")
                if c.axis is not None and c.axis[1] == o and f"measure/{a}/{o}/{c.axis[0]}" in b.by_id:
                    deps.append(f"measure/{a}/{o}/{c.axis[0]}")
            for m in measures_:
                for o in operators_:
                    if f"measure/{a}/{o}/{m}" in b.by_id:
                        deps.append(f"measure/{a}/{o}/{m}")
            for sel in selections_:
                deps.append(f"select/{a}/{sel}")
        # a probe statistic, or the probe readings of a difference/ratio, read their probes' steps
        for stat in [c.statistic] + [r.statistic for r in ir.readings_of(c.statistic)]:
            probe_of = stat.params.get("probe")
            if isinstance(probe_of, str) and f"probe/{probe_of}" in b.by_id:
                deps.append(f"probe/{probe_of}")
        # a comparison's readings may read different operators on different arms: each arm has its own
        deps = [d for d in deps if d in b.by_id]
        sid = f"statistic/{c.id}"
        # the cells of one claim usually share its statistic, test and axis: canonicalise each once (a claim
        # over scorer pairs, `difference(θ for a, θ for b) for each scorer`, has one statistic per pair)
        memo = claim_memo.setdefault((c.hypothesis, c.claim), [])
        shared = next((sh for st, te, ax, sh in memo if st == c.statistic and te == c.test and ax == c.axis), None)
        if shared is None:
            shared_obj = {"statistic": c.statistic.model_dump(mode="json"), "test": c.test.model_dump(mode="json"),
                          "axis": list(c.axis) if c.axis else None, "settings": stat_settings}
            shared = (shared_obj, canonical(shared_obj))
            memo.append((c.statistic, c.test, c.axis, shared))
        own = {"cell": c.id, "hypothesis": c.hypothesis, "claim": c.claim, "scorer": c.scorer, "arm": c.arm,
               "arms": list(c.arms)}
        if c.where:  # a claim about one stratum (absent otherwise: the same keys as before strata claims)
            own["where"] = [list(w) for w in c.where]
        readings = ir.readings_of(c.statistic)
        if readings:  # difference/ratio: say how the two readings are resampled
            from scoreaudit.compiler.comparisons import static_pairing

            own["pairing"] = static_pairing(readings, audit)
        b.add(sid, "statistic", plugin=c.statistic.name, version=c.statistic.version,
              params={**own, **shared[0]}, params_json=canonical(own) + shared[1],
              reads=tuple(b.by_id[d].writes[0] for d in dict.fromkeys(deps)), writes=(f"cells/{c.id}",),
              arm=c.arm, depends_on=deps, needed_by=(c.id,))
        stat_ids.append(sid)
    report_params = {"report": audit.report.model_dump(mode="json"), "title": audit.settings.title,
                     "alpha": audit.settings.alpha, "correction": audit.settings.correction,
                     "min_real_clusters": audit.settings.min_real_clusters,
                     "max_leakage": audit.settings.max_leakage,
                     "validations": [v.model_dump(mode="json") for v in audit.validations]}
    report_deps = stat_ids + [s.id for s in b.steps if s.kind in ("measure", "score", "probe")]
    b.add("report", "report", plugin="report", version="1", params=report_params,
          reads=tuple(f"cells/{c.id}" for c in cells), writes=("results.json", "report"), depends_on=report_deps,
          needed_by=tuple(c.id for c in cells))

    forward: dict[str, int | None] = {}
    for s_name in audit.scorers:  # what the score steps cost (a probe's passes are its own step's)
        total: int | None = 0
        for s in b.steps:
            if s.kind == "score" and s.params.get("scorer") == s_name:
                total = None if total is None or s.forward_passes is None else total + s.forward_passes
        forward[s_name] = total
    read = {s.arm for s in b.steps if s.kind == "decode"}  # an arm nothing reads has no steps and no count
    images = {a: n for a, n in images.items() if a in read}
    variants = {a: k for a, k in variants.items() if a in read}
    fingerprint = hash_value({"schema": PLAN_SCHEMA_VERSION, "algo": KEY_ALGO,
                              "steps": [[s.id, s.key] for s in b.steps]})
    return ExecutionPlan(fingerprint=fingerprint, steps=b.steps, images=images,
                         variants_per_image=variants, forward_passes=forward)


def _region_plugin(reg: ir.RegionIR) -> str:
    return reg.expr.call.plugin if isinstance(reg.expr, ir.RegionCallIR) else "region_algebra"


def _region_version(reg: ir.RegionIR) -> str:
    return reg.expr.call.version if isinstance(reg.expr, ir.RegionCallIR) else "1"


def _reads_of(stat: ir.StatCallIR, audit: ir.AuditIR):
    """What the statistic reads (its registry entry), and for difference/ratio what both readings read."""
    out = reads(stat, audit)
    for r in ir.readings_of(stat):
        out = out + reads(r.statistic, audit)
    return out


def _selections_of(stat: ir.StatCallIR, audit: ir.AuditIR) -> list[str]:
    return list(_reads_of(stat, audit).selections)


def _measures_of(stat: ir.StatCallIR, audit: ir.AuditIR) -> list[str]:
    return list(dict.fromkeys(m for _, m in _reads_of(stat, audit).measures))


def _operators_of(stat: ir.StatCallIR, audit: ir.AuditIR) -> list[str]:
    """Operators whose scores the statistic reads (what its registry entry declares)."""
    return [o for o in _reads_of(stat, audit).operators if o in audit.operators]


# ---------------------------------------------------------------- walking the plan


PER_IMAGE: frozenset[str] = frozenset({"decode", "region", "operator", "measure", "score"})


@dataclass(frozen=True)
class ArmStage:
    """One arm's per-image steps (decode, regions, operators, measures, scores) in plan order.

    An executor streams each image of the arm through all of them, batch by
    batch (an image is decoded once, not once per step), so the walk hands
    them over together. What runs is read from these steps, never from the IR.
    """

    arm: str
    steps: tuple[Step, ...]

    def _named(self, kind: str, param: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.params[param] for s in self.steps if s.kind == kind))

    @property
    def regions(self) -> tuple[str, ...]:
        return self._named("region", "region")

    @property
    def operators(self) -> tuple[str, ...]:
        """Placebos included, plan order."""
        return self._named("operator", "operator")

    @property
    def measures(self) -> tuple[str, ...]:
        """Measures/covariates measured on the arm (the builtin leakage included)."""
        return self._named("measure", "name")

    @property
    def scorers(self) -> tuple[str, ...]:
        return self._named("score", "scorer")

    def scorers_under(self, operator: str) -> tuple[str, ...]:
        """Scorers the plan scores the operator's variants with on this arm (ir.ORIGINAL: the originals)."""
        return tuple(dict.fromkeys(s.params["scorer"] for s in self.steps
                                   if s.kind == "score" and s.params.get("operator") == operator))

    def measures_under(self, operator: str) -> tuple[str, ...]:
        """Measures/covariates (and the builtin leakage) the plan measures under the operator on this arm."""
        prefix = f"measure/{self.arm}/{operator}/"
        return tuple(dict.fromkeys(s.params["name"] for s in self.steps
                                   if s.kind == "measure" and s.id.startswith(prefix)))

    @property
    def pixels(self) -> bool:
        """Whether the arm's images are decoded (False: every score it needs is read from data)."""
        return all(s.params.get("pixels", True) is not False for s in self.steps if s.kind == "decode")

    @property
    def keys(self) -> tuple[str, ...]:
        """The steps' keys, sorted: what the arm's work is (a per-image memo is keyed on it)."""
        return tuple(sorted(s.key for s in self.steps))


ArmWork = ArmStage  # the older name


def stages(plan: ExecutionPlan) -> list[ArmStage | Step]:
    """The plan's steps in order, each arm's per-image steps gathered into one `ArmStage` where the
    first of them stands (they depend only on each other, so nothing moves across a dependency)."""
    per_arm: dict[str, list[Step]] = {}
    out: list[ArmStage | Step | str] = []
    for s in plan.steps:
        if s.kind in PER_IMAGE and s.arm is not None:
            if s.arm not in per_arm:
                per_arm[s.arm] = []
                out.append(s.arm)  # placeholder, filled below
            per_arm[s.arm].append(s)
        else:
            out.append(s)
    return [ArmStage(u, tuple(per_arm[u])) if isinstance(u, str) else u for u in out]


Handler = Callable[[Any], None] | None


def walk(plan: ExecutionPlan, handlers: Mapping[str, Handler]) -> None:
    """Hand every unit of `stages(plan)` to its handler, in plan order: `handlers["arm"]` gets each
    `ArmStage`, `handlers[kind]` every other step. A handler of None means "not this executor's
    work" (said explicitly); a kind without an entry is an error, so a new step kind cannot be
    skipped silently."""
    for unit in stages(plan):
        kind = "arm" if isinstance(unit, ArmStage) else unit.kind
        if kind not in handlers:
            raise KeyError(f"no handler for plan steps of kind {kind!r}")
        handler = handlers[kind]
        if handler is not None:
            handler(unit)


def cells_of(plan: ExecutionPlan) -> list[ir.CellIR]:
    """The cells the plan's statistic steps compute, from their parameters (what the statistics engine
    evaluates: a cell without a step is not computed), in plan order."""
    out = []
    for s in plan.steps:
        if s.kind != "statistic":
            continue
        p = s.params
        out.append(ir.CellIR(id=p["cell"], hypothesis=p["hypothesis"], claim=p["claim"], scorer=p["scorer"],
                             arm=p.get("arm"), arms=tuple(p.get("arms") or ()),
                             statistic=ir.StatCallIR.model_validate(p["statistic"]),
                             test=ir.TestIR.model_validate(p["test"]),
                             axis=tuple(p["axis"]) if p.get("axis") else None,
                             where=tuple(tuple(w) for w in p.get("where") or ())))
    return out


def arm_work(plan: ExecutionPlan) -> dict[str, ArmStage]:
    """arm -> its stage (regions, operators, measures and scorers, in plan order)."""
    return {u.arm: u for u in stages(plan) if isinstance(u, ArmStage)}


# ---------------------------------------------------------------- printing


def render_plan(plan: ExecutionPlan, status: dict | None = None) -> str:
    """A readable printout: one line per step (reads → writes), then the totals.

    `status` (runtime.cache_status.cache_status): each step says whether it is cached or to run,
    and a last section counts them.
    """
    lines = [f"execution plan (schema {plan.schema_version}, fingerprint {plan.fingerprint[:16]}), "
             f"{len(plan.steps)} steps"]
    kinds: dict[str, int] = {}
    for s in plan.steps:
        kinds[s.kind] = kinds.get(s.kind, 0) + 1
    lines.append("  " + ", ".join(f"{k}: {v}" for k, v in kinds.items()))
    lines.append("")
    width = max((len(s.id) for s in plan.steps), default=10)
    for s in plan.steps:
        extra = ""
        if s.kind == "probe":
            extra = f"  [{s.images if s.images is not None else '?'} images, each one step and one scorer pass]"
        elif s.denoising_steps is not None:
            extra = f"  [{s.images} images, {s.denoising_steps} denoising steps]"
        elif s.forward_passes is not None:
            extra = f"  [{s.forward_passes} forward passes]"
        elif s.images is not None:
            extra = f"  [{s.images} images]"
        reads = ", ".join(s.reads[:3]) + (f", … (+{len(s.reads) - 3} more)" if len(s.reads) > 3 else "")
        if status is not None:
            extra += f"  ({status['steps'].get(s.id, 'to run')})"
        if s.needed_by and s.kind not in ("statistic", "report"):  # a statistic step is its own cell
            shown = ", ".join(s.needed_by[:3]) + (f" (+{len(s.needed_by) - 3} more)" if len(s.needed_by) > 3 else "")
            extra += f"  <- {shown}"
        lines.append(f"{s.id:<{width}}  {s.key[:12]}  {reads or '-'} -> {', '.join(s.writes)}{extra}")
    paired = [s for s in plan.steps if s.kind == "statistic" and s.params.get("pairing")]
    if paired:
        lines.append("")
        lines.append("comparisons (how their two readings are resampled):")
        for s in paired:
            lines.append(f"  {s.params['cell']}: {s.params['pairing']}")
    lines.append("")
    lines.append("images per arm:")
    for arm, n in plan.images.items():
        lines.append(f"  {arm}: {n if n is not None else '?'} (scored variants per image: "
                     f"{plan.variants_per_image.get(arm, 1)})")
    lines.append("forward passes per scorer = Σ over the arms it scores of images × (1 original + Σ over the "
                 "operators it scores there of non-identity doses):")
    for scorer, total in plan.forward_passes.items():
        shown = f"{total}" if total is not None else "?"
        lines.append(f"  {scorer}: {shown}   ({_formula(plan, scorer)})")
    gen = [s for s in plan.steps if s.kind == "generate"]
    if gen:
        lines.append("generated images per arm (prompts × seeds; denoising steps = images × steps):")
        for s in gen:
            lines.append(f"  {s.arm}: {s.images if s.images is not None else '?'} images, "
                         f"{s.denoising_steps if s.denoising_steps is not None else '?'} denoising steps")
    probes = [s for s in plan.steps if s.kind == "probe"]
    if probes:
        lines.append("optimisation probes (trajectories = prompts × seeds; images = trajectories × (iterations + 1), "
                     "each one denoising step and one scorer forward + backward pass):")
        for s in probes:
            it = int(s.params.get("iterations", 50))
            traj = s.images // (it + 1) if s.images is not None else "?"
            lines.append(f"  {s.params['probe']}: {traj} trajectories × {it} iterations, "
                         f"{s.images if s.images is not None else '?'} images, scorer {s.reads[1][len('scorer:'):]}")
    unknown = [a for a, n in plan.images.items() if n is None]
    if unknown:
        lines.append(f"n(arm) is unknown until the manifests exist: {', '.join(unknown)}")
    if status is not None:
        cached = sum(1 for v in status["steps"].values() if v == "cached")
        lines.append(f"cache: {cached} steps cached, {len(status['steps']) - cached} to run; images with "
                     "every step cached: " + ", ".join(f"{a} {c}/{n if n is not None else '?'}"
                                                       for a, (c, n) in status["images"].items()))
        for key, what in (("generated", "generated images in the store"),
                          ("probes", "probe trajectories finished in the store")):
            if status.get(key):
                lines.append(f"{what}: " + ", ".join(f"{a} {c}/{n if n is not None else '?'}"
                                                     for a, (c, n) in status[key].items()))
    return "\n".join(lines)


def _formula(plan: ExecutionPlan, scorer: str) -> str:
    """`7·n(real) + 5·n(bodies)`: the scorer's variants per image on each arm it scores (0 for data-read scores)."""
    per_arm: dict[str, int] = {}
    doses = {(s.arm, s.params.get("operator")): len(s.params.get("doses", ())) - 1
             for s in plan.steps if s.kind == "operator"}
    for s in plan.steps:
        if s.kind == "score" and s.params.get("scorer") == scorer and s.arm is not None:
            op = s.params.get("operator")
            k = 1 if op == ir.ORIGINAL else doses.get((s.arm, op), 0)
            per_arm[s.arm] = per_arm.get(s.arm, 0) + (0 if s.forward_passes == 0 else k)
    return " + ".join(f"{k}·n({a})" for a, k in per_arm.items()) or "0"


def plan_schema() -> dict:
    return ExecutionPlan.model_json_schema()
