"""Fixture results bundles shaped like the three normative examples (spec/bundle.md).

These stand in for `scoreaudit.stats.engine.analyse` output so the report can be
built and tested before (and independently of) the statistics. Values are drawn
from a seeded generator and are internally consistent (outcomes follow the CI
against the threshold, verdict conditions follow their values), but they are
fixtures: no test treats them as statistical truth.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

SCORERS_SKIN = {
    "laion": ("laion_aesthetic", {}),
    "pick": ("pickscore", {"prompt": "a photo of a person"}),
    "ir": ("image_reward", {"prompt": "a photo of a person"}),
    "hps": ("hpsv2", {"version": "2.1", "prompt": "a photo of a person"}),
}


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _outcome(kind: str, lo: float, hi: float, q: float, alpha: float, t=None, low=None, high=None) -> str:
    if q is not None and q <= alpha:
        return "supported"
    if kind == "greater" and hi <= t:
        return "refuted"
    if kind == "less" and lo >= t:
        return "refuted"
    if kind == "equivalence" and (hi <= low or lo >= high):
        return "refuted"
    return "inconclusive"


class _Builder:
    """Accumulates cells, sections and an IR-shaped ir.json for one fixture."""

    def __init__(self, example: str, seed: int, alpha: float = 0.05):
        self.rng = np.random.default_rng(seed)
        self.example = example
        self.alpha = alpha
        self.cells: list[dict] = []
        self.ir_hyps: dict[str, dict] = {}
        self.sections: dict[str, list] = {}

    def cell(self, hyp: str, title: str, scorer: str, arm: str | None, statistic: str, claim_text: str,
             est: float, se: float, test: dict, arms=(), p=None, detail=None, outcome=None) -> dict:
        lo, hi = est - 1.96 * se, est + 1.96 * se
        if p is None:
            from scipy import stats

            if test["kind"] == "greater":
                p = float(stats.norm.sf((est - test["threshold"]) / se))
            elif test["kind"] == "less":
                p = float(stats.norm.cdf((est - test["threshold"]) / se))
            elif test["kind"] == "equivalence":
                p = max(float(stats.norm.sf((est - test["low"]) / se)), float(stats.norm.cdf((est - test["high"]) / se)))
            else:
                p = None
        cid = f"{hyp}/{scorer}/{arm or '-'.join(arms)}"
        c = {
            "id": cid, "hypothesis": hyp, "claim": 0, "scorer": scorer, "arm": arm,
            "arms": list(arms or ([arm] if arm else [])), "statistic": statistic, "claim_text": claim_text,
            "estimate": est, "ci_low": lo, "ci_high": hi, "ci_level": 0.95, "p": p, "q": None,
            "outcome": outcome, "detail": detail or {}, "sentence": "",
            "test": test,
        }
        self.cells.append(c)
        h = self.ir_hyps.setdefault(hyp, {"name": hyp, "title": title, "text": claim_text, "cells": []})
        h["cells"].append({"id": cid, "hypothesis": hyp, "scorer": scorer, "arm": arm, "test": {**test, "text": claim_text}})
        return c

    def finish_q(self) -> None:
        from scipy.stats import false_discovery_control

        ps = [c for c in self.cells if c["p"] is not None]
        qs = false_discovery_control([c["p"] for c in ps], method="bh") if ps else []
        for c, q in zip(ps, qs):
            c["q"] = float(q)
        for c in self.cells:
            if c["outcome"] is None:
                t = c["test"]
                lo2 = c["estimate"] - 1.645 * (c["estimate"] - c["ci_low"]) / 1.96
                hi2 = c["estimate"] + 1.645 * (c["ci_high"] - c["estimate"]) / 1.96
                c["outcome"] = _outcome(t["kind"], lo2, hi2, c["q"], self.alpha, t.get("threshold"), t.get("low"), t.get("high"))

    def curve(self, scorer, arm, operator, doses, identity, fi, asym, noise, placebo_of=None):
        u = (np.asarray(doses) - identity) / max(abs(np.asarray(doses) - identity))
        pts = []
        for d, ui in zip(doses, u):
            mean = 0.0 if d == identity else float(-fi * 1.6 * ui**2 + asym * ui + self.rng.normal(0, noise / 4))
            half = 0.0 if d == identity else float(noise * (0.6 + abs(ui)))
            pts.append({"dose": float(d), "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": 400})
        self.sections.setdefault("curves", []).append(
            {"scorer": scorer, "arm": arm, "operator": operator, "placebo_of": placebo_of,
             "identity": float(identity), "unit": "sd", "points": pts})


def _write_bundle(out: Path, spec_name: str, b: _Builder, results: dict, exclusions: list[dict],
                  ir_extra: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(exist_ok=True)
    spec_text = (EXAMPLES / spec_name).read_text(encoding="utf-8")
    (out / "spec.audit").write_text(spec_text, encoding="utf-8")
    ir = {"ir_version": 1, "settings": results["settings"], "hypotheses": list(b.ir_hyps.values()), **ir_extra,
          "source_hash": _sha(spec_text)}
    (out / "ir.json").write_text(json.dumps(ir, indent=1), encoding="utf-8")
    ex = pd.DataFrame(exclusions, columns=["arm", "image_id", "row", "stage", "reason"])
    ex["row"] = ex["row"].astype("Int64")
    ex.to_parquet(out / "tables" / "exclusions.parquet", index=False)
    cells_df = pd.DataFrame([{k: c[k] for k in ("id", "hypothesis", "scorer", "arm", "statistic", "estimate",
                                                  "ci_low", "ci_high", "p", "q", "outcome")} for c in b.cells])
    cells_df.to_parquet(out / "tables" / "cells.parquet", index=False)
    results.update({
        "spec": {"path": f"examples/{spec_name}", "sha256": _sha(spec_text), "text": spec_text},
        "exclusions": exclusions,
        "cells": b.cells,
        "sections": b.sections,
        "tables": {"exclusions": "tables/exclusions.parquet", "cells": "tables/cells.parquet"},
        "precomputed": [],
    })
    hyps = []
    for name, h in b.ir_hyps.items():
        hyps.append({"name": name, "title": h["title"], "cells": [c for c in b.cells if c["hypothesis"] == name]})
    results["hypotheses"] = hyps
    (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=False), encoding="utf-8")
    return out


def _env(scorers: dict) -> dict:
    return {
        "python": "3.12.8", "platform": "Linux-6.1-x86_64", "device": "cpu (2 cores)",
        "packages": {"numpy": "2.3.1", "scipy": "1.16.0", "statsmodels": "0.14.4", "pandas": "2.3.0",
                     "torch": "2.14.1", "open_clip_torch": "2.32.0", "scoreaudit": "0.1.0"},
        "scorers": {n: {"plugin": p, "version": "1", "weights_sha256": _sha(n + "weights")} for n, (p, _) in scorers.items()},
    }


def _lock(status: str, spec_text_sha: str) -> dict:
    base = {"status": status, "path": None, "locked_at": None, "first_score_at": "2026-11-29T10:14:03Z",
            "spec_sha256": None, "hypotheses_sha256": None, "spec_changed": False, "deviations": []}
    if status == "not pre-registered":
        base["detail"] = "No lock file was found next to the spec: the hypotheses were not pre-registered."
        return base
    base.update({"path": "skin_tone.audit.lock", "locked_at": "2026-11-28T08:00:00Z",
                 "spec_sha256": spec_text_sha, "hypotheses_sha256": _sha("hyps")})
    if status == "deviation":
        base["deviations"] = [{"hypothesis": "H2", "change": "changed"}, {"hypothesis": "H7", "change": "added"}]
        base["detail"] = "The hypotheses differ from the lock written 2026-11-28T08:00:00Z."
    else:
        base["detail"] = "Locked 2026-11-28T08:00:00Z, before the first score (2026-11-29T10:14:03Z)."
    return base


# ---------------------------------------------------------------- skin tone (example 1)


def skin_bundle(out: Path, lock_status: str = "pre-registered", scorers: dict | None = None,
                arms_n: tuple[int, int] = (412, 600)) -> Path:
    """Example 1: 4 scorers × 2 arms × 3 operators + placebo, every section the spec implies."""
    scorers = scorers or SCORERS_SKIN
    b = _Builder("skin_tone", 20261129)
    rng = b.rng
    light = [-15.0, -10.0, -5.0, 0.0, 5.0, 10.0, 15.0]
    hue = [-20.0, -10.0, 0.0, 10.0, 20.0]
    blur = [0.0, 1.0, 2.0, 4.0]
    arms = {"real": "real", "synthetic": "synthetic"}
    truth = {s: (rng.uniform(0.05, 0.3), rng.uniform(-0.08, 0.08)) for s in scorers}
    for s, (fi, asym) in truth.items():
        for arm in arms:
            k = 1.0 if arm == "real" else 1.4
            b.curve(s, arm, "light", light, 0.0, fi * k, asym * k, 0.03)
            b.curve(s, arm, "light_rest", light, 0.0, fi * k * 0.8, asym * 0.2, 0.03, placebo_of="light")
            b.curve(s, arm, "blur", blur, 0.0, fi * 2, 0.0, 0.04)
            b.curve(s, arm, "hue", hue, 0.0, fi * 0.5, asym * 0.3, 0.03)
    # hypotheses
    for s, (fi, asym) in truth.items():
        for arm in arms:
            k = 1.0 if arm == "real" else 1.4
            b.cell("H1", "Scorers prefer the unaltered image (inverted U)", s, arm, "fidelity_index",
                   "fidelity_index(light) > 0", fi * k, 0.02, {"kind": "greater", "threshold": 0.0})
    for s, (fi, asym) in truth.items():
        b.cell("H2", "No directional skin-lightness preference on real faces", s, "real", "asymmetry",
               "abs(asymmetry(light)) < 0.05", asym, 0.015, {"kind": "equivalence", "low": -0.05, "high": 0.05})
    for s, (fi, asym) in truth.items():
        ratio = 1.25 + rng.normal(0, 0.2)
        c = b.cell("H3", "The penalty is not specific to skin pixels", s, "real", "placebo_ratio",
                   "placebo_ratio(light, light_rest) within [0.5, 2]", ratio, 0.18,
                   {"kind": "equivalence", "low": 0.5, "high": 2.0})
        undefined = "the placebo's FI CI contains 0" if s == "ir" else None
        if undefined:
            c.update({"estimate": None, "ci_low": None, "ci_high": None, "p": None, "outcome": "inconclusive",
                      "detail": {"undefined": undefined}})
        for arm in arms:
            r = None if undefined and arm == "real" else ratio * (1.0 if arm == "real" else 1.1)
            b.sections.setdefault("placebo", []).append({
                "scorer": s, "arm": arm, "operator": "light", "placebo": "light_rest", "ratio": r,
                "ci_low": None if r is None else r - 0.35, "ci_high": None if r is None else r + 0.35,
                "fi_operator": fi, "fi_placebo": fi * 0.8 if r else 0.01,
                "fi_placebo_ci_low": fi * 0.6 if r else -0.02, "fi_placebo_ci_high": fi if r else 0.04,
                "undefined": undefined if r is None else None})
    for s, (fi, asym) in truth.items():
        src, tgt = asym * 1.5, asym
        cls = "consistent" if abs(asym) > 0.04 else ("null" if abs(asym) < 0.02 else "attenuation")
        outcome = {"consistent": "supported", "null": "inconclusive"}.get(cls, "refuted")
        b.cell("H4", "Synthetic findings transfer to real faces", s, None, "transfers",
               "transfers(asymmetry(light), from: synthetic, to: real)", tgt - src, 0.02,
               {"kind": "claim"}, arms=("synthetic", "real"), detail={"class": cls}, outcome=outcome)
        b.sections.setdefault("transfer", []).append({
            "cell": f"H4/{s}/synthetic-real", "scorer": s, "statistic": "asymmetry(light)", "source": "synthetic",
            "target": "real", "source_estimate": src, "source_ci_low": src - 0.03, "source_ci_high": src + 0.03,
            "source_q": 0.0004 if abs(src) > 0.03 else 0.21, "target_estimate": tgt, "target_ci_low": tgt - 0.025,
            "target_ci_high": tgt + 0.025, "target_q": 0.002 if abs(tgt) > 0.03 else 0.4,
            "difference": tgt - src, "difference_ci_low": tgt - src - 0.04, "difference_ci_high": tgt - src + 0.04,
            "difference_p": 0.03, "class": cls})
    for s, (fi, asym) in truth.items():
        net = rng.normal(0.4, 0.5)
        b.cell("H5", "Best-of-4 selection does not move skin lightness", s, "real", "net_drift",
               "abs(net_drift(best4)) < 1.0", net, 0.2, {"kind": "equivalence", "low": -1.0, "high": 1.0})
        for arm in arms:
            a = net + rng.normal(0, 0.1)
            r = a - net
            b.sections.setdefault("drift", []).append({
                "selection": "best4", "scorer": s, "arm": arm, "n": 4, "measure": "ita", "operator": "light",
                "unit": "degrees", "groups": 50 * (412 if arm == "real" else 120),
                "argmax": {"estimate": a, "ci_low": a - 0.4, "ci_high": a + 0.4},
                "random": {"estimate": r, "ci_low": r - 0.2, "ci_high": r + 0.2},
                "net": {"estimate": net, "ci_low": net - 0.39, "ci_high": net + 0.39, "p": 0.004}})
    levels = ["Black", "East Asian", "Indian", "Latino Hispanic", "Middle Eastern", "Southeast Asian", "White"]
    for s, (fi, asym) in truth.items():
        p = float(rng.uniform(0.001, 0.6))
        c = b.cell("H6", "Fidelity penalty does not differ across populations", s, "real", "homogeneous",
                   "homogeneous(fidelity_index(light), by: race)", fi, 0.02, {"kind": "claim"},
                   p=p, detail={"test": "kruskal"}, outcome=None)
        c["outcome"] = "supported" if p > 0.05 else "refuted"
        strata = [{"level": lv, "estimate": fi + rng.normal(0, 0.03), "n_clusters": int(rng.integers(40, 80))}
                  for lv in levels]
        for st in strata:
            st["ci_low"], st["ci_high"] = st["estimate"] - 0.05, st["estimate"] + 0.05
        b.sections.setdefault("strata", []).append({
            "cell": c["id"], "scorer": s, "arm": "real", "statistic": "fidelity_index(light)", "by": "race",
            "test": "kruskal", "omnibus_statistic": float(rng.uniform(2, 20)), "p": p, "q": None,
            "pooled": {"estimate": fi, "ci_low": fi - 0.02, "ci_high": fi + 0.02}, "strata": strata,
            "largest_contrast": {"a": levels[0], "b": levels[-1], "difference": 0.061, "p": 0.012}})
    for s, (fi, asym) in truth.items():
        for arm in arms:
            for op, doses in (("light", light), ("light_rest", light), ("hue", hue)):
                f = fi * (0.8 if op == "light_rest" else 0.5 if op == "hue" else 1.0)
                b.sections.setdefault("uniformity", []).append({
                    "scorer": s, "arm": arm, "operator": op, "placebo_of": "light" if op == "light_rest" else None,
                    "fi": f, "fi_ci_low": f - 0.03, "fi_ci_high": f + 0.03, "fi_p": 1e-5 if f > 0.06 else 0.03,
                    "asymmetry": asym, "asym_ci_low": asym - 0.02, "asym_ci_high": asym + 0.02,
                    "asym_p": 0.001 if abs(asym) > 0.04 else 0.3, "n_clusters": 412 if arm == "real" else 120})
    b.finish_q()
    for st in b.sections["strata"]:
        st["q"] = next(c["q"] for c in b.cells if c["id"] == st["cell"])
    exclusions = [
        {"arm": "real", "image_id": "img_0042", "row": 43, "stage": "decode", "reason": "truncated JPEG (cannot decode)"},
        {"arm": "real", "image_id": "img_0107", "row": 108, "stage": "region", "reason": "no face detected"},
        {"arm": "real", "image_id": "img_0311", "row": 312, "stage": "region", "reason": "skin region is empty (0 pixels)"},
        {"arm": "synthetic", "image_id": None, "row": 77, "stage": "manifest", "reason": "missing image id in row 77"},
        {"arm": "synthetic", "image_id": "p017_s3", "row": 86, "stage": "decode", "reason": "file not found: data/synthetic/p017_s3.png"},
    ]
    results = {
        "schema_version": 1, "tool": {"name": "scoreaudit", "version": "0.1.0"},
        "title": "Skin-lightness audit of four preference scorers",
        "lock": _lock(lock_status, _sha((EXAMPLES / "skin_tone.audit").read_text())),
        "settings": {"title": "Skin lightness: fidelity preference or demographic preference?", "version": 1,
                     "seed": 20261129, "alpha": 0.05, "correction": "bh", "bootstrap": 10000, "scale": "sd",
                     "test": "ttest", "min_real_clusters": 100, "max_leakage": 0.001},
        "environment": _env(scorers),
        "plan": {"fingerprint": _sha("plan-skin")[:16], "steps": 1844, "images": {"real": arms_n[0], "synthetic": arms_n[1]},
                 "forward_passes": {s: (arms_n[0] + arms_n[1]) * 21 for s in scorers}},
        "arms": {"real": {"kind": "real", "n_images": arms_n[0], "n_clusters": arms_n[0], "n_excluded": 3},
                 "synthetic": {"kind": "synthetic", "n_images": arms_n[1], "n_clusters": 120, "n_excluded": 2}},
        "verdicts": [
            {"measure": "ita", "operator": "light", "verdict": "bias-measurement", "conditions": [
                {"name": "pixel isolation", "held": True, "value": 0.00021,
                 "detail": "lab_shift is pixel-local; mean leakage 0.021% ≤ 0.1%"},
                {"name": "measurement validity", "held": True, "value": 0.93,
                 "detail": "validate ita under light passed on real (r² 0.93, monotonic 0.99)"},
                {"name": "real-data arm", "held": True, "value": 412,
                 "detail": "arm real: 412 usable clusters ≥ 100"}]}],
        "validations": [
            {"measure": "ita", "operator": "light", "arm": arm, "r2": r2, "monotonic": mono, "passed": True,
             "checks": [{"name": "r2", "op": ">=", "threshold": 0.5, "value": r2, "held": True},
                        {"name": "monotonic", "op": ">=", "threshold": 0.95, "value": mono, "held": True}]}
            for arm, r2, mono in (("real", 0.93, 0.99), ("synthetic", 0.91, 0.985))],
    }
    ir_extra = {"operators": {
        "light": {"name": "light", "call": {"plugin": "lab_shift", "version": "1", "params": {"channel": "L", "region": "skin"}},
                  "doses": light, "identity": 0.0, "pixel_local": True, "placebo_of": None, "symmetric": True},
        "light_rest": {"name": "light_rest", "call": {"plugin": "lab_shift", "version": "1", "params": {"channel": "L", "region": "rest"}},
                       "doses": light, "identity": 0.0, "pixel_local": True, "placebo_of": "light", "symmetric": True},
        "blur": {"name": "blur", "call": {"plugin": "gaussian_blur", "version": "1", "params": {"region": "skin"}},
                 "doses": blur, "identity": 0.0, "pixel_local": True, "placebo_of": None, "symmetric": False},
        "hue": {"name": "hue", "call": {"plugin": "hue_rotate", "version": "1", "params": {"region": "skin"}},
                "doses": hue, "identity": 0.0, "pixel_local": True, "placebo_of": None, "symmetric": True}},
        "report": {"title": "Skin-lightness audit of four preference scorers", "formats": ["html", "pdf"]}}
    return _write_bundle(out, "skin_tone.audit", b, results, exclusions, ir_extra)


# ---------------------------------------------------------------- body warp (example 2)


def body_bundle(out: Path) -> Path:
    b = _Builder("body_warp", 7)
    doses = [0.8, 0.9, 1.0, 1.1, 1.2]
    b.curve("laion", "bodies", "widen", doses, 1.0, 0.22, -0.05, 0.03)
    b.cell("B1", "Penalty tracks deformation, not width", "laion", "bodies", "attribute_effect",
           "abs(attribute_effect(widen, measure: width, controlling: deformation)) < 0.05",
           0.012, 0.011, {"kind": "equivalence", "low": -0.05, "high": 0.05})
    b.sections["attribute"] = [{
        "scorer": "laion", "arm": "bodies", "operator": "widen", "measure": "width", "controlling": ["deformation"],
        "n_rows": 960, "n_clusters": 60, "terms": [
            {"name": "width", "role": "measure", "beta": 0.012, "se": 0.011, "ci_low": -0.0096, "ci_high": 0.0336, "p": 0.28},
            {"name": "deformation", "role": "covariate", "beta": -1.84, "se": 0.21, "ci_low": -2.25, "ci_high": -1.43, "p": 2e-9}]}]
    b.sections["uniformity"] = [{
        "scorer": "laion", "arm": "bodies", "operator": "widen", "placebo_of": None, "fi": 0.22, "fi_ci_low": 0.17,
        "fi_ci_high": 0.27, "fi_p": 1e-8, "asymmetry": -0.05, "asym_ci_low": -0.08, "asym_ci_high": -0.02,
        "asym_p": 0.004, "n_clusters": 60}]
    b.finish_q()
    results = {
        "schema_version": 1, "tool": {"name": "scoreaudit", "version": "0.1.0"},
        "title": "Body width: a cross-attribute stress test",
        "lock": _lock("not pre-registered", ""),
        "settings": {"title": "Body width: a cross-attribute stress test", "version": 1, "seed": 7, "alpha": 0.05,
                     "correction": "bh", "bootstrap": 2000, "scale": "sd", "test": "ttest",
                     "min_real_clusters": 100, "max_leakage": 0.001},
        "environment": _env({"laion": ("laion_aesthetic", {})}),
        "plan": {"fingerprint": _sha("plan-body")[:16], "steps": 412, "images": {"bodies": 240},
                 "forward_passes": {"laion": 1200}},
        "arms": {"bodies": {"kind": "synthetic", "n_images": 240, "n_clusters": 60, "n_excluded": 1}},
        "verdicts": [{"measure": "width", "operator": "widen", "verdict": "stress-test-only", "conditions": [
            {"name": "pixel isolation", "held": False, "value": 0.184,
             "detail": "torso_warp is geometric (not pixel-local); mean leakage 18.4% > 0.1%"},
            {"name": "measurement validity", "held": False, "value": 0.31,
             "detail": "validate width under widen failed on bodies (r² 0.31 < 0.5)"},
            {"name": "real-data arm", "held": False, "value": None,
             "detail": "no arm of kind real measures this axis"}]}],
        "validations": [{"measure": "width", "operator": "widen", "arm": "bodies", "r2": 0.31, "monotonic": 0.72,
                         "passed": False, "checks": [{"name": "r2", "op": ">=", "threshold": 0.5, "value": 0.31, "held": False}]}],
    }
    exclusions = [{"arm": "bodies", "image_id": "b_0190", "row": 191, "stage": "region",
                   "reason": "mask file does not match the image size (512×768 vs 768×512)"}]
    ir_extra = {"operators": {"widen": {"name": "widen", "call": {"plugin": "torso_warp", "version": "1",
                                                                     "params": {"region": "torso"}},
                                           "doses": doses, "identity": 1.0, "pixel_local": False, "placebo_of": None,
                                           "symmetric": True}},
                "report": {"title": None, "formats": ["html"]}}
    return _write_bundle(out, "body_warp.audit", b, results, exclusions, ir_extra)


# ---------------------------------------------------------------- cross image (example 3)


def cross_bundle(out: Path) -> Path:
    b = _Builder("cross_image", 3)
    rng = b.rng
    races = ["Asian", "Black", "White", "Latino"]
    for s in ("pick", "ir"):
        eff = float(rng.uniform(0.02, 0.2))
        b.cell("C1", "Race does not change the score within counterfactual sets", s, "cf", "factor_effect",
               "factor_effect(race, model: race * gender) < 0.1", eff, 0.03, {"kind": "less", "threshold": 0.1})
        b.sections.setdefault("factors", []).append({
            "scorer": s, "arm": "cf", "factor": "race", "model": "race * gender", "effect": eff,
            "ci_low": eff - 0.06, "ci_high": eff + 0.06, "p": 0.02, "wald_df": 6,
            "levels": [{"level": lv, "mean": float(rng.normal(0, eff)), "ci_low": None, "ci_high": None, "n": 150}
                       for lv in races]})
        for lv in b.sections["factors"][-1]["levels"]:
            lv["ci_low"], lv["ci_high"] = lv["mean"] - 0.08, lv["mean"] + 0.08
    for s in ("pick", "ir"):
        spread = float(rng.uniform(0.1, 0.4))
        b.cell("C2", "No race group is ranked first systematically", s, "cf", "rank_spread",
               "rank_spread(race) < 0.5", spread, 0.05, {"kind": "less", "threshold": 0.5})
        b.sections.setdefault("ranks", []).append({
            "scorer": s, "arm": "cf", "factor": "race", "spread": spread, "p": 0.04, "friedman_statistic": 8.3,
            "n_clusters": 150, "levels": [{"level": lv, "mean_rank": float(2.5 + rng.normal(0, 0.3))} for lv in races]})
    for s in ("pick", "ir"):
        r = float(rng.uniform(0.2, 0.6))
        b.cell("A1", "The scorer agrees with human emotion ratings", s, "rated", "spearman",
               "spearman(score, column: human_rating) > 0.5", r, 0.05, {"kind": "greater", "threshold": 0.5})
        b.sections.setdefault("agreement", []).append({
            "scorer": s, "arm": "rated", "method": "spearman", "column": "human_rating", "r": r,
            "ci_low": r - 0.1, "ci_high": r + 0.1, "p": 1e-6, "variance_explained": r * r, "n": 300})
    for s in ("pick", "ir"):
        acc = float(rng.uniform(0.45, 0.7))
        b.cell("W1", "The scorer prefers the prompt-faithful image", s, "wide", "pairwise_accuracy",
               "pairwise_accuracy() > 0.5", acc, 0.03, {"kind": "greater", "threshold": 0.5})
        b.sections.setdefault("pairs", []).append({
            "scorer": s, "arm": "wide", "accuracy": acc, "ci_low": acc - 0.06, "ci_high": acc + 0.06,
            "p": 0.001, "n_pairs": 250, "ties": 2, "mean_gap": acc - 0.5, "mean_gap_ci_low": acc - 0.6,
            "mean_gap_ci_high": acc - 0.4})
    b.finish_q()
    results = {
        "schema_version": 1, "tool": {"name": "scoreaudit", "version": "0.1.0"},
        "title": "Counterfactual, agreement and wide-spectrum checks",
        "lock": _lock("deviation", ""),
        "settings": {"title": "Counterfactual, agreement and wide-spectrum checks", "version": 1, "seed": 3,
                     "alpha": 0.05, "correction": "bh", "bootstrap": 2000, "scale": "sd", "test": "ttest",
                     "min_real_clusters": 100, "max_leakage": 0.001},
        "environment": _env({"pick": ("pickscore", {}), "ir": ("image_reward", {})}),
        "plan": {"fingerprint": _sha("plan-cross")[:16], "steps": 96, "images": {"cf": 600, "rated": 300, "wide": 500},
                 "forward_passes": {"pick": 1400, "ir": 1400}},
        "arms": {"cf": {"kind": "synthetic", "n_images": 600, "n_clusters": 150, "n_excluded": 0},
                 "rated": {"kind": "synthetic", "n_images": 300, "n_clusters": 300, "n_excluded": 0},
                 "wide": {"kind": "synthetic", "n_images": 500, "n_clusters": 250, "n_excluded": 0}},
        "verdicts": [], "validations": [],
    }
    return _write_bundle(out, "cross_image.audit", b, results, [], {"operators": {}, "report": {"title": None, "formats": ["html"]}})


BUILDERS = {"skin_tone": skin_bundle, "body_warp": body_bundle, "cross_image": cross_bundle}
