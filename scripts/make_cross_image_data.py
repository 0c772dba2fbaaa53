"""Build small data for `examples/cross_image.audit` (counterfactual, rated and pairs arms).

- `data/cf`: counterfactual sets: each set is one drawn face layout rendered
  for every combination of a skin-tone group (`race`: A, B, C) and a hair style
  (`gender`: female, male), with a per-image `prompt`.
- `data/rated`: single images with a simulated `human_rating` column.
- `data/wide/pairs.csv`: pairs of a prompt-faithful image (`faithful`) and a
  polished one (`polished`: smoothed, saturated), with the original and a
  wide-spectrum prompt per pair.

Deterministic. The labels are proxies drawn by a program, not people.

With `--tiny-models HF_CACHE_DIR`, also builds tiny randomly initialised PickScore and
ImageReward checkpoints in the official formats, in a fake Hugging Face cache
(`models--org--name/refs/main` + `snapshots/<commit>/`), and prints the environment that makes
the example's scorers use them. Their scores are meaningless: this only lets the example run end
to end without the real weights (needs the models extra: torch, transformers, open_clip).

    python scripts/make_cross_image_data.py [--out examples/data] [--tiny-models HF_CACHE_DIR]
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import itertools
import shlex
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_demo_data import SIZE, draw_face  # noqa: E402

RACE_TONE = {"A": "light", "B": "medium", "C": "dark"}


def _layout(rng: np.random.Generator) -> dict:
    return {
        "cx": SIZE / 2 + rng.uniform(-6, 6), "cy": SIZE / 2 - 8 + rng.uniform(-5, 5),
        "rx": rng.uniform(34, 42), "ry": rng.uniform(44, 52),
        "bg": rng.uniform(90, 230, 3), "hair": rng.uniform(10, 90, 3), "shirt": rng.uniform(20, 220, 3),
    }


def _with_long_hair(img: Image.Image, layout: dict) -> Image.Image:
    img = img.copy()
    d = ImageDraw.Draw(img)
    hair = tuple(int(v) for v in layout["hair"])
    cx, cy, rx, ry = layout["cx"], layout["cy"], layout["rx"], layout["ry"]
    for sx in (-1, 1):
        x0 = cx + sx * (rx + 2)
        xa, xb = sorted([x0, x0 + sx * 12])
        d.rectangle([xa, cy - ry * 0.4, xb, cy + ry * 0.9], fill=hair)
    return img


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def build(out: Path, n_sets: int = 12, n_rated: int = 30, n_pairs: int = 24, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    cf = out / "cf"
    cf.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in range(n_sets):
        layout = _layout(rng)
        for race, gender in itertools.product(RACE_TONE, ("female", "male")):
            img, _ = draw_face(np.random.default_rng([seed, s]), layout, RACE_TONE[race])
            if gender == "female":
                img = _with_long_hair(img, layout)
            iid = f"set{s:02d}_{race}_{gender}"
            img.save(cf / f"{iid}.png")
            rows.append({"id": iid, "path": f"{iid}.png", "set_id": f"set{s:02d}", "race": race,
                         "gender": gender, "prompt": "a portrait photo of a doctor"})
    _write(out / "cf.csv", rows)

    rated = out / "rated"
    rated.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n_rated):
        tone = list(RACE_TONE.values())[k % 3]
        img, _ = draw_face(rng, _layout(rng), tone)
        warmth = rng.uniform(0.6, 1.6)
        img = ImageEnhance.Color(img).enhance(warmth)
        iid = f"rated_{k:02d}"
        img.save(rated / f"{iid}.png")
        rating = round(float(3 + 1.5 * (warmth - 1.1) + rng.normal(0, 0.4)), 3)  # simulated human rating
        rows.append({"id": iid, "path": f"{iid}.png", "human_rating": rating,
                     "prompt": "a joyful portrait of a person"})
    _write(out / "rated.csv", rows)

    wide = out / "wide"
    wide.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n_pairs):
        tone = list(RACE_TONE.values())[k % 3]
        img, _ = draw_face(rng, _layout(rng), tone)
        polished = ImageEnhance.Contrast(ImageEnhance.Color(img.filter(ImageFilter.GaussianBlur(1.5))).enhance(1.6)).enhance(1.2)
        img.save(wide / f"pair{k:02d}_faithful.png")
        polished.save(wide / f"pair{k:02d}_polished.png")
        rows.append({"id": f"pair{k:02d}", "faithful": f"pair{k:02d}_faithful.png",
                     "polished": f"pair{k:02d}_polished.png", "prompt": "a photo of a person",
                     "wide_prompt": "a candid, unretouched photo of a person with natural skin texture"})
    _write(wide / "pairs.csv", rows)
    return out


def build_tiny_models(cache: Path, seed: int = 0) -> Path:
    """Tiny random PickScore_v1 (+ its CLIP processor repo) and ImageReward (+ bert-base-uncased) in `cache`."""
    from scoreaudit.testing.tiny_models import build_prompt_scorers  # torch, transformers, open_clip

    return build_prompt_scorers(Path(cache), seed=seed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "examples" / "data"))
    ap.add_argument("--tiny-models", metavar="HF_CACHE_DIR", default=None,
                    help="also build tiny random PickScore and ImageReward checkpoints in this fake HF cache")
    args = ap.parse_args(argv)
    if args.tiny_models:
        missing = [m for m in ("torch", "transformers", "open_clip") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"error: --tiny-models needs {', '.join(missing)}, which is not installed here: "
                  "pip install 'scoreaudit[models]'", file=sys.stderr)
            return 2
    print(f"cross-image data written to {build(Path(args.out))}")
    if args.tiny_models:
        cache = build_tiny_models(Path(args.tiny_models).resolve())
        print(f"tiny random PickScore and ImageReward checkpoints written to {cache} (scores are meaningless)")
        print("use them with:")
        print(f"  export HF_HUB_CACHE={shlex.quote(str(cache))} HF_HUB_OFFLINE=1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
