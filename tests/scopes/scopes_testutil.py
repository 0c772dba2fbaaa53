"""The two-axis spec the scope tests share (a plain module; the folder has no __init__.py)."""

from __future__ import annotations

from scoreaudit import api

HEAD = '''audit "Two axes" { version: 1  seed: 1 }
scorer pick  = pickscore(prompt: "a photo of a person") on faces
scorer laion = laion_aesthetic()
scorer sharp = sharpness() on bodies label: "Sharpness"
arm faces  = images("data/faces", manifest: "data/faces.csv", kind: real, strata: race)
arm bodies = images("data/bodies", manifest: "data/bodies.csv", kind: synthetic, cluster: base_id)
arm wide   = pairs("data/pairs.csv", preferred: a, other: b)
region face  = face()
region skin  = skin(within: face)
region rest  = not skin
region torso = mask(column: torso_mask) on bodies
measure ita   = ita(region: skin) on faces
measure width = width_ratio(region: torso) on bodies
covariate deformation = warp_deformation() on bodies
operator light = lab_shift(channel: L, region: skin) doses -10, -5, 0, 5, 10 on faces
placebo light_rest = lab_shift(channel: L, region: rest) of light
operator widen = torso_warp(region: torso) doses 0.8, 0.9, 1.0, 1.1, 1.2 on bodies
validate ita under light: r2 >= 0.5
'''

CLAIMS = '''hypothesis H1 "Inverted U on real faces" {
  fidelity_index(light) > 0 on faces for each scorer
}
hypothesis B1 "Stress test: torso warps" {
  abs(attribute_effect(widen, measure: width, controlling: deformation)) < 0.05 on bodies for each scorer
}
hypothesis P1 "Pairs" {
  pairwise_accuracy() > 0.5 on wide
}
'''


def check(source: str):
    return api.check("scopes.audit", source=source, tables=False)


def diags(source: str, code: str) -> list:
    """The diagnostics of `code`, as (line, column, message, help)."""
    return [(d.span.line, d.span.column, d.message, d.help) for d in check(source).diagnostics if d.code == code]


def position(source: str, needle: str, line_of: str | None = None) -> tuple[int, int]:
    """(line, column) of `needle`, searched from the start of the first line holding `line_of` (1-based)."""
    start = source.index(line_of) if line_of else 0
    at = source.index(needle, start)
    line = source.count("\n", 0, at) + 1
    return line, at - (source.rfind("\n", 0, at) + 1) + 1
