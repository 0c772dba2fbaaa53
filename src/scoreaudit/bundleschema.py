"""The JSON schemas of the bundle's files, built from the code that writes them.

results.json, run.json and manifest.json are written as dicts by the
statistics engine, the executor and reports/manifest.py; plan.json is the
ExecutionPlan model's dump (its schema is the model's: compiler/plan.py).
Every closed set here is read from its writer, never retyped: the settings
and a cell's test are the pydantic models `Settings` and `TestIR`, the
transfer classes `stats.transfer.CLASSES`, the exclusion stages
`runtime.tables.STAGES`, an arm's kind and source `ArmIR`'s literals, the
validation checks' comparisons `ValidationIR`'s. So a class the statistics
start to emit is in the schema the moment the schemas are regenerated, and
tests fail while the files in spec/ are stale:
`python -m scoreaudit.bundleschema` writes spec/results.schema.json,
spec/run.schema.json and spec/manifest.schema.json, and spec/tables.md
(every table's columns, types and units: `TABLES` here, the types from
`scoreaudit.bundletables`).

`validate(name, doc)` checks one file's document (the tests validate every
bundle they make as it is written: tests/conftest.py).
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: the outcome of a cell (spec/methods.md: hypothesis outcomes; stats/outcomes.py)
OUTCOMES = ("supported", "refuted", "inconclusive")
#: results.json["lock"]["status"] (reports/lock.py, stats/provenance.py)
LOCK_STATUSES = ("pre-registered", "not pre-registered", "deviation")
#: a verdict's conditions, in order (stats/verdicts.py; spec/methods.md: the auditability verdict)
CONDITIONS = ("pixel isolation", "measurement validity", "real-data arm")
VERDICTS = ("bias-measurement", "stress-test-only")
#: what a file read instead of computing provides (runtime/precomputed/)
PROVIDES = ("scores", "measures")
#: the statistics a `validate` line checks (compiler: E-codes of validate)
VALIDITY_STATISTICS = ("r2", "monotonic")


def _literal(model, field: str) -> list:
    """The values of a Literal field (a tuple of Literals: its items'), as the model declares them."""
    ann = model.model_fields[field].annotation
    while typing.get_origin(ann) is not typing.Literal:
        ann = typing.get_args(ann)[0]
    return list(typing.get_args(ann))


def _model(model, *, all_required: bool = True) -> dict:
    """A pydantic model's JSON schema as its `model_dump(mode="json")` writes it: every field present."""
    s = model.model_json_schema(mode="serialization")
    if s.get("$defs"):
        raise ValueError(f"{model.__name__}: nested models are not inlined here")
    s.pop("title", None)
    for p in s.get("properties", {}).values():
        p.pop("title", None)
    if all_required:
        s["required"] = list(model.model_fields)
    return s


def _ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


NUM = {"description": "A number, or null when undefined.", "type": ["number", "null"]}
PROB = {"description": "A probability (p, q), or null when undefined.", "type": ["number", "null"],
        "minimum": 0, "maximum": 1}


def _common_defs() -> dict:
    from scoreaudit.runtime.tables import STAGES

    return {
        "num": NUM, "prob": PROB,
        "command": {"description": "the command that reproduces the bundle, run from the spec's folder (shell "
                                   "words; the output folder relative to it, or OUT when it lies outside; "
                                   "runtime/reproduce.py). Absent in bundles written before it was recorded.",
                    "type": "string", "pattern": "^scoreaudit run "},
        "git": {"description": "the git checkout scoreaudit ran from: HEAD's commit and whether tracked files "
                               "differed from it (null: git could not say); null when not run from a checkout.",
                "type": ["object", "null"], "required": ["commit", "dirty"],
                "properties": {"commit": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
                               "dirty": {"type": ["boolean", "null"]}}},
        "count": {"type": "integer", "minimum": 0},
        "count_or_null": {"type": ["integer", "null"], "minimum": 0},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "sha256_or_null": {"anyOf": [_ref("sha256"), {"type": "null"}]},
        "timestamp_or_null": {"description": "ISO 8601 UTC, or null.", "type": ["string", "null"],
                              "format": "date-time"},
        "names": {"type": "array", "items": {"type": "string"}},
        "exclusion": {
            "type": "object", "required": ["arm", "image_id", "row", "stage", "reason"],
            "properties": {
                "arm": {"type": "string"},
                "image_id": {"description": "null when the manifest row had no id", "type": ["string", "null"]},
                "row": {"description": "1-based manifest data row, or null", "type": ["integer", "null"]},
                "stage": {"enum": list(STAGES)},
                "reason": {"type": "string", "minLength": 1}}},
        "precomputed": {
            "description": "A file read instead of computing (Addition P8b): a scores/measures table (rows, used) "
                           "or a manifest whose columns hold scores (source).",
            "type": "object", "required": ["file", "sha256", "provides", "arm", "names"],
            "anyOf": [{"required": ["rows", "used"]}, {"required": ["source"]}],
            "properties": {
                "file": {"type": "string", "minLength": 1},
                "sha256": _ref("sha256_or_null"),
                "provides": {"enum": list(PROVIDES)},
                "arm": {"description": "null: the audit block's table (rows carry their arm)",
                        "type": ["string", "null"]},
                "names": _ref("names"),
                "by_arm": {"type": "object", "additionalProperties": _ref("names")},
                "rows": _ref("count"), "used": _ref("count"), "source": {"type": "string"}}},
        "scorer_provenance": {
            "type": "object", "required": ["plugin", "version", "weights_sha256"],
            "properties": {
                "plugin": {"type": "string"}, "version": {"type": "string"},
                "weights_sha256": {"description": "null for a scorer without weights, or one computed nowhere "
                                                  "(every score precomputed)", "type": ["string", "null"]}}},
    }


def _cell() -> dict:
    from scoreaudit.compiler.ir import TestIR

    seed_row = {"type": "object", "required": ["seed", "estimate", "outcome"],
                "properties": {"seed": {"type": "integer"}, "estimate": {"type": ["number", "null"]},
                               "outcome": _ref("outcome")}}
    return {
        "description": "One hypothesis cell: a statistic on (scorer, arm), its interval, p, q (within the family) "
                       "and outcome.",
        "type": "object",
        "required": ["id", "hypothesis", "claim", "scorer", "arm", "arms", "statistic", "claim_text", "test",
                     "estimate", "ci_low", "ci_high", "ci_level", "se", "p", "q", "outcome", "undefined", "axis",
                     "detail", "sentence"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "hypothesis": {"type": "string", "minLength": 1},
            "claim": {"description": "index of the claim within its hypothesis", "type": "integer", "minimum": 0},
            "scorer": {"type": "string"},
            "arm": {"description": "null for cross-arm statistics (transfers)", "type": ["string", "null"]},
            "arms": {"description": "every arm the cell reads", **_ref("names")},
            "statistic": {"type": "string", "minLength": 1},
            "params": {"type": "object"},
            "inner": {"type": ["string", "null"]},
            "claim_text": {"type": "string"},
            "test": {"description": "How the cell's estimate is judged: compiler.ir.TestIR.model_dump()",
                     **_model(TestIR)},
            "estimate": NUM, "ci_low": NUM, "ci_high": NUM,
            "ci_level": {"description": "1 - 2 alpha: the two-sided interval whose tails are the one-sided tests at "
                                        "alpha (0, a point, when alpha is 0.5)",
                         "type": ["number", "null"], "minimum": 0, "exclusiveMaximum": 1},
            "se": {"description": "standard error of the estimate (the model's, the contrasts' over clusters, or "
                                  "the bootstrap replicates' standard deviation); null when undefined or the "
                                  "statistic has no interval",
                   **NUM},
            "p": PROB, "q": PROB,
            "outcome": _ref("outcome"),
            "method": {"type": "string"},
            "undefined": {"description": "why the estimate is undefined, or null", "type": ["string", "null"]},
            "axis": {"description": "[measure, operator] when the cell is about an attribute axis, else null",
                     "oneOf": [{"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                               {"type": "null"}]},
            "qualifier": {"description": "\"stress-test-only\" when the cell's axis verdict is a mechanistic stress "
                                         "test (the sentence says so), else null",
                          "enum": ["stress-test-only", None]},
            "interval": {"description": "interval family that decides the cell: t, bca, percentile, studentized, "
                                        "wald or none", "type": "string"},
            "where": {"description": "the cell's `where` selections, [column, level] each",
                      "type": "array", "items": {"type": "array", "items": {"type": "string"}}},
            "detail": {"description": "statistic-specific numbers (free form)", "type": "object"},
            "robustness": {
                "description": "present when settings.robustness > 1", "type": "object", "required": ["runs"],
                "properties": {"runs": {"type": "integer", "minimum": 1}, "same_sign_rate": PROB,
                               "same_outcome_rate": PROB}},
            "seed_robustness": {
                "description": "cells on generated arms with two or more generation seeds: the estimate on each "
                               "seed alone (METHODS: Robustness; spec/generation.md)",
                "type": "object", "required": ["seeds", "per_seed", "same_sign_rate", "same_outcome_rate"],
                "properties": {"seeds": {"type": "integer", "minimum": 2},
                               "per_seed": {"type": "array", "items": seed_row},
                               "same_sign_rate": PROB, "same_outcome_rate": PROB}},
            "sentence": {"description": "the cell as one sentence; the report shows this same text",
                         "type": "string"},
        },
    }


def _validation() -> dict:
    from scoreaudit.compiler.ir import ValidationIR

    row = typing.get_args(ValidationIR.model_fields["checks"].annotation)[0]  # (statistic, op, threshold)
    ops = sorted(typing.get_args(typing.get_args(row)[1]))
    check = {"description": "One check of a `validate` line: the statistic, its comparison and threshold, the "
                            "value on the arm and whether it held.",
             "type": "object", "required": ["statistic", "op", "threshold", "value", "held"],
             "properties": {"statistic": {"enum": list(VALIDITY_STATISTICS)}, "op": {"enum": ops},
                            "threshold": {"type": "number"}, "value": NUM, "held": {"type": "boolean"}}}
    return {"type": "object", "required": ["measure", "operator", "arm", "r2", "monotonic", "passed", "checks"],
            "properties": {"measure": {"type": "string"}, "operator": {"type": "string"}, "arm": {"type": "string"},
                           "r2": NUM, "monotonic": NUM, "slope": NUM, "n_images": _ref("count"),
                           "passed": {"type": "boolean"}, "checks": {"type": "array", "items": check}}}


def _sections() -> tuple[dict, dict]:
    from scoreaudit.stats.transfer import CLASSES

    rows = {
        "description": "A section: a list of rows (reports/adapt.py reads them).",
        "type": "array",
        "items": {"type": "object", "properties": {
            "scorer": {"type": "string"}, "arm": {"type": ["string", "null"]},
            "operator": {"type": ["string", "null"]}, "cell": {"type": "string"},
            "estimate": NUM, "ci_low": NUM, "ci_high": NUM, "ci_level": NUM, "p": PROB, "q": PROB,
            "undefined": {"type": ["string", "null"]}}}}

    def keyed(*required: str, **props) -> dict:
        items: dict[str, Any] = {"required": list(required)}
        if props:
            items["properties"] = props
        return {"$ref": "#/$defs/section_rows", "items": items}

    return rows, {
        "description": "Extra data for report sections; every entry optional (absent or empty: the report omits it).",
        "type": "object",
        "additionalProperties": _ref("section_rows"),
        "properties": {
            "curves": keyed("scorer", "arm", "operator"),
            "uniformity": keyed("scorer", "arm", "operator"),
            "placebo": keyed("scorer", "arm", "operator", "placebo"),
            "drift": keyed("selection", "scorer", "arm"),
            "transfer": keyed("cell", "scorer", **{"class": {"enum": list(CLASSES)}}),
            "strata": keyed("cell", "scorer"),
            "attribute": keyed("scorer", "arm"),
            "factors": keyed("scorer", "arm", "factor"),
            "ranks": keyed("scorer", "arm", "factor"),
            "agreement": keyed("scorer", "arm"),
            "pairs": keyed("scorer", "arm"),
            "validity": {"type": "array", "items": _ref("validation")},
        }}


def results_schema() -> dict:
    """spec/results.schema.json: results.json, schema_version 1 (stats/engine.py writes it)."""
    from scoreaudit.compiler.ir import ArmIR, Settings
    from scoreaudit.compiler.plan import ExecutionPlan

    section_rows, sections = _sections()
    plan_fields = ExecutionPlan.model_json_schema(mode="serialization")["properties"]

    def counts(field: str) -> dict:  # plan.json's own field: {name: count, or null when the plan cannot count}
        out = {k: v for k, v in plan_fields[field].items() if k != "title"}
        return {"description": "as plan.json: null where the plan could not count (e.g. a manifest it may not "
                               "read before the run)", **out}

    gen = {"type": "object", "required": ["images", "denoising_steps"],
           "properties": {"images": {"type": ["integer", "null"], "minimum": 0},
                          "denoising_steps": {"type": ["integer", "null"], "minimum": 0}}}
    probe = {"type": "object", "required": ["scorer", "images", "forward_passes", "denoising_steps"],
             "properties": {"scorer": {"type": ["string", "null"]},
                            **{k: {"type": ["integer", "null"], "minimum": 0}
                               for k in ("images", "forward_passes", "denoising_steps")}}}
    settings = _model(Settings)
    settings["description"] = "compiler.ir.Settings.model_dump(mode=\"json\"): the audit block with defaults filled in."
    defs = {
        **_common_defs(),
        "outcome": {"enum": list(OUTCOMES)},
        "lock": {
            "description": "lock.json copied verbatim (Addition RP1); without a lock.json the statistics write "
                           "status `not pre-registered` and the null fields.",
            "type": "object",
            "required": ["status", "path", "locked_at", "spec_sha256", "hypotheses_sha256", "first_score_at",
                         "deviations"],
            "properties": {
                "status": {"enum": list(LOCK_STATUSES)}, "detail": {"type": "string"},
                "path": {"type": ["string", "null"]},
                "locked_at": _ref("timestamp_or_null"), "first_score_at": _ref("timestamp_or_null"),
                "spec_sha256": _ref("sha256_or_null"), "hypotheses_sha256": _ref("sha256_or_null"),
                "spec_changed": {"type": "boolean"},
                "deviations": {"type": "array", "items": {
                    "type": "object", "required": ["hypothesis", "change"],
                    "properties": {"hypothesis": {"type": "string"},
                                   "change": {"enum": ["added", "removed", "changed"]}}}}}},
        "settings": settings,
        "environment": {
            "type": "object", "required": ["python", "platform", "device", "packages", "scorers"],
            "properties": {
                "python": {"type": "string"}, "platform": {"type": "string"}, "device": {"type": "string"},
                "packages": {"description": "{distribution name: version} of the packages installed",
                             "type": "object", "additionalProperties": {"type": "string"}},
                "scorers": {"type": "object", "additionalProperties": _ref("scorer_provenance")},
                "command": _ref("command"), "git": _ref("git")}},
        "arm": {"type": "object", "required": ["kind", "n_images", "n_clusters", "n_excluded"],
                "properties": {"kind": {"enum": _literal(ArmIR, "kind")},
                               "source": {"enum": _literal(ArmIR, "source")},
                               "n_images": _ref("count"), "n_clusters": _ref("count"), "n_excluded": _ref("count")}},
        "cell": _cell(),
        "hypothesis": {
            "type": "object", "required": ["name", "title", "cells"],
            "properties": {
                "name": {"type": "string", "minLength": 1}, "title": {"type": "string"},
                "text": {"type": ["string", "null"]},
                "cells": {"description": "the hypothesis's cells (the same objects as in `cells`)",
                          "type": "array", "items": _ref("cell")},
                "outcomes": {"type": "object", "properties": {o: _ref("count") for o in OUTCOMES},
                             "propertyNames": _ref("outcome")}}},
        "condition": {
            "type": "object", "required": ["name", "held", "value", "detail"],
            "properties": {
                "name": {"enum": list(CONDITIONS)}, "held": {"type": "boolean"},
                "value": {"description": "pixel isolation: the mean leakage share; measurement validity: "
                                         "{arm: {\"r2\": .., \"monotonic\": ..}}; real-data arm: the usable "
                                         "clusters; null when not measured",
                          "anyOf": [{"type": ["number", "null"]},
                                    {"type": "object", "additionalProperties": {
                                        "type": "object", "additionalProperties": NUM}}]},
                "detail": {"type": "string"}}},
        "verdict": {
            "description": "Auditability verdict of one (measure, operator) axis: bias-measurement exactly when "
                           "every condition held, else stress-test-only.",
            "type": "object", "required": ["measure", "operator", "verdict", "conditions"],
            "properties": {
                "measure": {"type": "string"}, "operator": {"type": "string"}, "verdict": {"enum": list(VERDICTS)},
                "failed": {"description": "names of the conditions that did not hold", **_ref("names")},
                "conditions": {"type": "array", "minItems": 1, "items": _ref("condition")}},
            "if": {"properties": {"verdict": {"const": "bias-measurement"}}},
            "then": {"properties": {"conditions": {"items": {"properties": {"held": {"const": True}}}}}},
            "else": {"properties": {"conditions": {"contains": {"required": ["held"],
                                                                "properties": {"held": {"const": False}}}}}}},
        "validation": _validation(),
        "section_rows": section_rows,
        "sections": sections,
    }
    return {
        "$schema": DRAFT,
        "$id": "https://scoreaudit.invalid/spec/results.schema.json",
        "title": "scoreaudit results.json, schema_version 1",
        "description": "Generated by `python -m scoreaudit.bundleschema` from the code that writes results.json "
                       "(spec/bundle.md). Closed where the writers' sets are closed (outcomes, verdicts, "
                       "conditions, lock status, exclusion stages, transfer classes, settings, tests); open "
                       "(additional properties allowed) elsewhere, because the contract grows additively and "
                       "free-form detail (cells[].detail, sections) differs per statistic. Numbers that are "
                       "undefined are null, never NaN.",
        "type": "object",
        "required": ["schema_version", "tool", "title", "spec", "lock", "settings", "environment", "plan", "arms",
                     "exclusions", "hypotheses", "cells", "verdicts", "validations", "sections", "tables",
                     "precomputed"],
        "properties": {
            "schema_version": {"const": 1},
            "tool": {"type": "object", "required": ["name", "version"],
                     "properties": {"name": {"const": "scoreaudit"}, "version": {"type": "string", "minLength": 1}}},
            "title": {"type": "string"},
            "spec": {"description": "The spec that ran: path as given, sha256 of the text, the text itself.",
                     "type": "object", "required": ["path", "sha256", "text"],
                     "properties": {"path": {"type": ["string", "null"]}, "sha256": _ref("sha256_or_null"),
                                    "text": {"type": ["string", "null"]}}},
            "lock": _ref("lock"), "settings": _ref("settings"), "environment": _ref("environment"),
            "plan": {
                "description": "Summary of plan.json. fingerprint is null only when the bundle has no plan.json "
                               "(bundles assembled by hand, e.g. in tests).",
                "type": "object", "required": ["fingerprint", "steps", "images", "forward_passes"],
                "properties": {
                    "fingerprint": {"type": ["string", "null"]}, "steps": {"type": "integer", "minimum": 0},
                    "images": counts("images"), "forward_passes": counts("forward_passes"),
                    "generation": {"description": "Only with generated arms: per arm, the images to generate and "
                                                  "their denoising steps.",
                                   "type": "object", "additionalProperties": gen},
                    "probes": {"description": "Only with optimisation probes: per probe, its scorer, the images it "
                                              "makes (trajectories x (iterations + 1)), the scorer passes and the "
                                              "denoising steps.", "type": "object", "additionalProperties": probe}}},
            "arms": {"description": "One entry per arm, keyed by arm name.", "type": "object",
                     "additionalProperties": _ref("arm")},
            "exclusions": {"type": "array", "items": _ref("exclusion")},
            "hypotheses": {"type": "array", "items": _ref("hypothesis")},
            "cells": {"type": "array", "items": _ref("cell")},
            "verdicts": {"type": "array", "items": _ref("verdict")},
            "validations": {"type": "array", "items": _ref("validation")},
            "sections": _ref("sections"),
            "warnings": {
                "description": "Run-time warnings about the statistics, e.g. W0421 (few clusters for scale: sd).",
                "type": "array",
                "items": {"type": "object", "required": ["code", "message"],
                          "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                                         "arm": {"type": ["string", "null"]}, "n_clusters": {"type": "integer"}}}},
            "tables": {"description": "Derived and runtime tables, {name: relative path}.", "type": "object",
                       "required": ["exclusions"],
                       "additionalProperties": {"type": "string", "pattern": "^tables/[^/]+\\.parquet$"}},
            "table_sha256": {"description": "Optional: {table name: sha256 of the file's bytes}; `scoreaudit "
                                            "verify` checks it when present.",
                             "type": "object", "additionalProperties": _ref("sha256")},
            "precomputed": {"type": "array", "items": _ref("precomputed")},
            "bundle": {"description": "The bundle folder as written (informational; api.run's return value, "
                                      "not the file).", "type": "string"},
        },
        "$defs": defs,
    }


def run_schema() -> dict:
    """spec/run.schema.json: run.json, the runtime's provenance (runtime/executor.py writes it)."""
    by_arm = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
    defs = _common_defs()
    return {
        "$schema": DRAFT,
        "$id": "https://scoreaudit.invalid/spec/run.schema.json",
        "title": "scoreaudit run.json",
        "description": "Generated by `python -m scoreaudit.bundleschema` (spec/bundle.md: run.json). Times are "
                       "ISO 8601 UTC.",
        "type": "object",
        "required": ["first_score_at", "device", "started_at", "finished_at", "cache", "batch_size", "scorers",
                     "counts", "warnings", "precomputed"],
        "properties": {
            "first_score_at": {"description": "when the earliest score this audit read was first computed (the "
                                              "lock check compares the lock with it); null when nothing was scored",
                               **defs["timestamp_or_null"]},
            "device": {"type": "string"},
            "started_at": {"type": "string", "format": "date-time"},
            "finished_at": {"type": "string", "format": "date-time"},
            "cache": {"description": "the cache file's path", "type": "string"},
            "batch_size": {"type": "integer", "minimum": 1},
            "scorers": {"type": "object", "additionalProperties": _ref("scorer_provenance")},
            "counts": {
                "type": "object",
                "required": ["images", "excluded", "rows", "steps", "corrupt_cache_values", "forward_passes"],
                "properties": {
                    "images": {"description": "usable images per arm", **by_arm},
                    "excluded": {"description": "excluded images per arm", **by_arm},
                    "rows": {"description": "rows per runtime table", **by_arm},
                    "steps": {"description": "{step kind: {status or reason: count}} from run.log",
                              "type": "object", "additionalProperties": by_arm},
                    "corrupt_cache_values": _ref("count"),
                    "forward_passes": {"description": "score steps computed per scorer", **by_arm}}},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "precomputed": {"type": "array", "items": _ref("precomputed")},
            "generated": {"description": "only with generated arms (runtime/generation.py)", "type": "object"},
            "probes": {"description": "only with optimisation probes (runtime/probe.py)", "type": "object"},
            "command": _ref("command"), "git": _ref("git"),
        },
        "$defs": defs,
    }


def manifest_schema() -> dict:
    """spec/manifest.schema.json: manifest.json (reports/manifest.py writes it)."""
    from scoreaudit.reports.manifest import MANIFEST

    return {
        "$schema": DRAFT,
        "$id": f"https://scoreaudit.invalid/spec/{MANIFEST.removesuffix('.json')}.schema.json",
        "title": f"scoreaudit {MANIFEST}",
        "description": "Generated by `python -m scoreaudit.bundleschema`: the sha256 of every other file of the "
                       "bundle, by its bundle-relative POSIX path (spec/bundle.md).",
        "type": "object",
        "required": ["algorithm", "files"],
        "additionalProperties": False,
        "properties": {
            "algorithm": {"const": "sha256"},
            "files": {"type": "object",
                      "propertyNames": {"pattern": "^(?!/)(?!.*(^|/)\\.\\.(/|$))[^\\\\]+$"},
                      "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
        },
    }


def plan_schema() -> dict:
    from scoreaudit.compiler.plan import plan_schema as of_model

    return of_model()


# ---------------------------------------------------------------- the tables' columns (spec/tables.md)

EST = "SD units when settings.scale is sd (the scorer's SD over the original images), else raw score units"
PROBABILITY = "probability, [0, 1]"
SHARE = "share, [0, 1]"
DOSE = "the operator's dose unit (`scoreaudit describe OPERATOR`)"
#: Columns that mean the same in every table they appear in: name -> (unit, what it is).
COLUMNS: dict[str, tuple[str, str]] = {
    "arm": ("", "arm name"), "image_id": ("", "image id (pairs: `PAIRID:preferred` / `PAIRID:other`)"),
    "scorer": ("", "scorer name"), "operator": ("", "operator or placebo name; `original` for the unaltered image"),
    "dose": (DOSE, "dose of the operator (the identity dose for `original`)"),
    "cell": ("", "the cell's id (cells.id)"), "cluster": ("", "cluster label (the image id when the arm has none)"),
    "measure": ("", "measure name"), "selection": ("", "selection name"), "placebo": ("", "placebo name"),
    "statistic": ("", "statistic name"), "by": ("", "the strata column"), "stratum": ("", "the stratum's level"),
    "estimate": (EST, "point estimate"), "ci_low": (EST, "lower end of the interval"),
    "ci_high": (EST, "upper end of the interval"), "ci_level": (SHARE, "the interval's coverage"),
    "p": (PROBABILITY, "p value of the cell's test"), "q": (PROBABILITY, "p adjusted within the family (settings.correction)"),
    "se": (EST, "standard error: the model's, the per-cluster contrasts' sd/√G, or the bootstrap replicates' "
                "sd; null when undefined or the cell has no interval (`interval` none)"),
    "n_clusters": ("count", "clusters used"), "n_images": ("count", "images used"), "n_groups": ("count", "groups used"),
    "n": ("count", "units used"), "undefined": ("", "why the value is undefined; null when it is defined"),
    "note": ("", "a remark the report prints"), "kind": ("", "the row's kind"),
}
#: Table -> (one row per ..., its columns: name -> (unit, what) where it differs from COLUMNS or is its own).
TABLES: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "images": ("usable image (runtime)", {
        "row": ("", "1-based data row of the manifest (the header is row 0)"),
        "content_hash": ("", "sha256 of the decoded RGB pixels and shape; null without image files"),
        "width": ("pixels", "decoded width; null without image files"), "height": ("pixels", "decoded height"),
        "side": ("", "`preferred` / `other` for pairs arms, else null"), "pair_id": ("", "pairs arms: the pair's id"),
        "*": ("", "every other manifest column under its own name (values as read; `m_` prefix for reserved names)")}),
    "scores": ("(arm, image, operator, dose, scorer) (runtime)", {
        "score": ("the scorer's own units (raw)", "the score; null when the image has no score there "
                                                  "(the reason is in exclusions)")}),
    "measures": ("(arm, image, operator, dose, measure or covariate) (runtime)", {
        "name": ("", "measure or covariate name (`leakage`: builtin)"),
        "role": ("", "`measure` | `covariate` | `builtin`"),
        "value": ("the measure's unit (`scoreaudit describe MEASURE`); leakage: share of out-of-region pixels changed",
                  "the value; null when undefined (e.g. an empty region)")}),
    "regions": ("(arm, image, region) (runtime)", {
        "region": ("", "region name"), "coverage": (SHARE, "share of the image's pixels in the region")}),
    "exclusions": ("excluded image or (image, step) (runtime and statistics)", {
        "image_id": ("", "image id; null when the row had no id"), "row": ("", "manifest data row, or null"),
        "stage": ("", "where it was lost: {stages}"),
        "reason": ("", "what a user reads")}),
    "cells": ("hypothesis cell (statistics); the same as results.json cells", {
        "id": ("", "`HYPOTHESIS/scorer/arm` (unique)"), "hypothesis": ("", "hypothesis name"),
        "claim": ("", "index of the claim within its hypothesis"), "arm": ("", "arm; null for cross-arm statistics"),
        "arms": ("", "every arm the cell reads (list)"), "params": ("", "the statistic's arguments (struct)"),
        "inner": ("", "the inner statistic of a wrapper (transfers, homogeneous, correlate)"),
        "claim_text": ("", "the claim as written"),
        "test": ("", "how the estimate is judged (struct: kind greater|less|equivalence|claim, threshold, "
                     "low, high, strict, text)"),
        "outcome": ("", "`supported` | `refuted` | `inconclusive`"), "method": ("", "the test that gives p, in words"),
        "axis": ("", "[measure, operator] when the cell is about an attribute axis (list), else null"),
        "qualifier": ("", "`stress-test-only` when the axis verdict is a stress test, else null"),
        "interval": ("", "interval family: t, bca, percentile, studentized, wald or none"),
        "where": ("", "the cell's `where` selections, [column, level] each (list of lists)"),
        "detail": ("as in results.json", "statistic-specific numbers (struct: one field per key of any cell's "
                                         "detail, null where a cell has none; nested dicts nested structs)"),
        "family": ("", "the multiplicity family the q is adjusted in"),
        "sentence": ("", "the cell as one sentence (the report's)")}),
    "contrasts": ("(cell, cluster): the per-cluster contrasts a cell's test used (statistics)", {
        "value": (EST, "the cluster's contrast")}),
    "curves": ("(arm, scorer, operator, dose): the fidelity curve (statistics)", {
        "mean": (EST, "mean score change from the original at this dose")}),
    "fi": ("(arm, scorer, operator): fidelity index and asymmetry (statistics)", {
        "placebo_of": ("", "the operator a placebo row mirrors; null for an operator"),
        "fi": (EST, "fidelity index"), "asymmetry": (EST, "asymmetry"),
        "asym_ci_low": (EST, "asymmetry's interval, lower"), "asym_ci_high": (EST, "asymmetry's interval, upper"),
        "asym_p": (PROBABILITY, "asymmetry's p"), "p_sided": ("", "the side p is for"),
        "asym_p_sided": ("", "the side asym_p is for"), "kind": ("", "`operator` | `placebo`")}),
    "placebo": ("(arm, scorer, operator, placebo): placebo ratio (statistics)", {
        "ratio": ("ratio", "fidelity index of the placebo over the operator's"),
        "fi_operator": (EST, "the operator's fidelity index"), "fi_placebo": (EST, "the placebo's fidelity index")}),
    "drift": ("(arm, scorer, selection): best-of-n selection drift (statistics)", {
        "net": ("the measure's unit", "net drift of the selected images' measure"),
        "p_greater_0": (PROBABILITY, "p of drift > 0"), "p_less_0": (PROBABILITY, "p of drift < 0"),
        "argmax_drift": ("the measure's unit", "drift of the scorer's choice"),
        "argmax_ci_low": ("the measure's unit", ""), "argmax_ci_high": ("the measure's unit", ""),
        "random_drift": ("the measure's unit", "drift of a random choice"),
        "random_ci_low": ("the measure's unit", ""), "random_ci_high": ("the measure's unit", ""),
        "directional": ("the measure's unit", "directional drift"),
        "directional_ci_low": ("the measure's unit", ""), "directional_ci_high": ("the measure's unit", ""),
        "fidelity_part": (SHARE, "share of the drift the fidelity curve explains")}),
    "transfer": ("transfers cell (statistics); the cell's detail, flat", {
        "source": ("", "the synthetic arm"), "target": ("", "the real arm"), "null": (EST, "the null value"),
        "margin": (EST, "equivalence margin"), "theta_source": (EST, "estimate on the source"),
        "theta_target": (EST, "estimate on the target"), "p_source": (PROBABILITY, ""),
        "p_target": (PROBABILITY, ""), "ratio": ("ratio", "theta_target / theta_source"),
        "ratio_ci_low": ("ratio", ""), "ratio_ci_high": ("ratio", ""), "ratio_ci_level": (SHARE, ""),
        "p_equivalence": (PROBABILITY, ""), "inverse_ratio": ("ratio", "theta_source / theta_target"),
        "difference": (EST, "theta_target - theta_source"), "q_source": (PROBABILITY, ""),
        "q_target": (PROBABILITY, ""), "class": ("", "{classes}"),
        "q_family": ("", "the family q_source and q_target are adjusted in"),
        "ci_source_low": (EST, ""), "ci_source_high": (EST, ""), "ci_target_low": (EST, ""),
        "ci_target_high": (EST, "")}),
    "strata": ("(homogeneous cell, stratum) (statistics)", {
        "pooled": (EST, "the pooled estimate"), "omnibus_p": (PROBABILITY, "p of the omnibus test"),
        "q": (PROBABILITY, "the cell's q")}),
    "validity": ("(validate line, arm) (statistics)", {
        "operator": ("", "the operator the measure is validated under"),
        "r2": (SHARE, "R² of the measure on the dose"), "monotonic": (SHARE, "share of monotonic images"),
        "slope": ("the measure's unit per dose unit", "slope of the measure on the dose"),
        "passed": ("", "every check held"),
        "checks": ("", "the line's checks (list of struct: statistic, op, threshold, value, held)")}),
    "probe": ("(probe, prompt, seed, iteration, measure, label) (runtime, optimisation probes only)", {
        "probe": ("", "probe name"), "prompt": ("", "the prompt"), "seed": ("", "generation seed"),
        "iteration": ("", "optimisation step (0: the unoptimised image)"),
        "measure": ("", "`score` for the scorer's own score, else the probe measure"),
        "label": ("", "clip_attribute's label; empty otherwise"),
        "value": ("the scorer's or the measure's unit", "the value; null when undefined")}),
    "probe_prompts": ("(probe, cluster, column): a probe prompt's attributes (runtime, probes only)", {
        "probe": ("", "probe name"), "prompt": ("", "the prompt"), "column": ("", "attribute name"),
        "value": ("", "attribute value (text)")}),
}


def _type_text(t) -> str:
    import pyarrow as pa

    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {_type_text(f.type)}" for f in t) + ">"
    if pa.types.is_list(t):
        return f"list<{_type_text(t.value_type)}>"
    return {"string": "text", "double": "float64", "int64": "int64", "bool": "bool"}.get(str(t), str(t))


def column_type(table: str, column: str) -> str:
    """The column's declared type as text; 'typed by what it holds' where the rows decide."""
    from scoreaudit import bundletables as bt

    fixed = {**bt.SCHEMAS, "probe": bt.PROBE_SCHEMA, "probe_prompts": bt.PROBE_PROMPTS_SCHEMA}
    if table in fixed:
        return _type_text(fixed[table].field(column).type) if column in fixed[table].names else "as read"
    t = bt.TABLE_TYPES.get(table, {}).get(column) or bt.COLUMN_TYPES.get(column)
    return _type_text(t) if t is not None else "typed by what it holds (struct, list or scalar)"


def table_columns(table: str) -> list[str]:
    from scoreaudit import bundletables as bt

    fixed = {**bt.SCHEMAS, "probe": bt.PROBE_SCHEMA, "probe_prompts": bt.PROBE_PROMPTS_SCHEMA}
    own = TABLES[table][1]
    names = list(fixed[table].names) if table in fixed else list(bt.CELL_COLUMNS) if table == "cells" else []
    return list(dict.fromkeys(names + [c for c in own if c != "*"] + (["*"] if "*" in own else [])))


def column_doc(table: str, column: str) -> tuple[str, str] | None:
    """(unit, what) of a table's column, or None when it is not documented."""
    own = TABLES.get(table, ("", {}))[1]
    return own.get(column) or COLUMNS.get(column)


def tables_reference() -> str:
    """spec/tables.md: every table's columns, types and units."""
    from scoreaudit.runtime.tables import STAGES
    from scoreaudit.stats.transfer import CLASSES

    out = ["# The bundle's tables: columns, types, units", "",
           "Generated by `python -m scoreaudit.bundleschema` from `scoreaudit.bundletables` (the types) and",
           "`scoreaudit.bundleschema.TABLES` (what each column is, in which unit); do not edit by hand. The",
           "layout of the bundle is spec/bundle.md. Every column has a real type, also when empty; nothing is",
           "JSON inside a string (a dict is a struct, a list a list); a missing or undefined value is null.",
           "A statistics table holds the columns its rows carry: those listed, when a row has them.", "",
           f"Estimates are in {EST}. A dose is in {DOSE}.", ""]
    for table, (row, _) in TABLES.items():
        out += [f"## `tables/{table}.parquet`", "", f"One row per {row}.", "",
                "| column | type | unit | what |", "|---|---|---|---|"]
        for c in table_columns(table):
            unit, what = column_doc(table, c) or ("", "")
            what = what.format(stages=" | ".join(f"`{x}`" for x in STAGES), classes=" | ".join(CLASSES))
            typ = "as read" if c == "*" else column_type(table, c)
            cells = ["(others)" if c == "*" else f"`{c}`", typ, unit, what]
            out.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
        out.append("")
    return "\n".join(out)


#: bundle file -> (the schema's file in spec/, its builder)
SCHEMAS = {
    "results.json": ("results.schema.json", results_schema),
    "run.json": ("run.schema.json", run_schema),
    "manifest.json": ("manifest.schema.json", manifest_schema),
    "plan.json": ("plan.schema.json", plan_schema),  # written by compiler/docs.py; validated here too
}


def errors(name: str, doc: Any) -> list[str]:
    """Every schema error of bundle file `name`'s document, as 'path: message' (empty: valid)."""
    v = _validator(name)  # jsonschema: the test extra
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}"
            for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


_VALIDATORS: dict[str, Any] = {}


def _validator(name: str):
    if name not in _VALIDATORS:
        from jsonschema import Draft202012Validator

        _VALIDATORS[name] = Draft202012Validator(SCHEMAS[name][1]())
    return _VALIDATORS[name]


def text(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(spec_dir: Path = SPEC_DIR) -> list[Path]:
    """Write the generated schemas and spec/tables.md into `spec_dir`; plan.schema.json is docs.py's."""
    out = []
    for name, (file, build) in SCHEMAS.items():
        if name == "plan.json":
            continue
        p = spec_dir / file
        p.write_text(text(build()), encoding="utf-8")
        out.append(p)
    p = spec_dir / "tables.md"
    p.write_text(tables_reference(), encoding="utf-8")
    out.append(p)
    return out


if __name__ == "__main__":  # pragma: no cover
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else SPEC_DIR):
        print(f"wrote {p}")
