"""Real results bundles: planted-scorer tables for a normative example, analysed by the statistics engine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TRUTH = {
    "*": {"fidelity": 0.4, "asymmetry": 0.05, "noise": 0.3, "placebo": 0.8},
    "pick": {"fidelity": 0.2, "asymmetry": -0.1, "noise": 0.3, "placebo": 1.0},
}


def planted_bundle(out: Path, example: str = "skin_tone.audit", clusters: int = 40, bootstrap: int = 200,
                   exclusions: list[dict] | None = None) -> Path:
    """Compile `examples/<example>`, plant scores, write the runtime tables, run `analyse`."""
    import pandas as pd

    from scoreaudit import api
    from scoreaudit.stats.engine import analyse
    from scoreaudit.stats.planted import ArmShape, planted_tables

    spec = ROOT / "examples" / example
    checked = api.check(spec)
    assert checked.ok, [d.message for d in checked.diagnostics]
    ir = checked.ir
    ir = ir.model_copy(update={"settings": ir.settings.model_copy(update={"bootstrap": bootstrap})})
    shapes = {}
    for name, arm in ir.arms.items():
        if arm.source == "images":
            strata = {s: ("A", "B", "C") for s in arm.strata}
            shapes[name] = ArmShape(clusters, 1 if arm.kind == "real" else 3, strata)
    tables = planted_tables(ir, shapes, TRUTH, seed=ir.settings.seed)
    if exclusions:
        tables["exclusions"] = pd.DataFrame(exclusions, columns=["arm", "image_id", "row", "stage", "reason"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(exist_ok=True)
    for name, df in tables.items():
        df.to_parquet(out / "tables" / f"{name}.parquet", index=False)
    shutil.copy2(spec, out / "spec.audit")
    (out / "ir.json").write_text(ir.model_dump_json(indent=1), encoding="utf-8")
    (out / "run.json").write_text(json.dumps({"first_score_at": "2026-11-29T10:00:00Z", "device": "cpu"}), encoding="utf-8")
    analyse(out, progress=False)
    return out
