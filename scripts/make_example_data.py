"""Build small data for `examples/skin_tone.audit` and `examples/body_warp.audit`.

skin_tone (`face()` must find a face in every image, so both arms start from
`skimage.data.astronaut()`, the only real colour photo of a person that ships in a wheel):
- `data/real` + `data/real.csv` (id, path, race): crops, flips and re-lit views of the
  astronaut (see make_demo_data.real_views), each its own cluster; the skin pixels are re-toned
  in CIELAB to three skin-tone strata (`race`: A lighter, B medium, C darker). They are views of
  one person re-toned by a program: a proxy that exercises the machinery, not a population.
- `data/synthetic` + `data/synthetic.csv` (id, path, prompt_id, tone): "generated-looking"
  views (edge-preserving smoothing, boosted saturation), each prompt cluster one view rendered
  in the three tones.

body_warp:
- `data/bodies` + `data/bodies.csv` (id, path, base_id, torso_mask): procedural figures
  (head, torso, arms, legs) with the torso mask written to `masks/<id>.png` (same size as the
  image, white = torso); a `base_id` cluster is one figure's proportions in several colourings.

Deterministic. Every face image is checked with the project's own face detector and the
detection rate is printed (a view the detector misses is redrawn, up to a few times).

With `--tiny-models DIR`, also builds tiny randomly initialised checkpoints of the four
scorers the examples use (laion_aesthetic, hpsv2, pickscore, image_reward) in a fake Hugging
Face cache DIR/hf, in the official formats and file names. Their scores are meaningless: this
only lets the examples run end to end without the real weights (needs the models extra).
PickScore and ImageReward then load in any process (set HF_HUB_CACHE=DIR/hf HF_HUB_OFFLINE=1).
LAION aesthetic and HPSv2 build their open_clip architectures by name (ViT-L-14-quickgelu,
ViT-H-14), and open_clip has no environment variable for extra configs: the tiny configs are
registered in the running process only, so the audit must run in that same process, e.g. with
`--run SPEC` (this script) or `run_with_tiny_models()` from Python; `scoreaudit run` in a new
process would build the full-size architectures and reject the tiny weights.

    python scripts/make_example_data.py [--out examples/data] [--which skin_tone body_warp]
        [--tiny-models DIR [--run SPEC.audit ...]]
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import shlex
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_demo_data import real_views  # noqa: E402

# Skin re-toning per stratum: (ΔL*, Δb*) applied to the skin pixels (ITA° = atan2(L* − 50, b*)).
RACE_SHIFT = {"A": (6.0, -2.0), "B": (-10.0, 3.0), "C": (-22.0, 6.0)}
MAX_TRIES = 5  # redraws of a view the face detector misses


# ---------------------------------------------------------------- faces


def _detector():
    from scoreaudit.plugins.regions import Face, FaceParams

    return Face(FaceParams())


def _skin_weight(rgb: np.ndarray) -> np.ndarray:
    """Soft skin mask (the project's colour rule, closed and feathered) so re-toning leaves no seams."""
    import cv2

    from scoreaudit.plugins.regions import Skin

    hard = cv2.morphologyEx(Skin.rule(rgb).astype(np.uint8), cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    return cv2.GaussianBlur(hard.astype(np.float32), (0, 0), 2.0)


def retone(rgb: np.ndarray, d_l: float, d_b: float) -> np.ndarray:
    """Shift L* and b* of the skin pixels (OpenCV float CIELAB), feathered at the skin's edge."""
    import cv2

    w = _skin_weight(rgb)
    lab = cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    lab[..., 0] += d_l * w
    lab[..., 2] += d_b * w
    out = cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)
    return np.clip(np.rint(out * 255.0), 0, 255).astype(np.uint8)


def stylise(rgb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A 'generated' look: edge-preserving smoothing and boosted saturation."""
    import cv2

    smooth = cv2.bilateralFilter(rgb, d=7, sigmaColor=float(rng.uniform(30, 60)), sigmaSpace=5)
    hsv = cv2.cvtColor(smooth, cv2.COLOR_RGB2HSV).astype(np.float32)
    hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(1.1, 1.35), 0, 255)
    return cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB)


class _Faces:
    """Astronaut views, each checked with the detector; counts what was redrawn."""

    def __init__(self, rng: np.random.Generator):
        self.face = _detector()
        self.views = real_views(10**9, rng)  # lazy: crops, alternate flips, re-lighting
        self.kept = self.missed = 0

    def detected(self, rgb: np.ndarray) -> bool:
        ok = self.face.detect(rgb) is not None
        self.kept += ok
        self.missed += not ok
        return ok

    def view(self, make) -> list[np.ndarray] | None:
        """`make(base)` → images; a base whose images are not all detected is redrawn."""
        for _ in range(MAX_TRIES):
            im, _mask = next(self.views)
            out = make(np.asarray(im))
            if all([self.detected(o) for o in out]):
                return out
        return None


def build_skin_tone(out: Path, n_real: int = 30, n_prompts: int = 10, seed: int = 11) -> dict:
    """data/real(.csv) and data/synthetic(.csv); returns detection counts."""
    rng = np.random.default_rng(seed)
    faces = _Faces(rng)
    real_dir, syn_dir = out / "real", out / "synthetic"
    real_dir.mkdir(parents=True, exist_ok=True)
    syn_dir.mkdir(parents=True, exist_ok=True)
    races = list(RACE_SHIFT)
    rows = []
    for k in range(n_real):
        race = races[k % len(races)]
        imgs = faces.view(lambda base, r=race: [retone(base, *RACE_SHIFT[r])])
        if imgs is None:
            continue
        iid = f"real_{k:03d}"
        Image.fromarray(imgs[0]).save(real_dir / f"{iid}.png")
        rows.append({"id": iid, "path": f"{iid}.png", "race": race})
    _write(out / "real.csv", rows)
    n_real_kept = len(rows)

    rows = []
    for p in range(n_prompts):
        def make(base):
            styled = stylise(base, rng)
            return [retone(styled, *RACE_SHIFT[r]) for r in races]

        imgs = faces.view(make)
        if imgs is None:
            continue
        for race, img in zip(races, imgs):
            iid = f"p{p:02d}_{race}"
            Image.fromarray(img).save(syn_dir / f"{iid}.png")
            rows.append({"id": iid, "path": f"{iid}.png", "prompt_id": f"prompt_{p:02d}", "tone": race})
    _write(out / "synthetic.csv", rows)
    return {"real": n_real_kept, "synthetic": len(rows), "detected": faces.kept, "missed": faces.missed}


# ---------------------------------------------------------------- bodies

BODY_W, BODY_H = 128, 160


def draw_body(rng: np.random.Generator, shape: dict) -> tuple[Image.Image, Image.Image]:
    """A standing figure and its torso mask (white = torso, exactly the drawn torso)."""
    bg_top, bg_bottom = rng.uniform(120, 240, 3), rng.uniform(60, 200, 3)
    t = np.linspace(0, 1, BODY_H)[:, None, None]
    bg = (1 - t) * bg_top + t * bg_bottom
    img = Image.fromarray(np.broadcast_to(bg, (BODY_H, BODY_W, 3)).astype(np.uint8))
    d = ImageDraw.Draw(img)
    skin = tuple(int(v) for v in rng.uniform([150, 100, 80], [230, 180, 150]))
    shirt = tuple(int(v) for v in rng.uniform(20, 230, 3))
    trousers = tuple(int(v) for v in rng.uniform(10, 120, 3))
    cx, tw, top, bottom = shape["cx"], shape["torso_w"], shape["top"], shape["bottom"]
    head_r = shape["head_r"]
    torso = [cx - tw / 2, top, cx + tw / 2, bottom]
    # legs, then arms (with a gap to the torso), neck, head, torso on top
    leg_w = tw * 0.36
    for sx in (-1, 1):
        lx = cx + sx * tw * 0.22
        d.rectangle([lx - leg_w / 2, bottom - 4, lx + leg_w / 2, BODY_H - 6], fill=trousers)
        ax = cx + sx * (tw / 2 + 4 + shape["arm_w"] / 2)
        d.rounded_rectangle([ax - shape["arm_w"] / 2, top + 3, ax + shape["arm_w"] / 2, bottom - 6], 4, fill=skin)
    d.rectangle([cx - 5, top - 8, cx + 5, top + 2], fill=skin)
    d.ellipse([cx - head_r, top - 8 - 2 * head_r, cx + head_r, top - 8], fill=skin)
    d.rounded_rectangle(torso, 6, fill=shirt)
    # a stripe on the shirt, so a warp has texture to move
    d.line([cx - tw / 2 + 3, (top + bottom) / 2, cx + tw / 2 - 3, (top + bottom) / 2], fill=trousers, width=3)
    img = img.filter(ImageFilter.GaussianBlur(0.6))
    px = np.asarray(img).astype(np.float32) + rng.normal(0, 2.0, (BODY_H, BODY_W, 3))
    img = Image.fromarray(np.clip(px, 0, 255).astype(np.uint8))
    mask = Image.new("L", (BODY_W, BODY_H), 0)
    ImageDraw.Draw(mask).rounded_rectangle(torso, 6, fill=255)
    return img, mask


def build_bodies(out: Path, n_bases: int = 6, per_base: int = 3, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    folder = out / "bodies"
    (folder / "masks").mkdir(parents=True, exist_ok=True)
    rows = []
    for b in range(n_bases):
        shape = {"cx": BODY_W / 2 + rng.uniform(-6, 6), "torso_w": rng.uniform(30, 46), "top": rng.uniform(48, 56),
                 "bottom": rng.uniform(104, 114), "head_r": rng.uniform(12, 16), "arm_w": rng.uniform(8, 11)}
        for j in range(per_base):
            img, mask = draw_body(rng, shape)
            iid = f"body{b:02d}_{j}"
            img.save(folder / f"{iid}.png")
            mask.save(folder / "masks" / f"{iid}.png")
            rows.append({"id": iid, "path": f"{iid}.png", "base_id": f"base{b:02d}", "torso_mask": f"masks/{iid}.png"})
    _write(out / "bodies.csv", rows)
    return {"bodies": len(rows)}


def _write(path: Path, rows: list[dict]) -> None:
    if not rows:
        raise RuntimeError(f"no rows for {path}: every view was rejected")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


# ---------------------------------------------------------------- tiny models


def build_tiny_models(root: Path, seed: int = 0) -> Path:
    """Tiny random laion_aesthetic, hpsv2, pickscore and image_reward checkpoints; returns root/hf.

    The open_clip scorers build ViT-L-14-quickgelu and ViT-H-14 by name, so tiny configs are
    written to root/open_clip_cfgs and registered under those names while building (then the
    previous configs are restored); `run_with_tiny_models` registers them again to run.
    """
    from scoreaudit.testing import tiny_models as tm  # torch, transformers, open_clip

    root = Path(root)
    cache, local = root / "hf", root / "local"
    saved = tm.register_tiny_open_clip(root / "open_clip_cfgs", names=("ViT-L-14-quickgelu", "ViT-H-14"))
    try:
        tm.build_laion(cache, local, seed)
        tm.build_hpsv2(cache, local, seed)
        tm.build_prompt_scorers(cache, seed)
    finally:
        tm.restore_open_clip(saved)
    return cache


def register_tiny_configs(root: Path) -> dict:
    """Re-register the tiny open_clip configs written by build_tiny_models (in a new process)."""
    import open_clip
    from open_clip import factory

    folder = Path(root) / "open_clip_cfgs"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist: build the tiny models first (--tiny-models {root})")
    saved = {p.stem: factory._MODEL_CONFIGS.get(p.stem) for p in folder.glob("*.json")}
    open_clip.add_model_config(folder)
    return saved


def run_with_tiny_models(spec: Path, root: Path, out: Path | None = None, progress: bool = True) -> dict:
    """`scoreaudit.api.run(spec)` in this process, offline, on the tiny models of `root`.

    The environment and open_clip's config table are restored afterwards.
    """
    from scoreaudit import api
    from scoreaudit.testing.tiny_models import restore_open_clip

    env = {"HF_HUB_CACHE": str(Path(root) / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    saved = register_tiny_configs(root)
    try:
        return api.run(spec, out=out, device="cpu", progress=progress)
    finally:
        restore_open_clip(saved)
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "examples" / "data"))
    ap.add_argument("--which", nargs="+", choices=("skin_tone", "body_warp"), default=["skin_tone", "body_warp"])
    ap.add_argument("--real", type=int, default=30, help="real face images (skin_tone)")
    ap.add_argument("--prompts", type=int, default=10, help="synthetic prompt clusters of 3 images (skin_tone)")
    ap.add_argument("--bases", type=int, default=6, help="body figures of 3 colourings each (body_warp)")
    ap.add_argument("--tiny-models", metavar="DIR", default=None,
                    help="also build tiny random checkpoints of the four scorers in the fake HF cache DIR/hf")
    ap.add_argument("--run", metavar="SPEC", nargs="+", default=[],
                    help="after building, run these .audit files in this process on the tiny models")
    args = ap.parse_args(argv)
    if args.run and not args.tiny_models:
        ap.error("--run needs --tiny-models DIR")
    if args.tiny_models:
        missing = [m for m in ("torch", "transformers", "open_clip") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"error: --tiny-models needs {', '.join(missing)}, which is not installed here: "
                  "pip install 'scoreaudit[models]'", file=sys.stderr)
            return 2
    out = Path(args.out)
    if "skin_tone" in args.which:
        n = build_skin_tone(out, n_real=args.real, n_prompts=args.prompts)
        rate = n["detected"] / max(1, n["detected"] + n["missed"])
        print(f"skin_tone data written to {out}: {n['real']} real, {n['synthetic']} synthetic images; "
              f"face detected in {n['detected']} of {n['detected'] + n['missed']} drawn views ({rate:.0%})")
    if "body_warp" in args.which:
        n = build_bodies(out, n_bases=args.bases)
        print(f"body_warp data written to {out}: {n['bodies']} figures with torso masks")
    if args.tiny_models:
        root = Path(args.tiny_models).resolve()
        cache = build_tiny_models(root)
        print(f"tiny random laion_aesthetic, hpsv2, pickscore and image_reward checkpoints written to "
              f"{cache} (scores are meaningless)")
        print(f"  pickscore / image_reward in any process: export HF_HUB_CACHE={shlex.quote(str(cache))} "
              "HF_HUB_OFFLINE=1")
        print("  laion_aesthetic / hpsv2 need tiny open_clip configs registered in the running process: run the "
              f"audit with --run SPEC, or from Python: run_with_tiny_models(spec, {str(root)!r})")
        for spec in args.run:
            res = run_with_tiny_models(Path(spec), root)
            print(f"{spec}: {len(res.get('cells', []))} hypothesis cells")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
