"""Regenerate the issue-28 screenshots in this folder: the large planted report (tests/reports/big.audit:
7 scorers, 3 arms, 12 hypotheses), the real demo report (its mover thumbnails) and the comparisons example
(ROC curves), in headless Debian chromium at 1280 and 390 px, plus PDF pages at 60 dpi (pdftoppm).

    HF_HUB_OFFLINE=1 .venv/bin/python artifacts/issue28/make_screenshots.py
"""

from __future__ import annotations

import base64
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reports"))
sys.path.insert(0, str(ROOT / "scripts"))


def bundles(work: Path) -> dict[str, Path]:
    from big_bundle import big_bundle

    from scoreaudit import api
    from scoreaudit.reports.render import render

    big = big_bundle(work / "big", real=150, prompts=40, per_prompt=4, pairs=300, excluded=400, bootstrap=200)
    render(big, formats=["html", "pdf"])
    import make_demo_data

    make_demo_data.build(work / "demo" / "data" / "demo", n_real=10, n_prompts=4)
    text = (ROOT / "examples" / "demo.audit").read_text().replace("bootstrap: 2000", "bootstrap: 200")
    (work / "demo" / "demo.audit").write_text(text)
    api.run(work / "demo" / "demo.audit", out=work / "demo" / "out", progress=False, render_report=False)
    render(work / "demo" / "out", formats=["html", "pdf"])
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "make_comparisons_data.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.build(work / "comp" / "data")
    text = (ROOT / "examples" / "comparisons.audit").read_text().replace("bootstrap: 2000", "bootstrap: 400")
    (work / "comp" / "comparisons.audit").write_text(text)
    api.run(work / "comp" / "comparisons.audit", out=work / "comp" / "out", progress=False, render_report=False)
    render(work / "comp" / "out", formats=["html"])
    return {"big": big, "demo": work / "demo" / "out", "comparisons": work / "comp" / "out"}


SHOTS = {  # bundle -> [(CSS selector of the element to photograph, file name part)]
    "big": [("#verdict", "verdict"), ("#glance", "glance"), ("#hypotheses li.cell", "cell"),
            ("#curves", "curves"), ("#comparisons", "comparisons"), ("#strata", "strata-forest")],
    "demo": [("li.cell:has(.movers-thumbs)", "thumbnails"), ("#preregistration", "prereg")],
    "comparisons": [("#crossplots", "roc-scatter")],
}
PDF_PAGES = {"big": [1, 2, 3, 12, 20, 35], "demo": [3]}


def element_shot(browser, session, selector: str, path: Path, width: int, max_height: int = 1300) -> None:
    box = browser.evaluate(session, f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
                           " const r = e.getBoundingClientRect(); return [r.top + window.scrollY, r.height]; })()")
    if box is None:
        raise SystemExit(f"{selector} is not in the page")
    clip = {"x": 0, "y": max(0, box[0] - 8), "width": width, "height": min(box[1] + 16, max_height), "scale": 1}
    data = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip},
                        session=session)["data"]
    path.write_bytes(base64.b64decode(data))


def main() -> None:
    from cdp import Browser

    for old in HERE.glob("*.png"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        made = bundles(Path(tmp))
        with Browser() as b:
            for name, items in SHOTS.items():
                for w, h, mobile in ((1280, 900, False), (390, 844, True)):
                    s = b.open((made[name] / "report.html").as_uri(), w, h, mobile)
                    for selector, part in items:
                        element_shot(b, s, selector, HERE / f"{name}-{w}-{part}.png", w)
        for name, pages in PDF_PAGES.items():
            for p in pages:
                subprocess.run(["pdftoppm", "-r", "60", "-png", "-singlefile", "-f", str(p), "-l", str(p),
                                str(made[name] / "report.pdf"), str(HERE / f"{name}-pdf-page{p:02d}")], check=True)
    total = sum(p.stat().st_size for p in HERE.glob("*.png"))
    print(f"{len(list(HERE.glob('*.png')))} screenshots, {total / 1e6:.1f} MB in {HERE}")


if __name__ == "__main__":
    main()
