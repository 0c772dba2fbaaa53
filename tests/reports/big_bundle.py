"""A large real results bundle: seven scorers, three arms (real, synthetic, pairs), twelve hypotheses.

`tests/reports/big.audit` compiled, planted scores written as the runtime's tables
(stats/planted.py), analysed by the statistics engine: the shape of the audits that
broke the report (long labels, many columns, hundreds of exclusions).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = HERE / "big.audit"

TRUTH = {
    "*": {"fidelity": 0.4, "asymmetry": 0.05, "noise": 0.4, "placebo": 0.8},
    "pick": {"fidelity": 0.2, "asymmetry": -0.1, "noise": 0.3, "placebo": 1.0},
    "hps": {"fidelity": 0.02, "asymmetry": 0.0, "noise": 0.3, "placebo": 1.0},
}


def big_bundle(out: Path, real: int = 400, prompts: int = 100, per_prompt: int = 4, pairs: int = 1036,
               excluded: int = 300, bootstrap: int = 200) -> Path:
    """Compile big.audit, plant scores for `real` + `prompts`×`per_prompt` images and `pairs` pairs,
    exclude `excluded` images (three reasons), run `analyse`. Returns the bundle folder."""
    import pandas as pd

    from scoreaudit import api
    from scoreaudit.stats.engine import analyse
    from scoreaudit.stats.planted import ArmShape, planted_tables

    checked = api.check(SPEC)
    assert checked.ok, [d.message for d in checked.diagnostics]
    ir = checked.ir
    ir = ir.model_copy(update={"settings": ir.settings.model_copy(update={"bootstrap": bootstrap})})
    shapes = {"real": ArmShape(real, 1, {"race": ("A", "B", "C")}),
              "synthetic": ArmShape(prompts, per_prompt, {}),
              "wide": ArmShape(pairs)}
    tables = planted_tables(ir, shapes, TRUTH, seed=ir.settings.seed)
    reasons = ("no face detected", "image could not be decoded (truncated file)",
               "skin region smaller than 1% of the image")
    rows = [{"arm": "real" if k % 2 else "synthetic", "image_id": f"x{k:05d}", "row": 10_000 + k,
             "stage": "region" if k % 3 else "decode", "reason": reasons[k % 3]} for k in range(excluded)]
    tables["exclusions"] = pd.DataFrame(rows, columns=["arm", "image_id", "row", "stage", "reason"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(exist_ok=True)
    for name, df in tables.items():
        df.to_parquet(out / "tables" / f"{name}.parquet", index=False)
    shutil.copy2(SPEC, out / "spec.audit")
    (out / "ir.json").write_text(ir.model_dump_json(indent=1), encoding="utf-8")
    (out / "run.json").write_text(json.dumps({"first_score_at": "2026-11-29T10:00:00Z", "device": "cpu"}),
                                  encoding="utf-8")
    analyse(out, progress=False)
    return out
