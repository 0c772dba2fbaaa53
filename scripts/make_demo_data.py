"""Build the demo audit's data: a real arm and a synthetic arm of face images.

Real arm: `skimage.data.astronaut()` (public domain, the only real colour photo
of a person that ships in a wheel), cropped, flipped and re-lit into a few
dozen views, each its own cluster. They are views of one person, so the real
arm demonstrates the machinery, not a population finding.

Synthetic arm: procedurally drawn face-like images with a controllable skin
tone (set in CIELAB, so the ITA° of the skin is known), three tone strata,
clustered by a "prompt" (a face layout shared by the images of a cluster).

Every image comes with a face mask (`face_mask` column), so the demo needs no
face detector. Deterministic: the same seed gives the same files.

    python scripts/make_demo_data.py [--out examples/data/demo] [--real 30] [--prompts 24]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter
from skimage import color, data

SIZE = 160
TONES = {  # stratum -> (L*, a*, b*) centre of the skin colour; ITA° = atan2(L-50, b)
    "light": (72.0, 12.0, 16.0),
    "medium": (58.0, 14.0, 20.0),
    "dark": (40.0, 13.0, 18.0),
}


def _lab_to_rgb(lab) -> tuple[int, int, int]:
    rgb = color.lab2rgb(np.array(lab, dtype=float).reshape(1, 1, 3)).reshape(3)
    return tuple(int(round(v * 255)) for v in np.clip(rgb, 0, 1))


def draw_face(rng: np.random.Generator, layout: dict, tone: str) -> tuple[Image.Image, Image.Image]:
    """One face-like image and its face mask (white = face)."""
    L, a, b = TONES[tone]
    L += rng.normal(0, 2.5)
    skin = _lab_to_rgb((L, a + rng.normal(0, 1.0), b + rng.normal(0, 1.5)))
    shade = _lab_to_rgb((L - 10, a + 2, b + 2))
    bg = tuple(int(v) for v in layout["bg"])
    img = Image.new("RGB", (SIZE, SIZE), bg)
    d = ImageDraw.Draw(img)
    cx, cy, rx, ry = layout["cx"], layout["cy"], layout["rx"], layout["ry"]
    # shoulders and neck
    d.ellipse([cx - 70, cy + ry - 5, cx + 70, cy + ry + 90], fill=tuple(int(v) for v in layout["shirt"]))
    d.rectangle([cx - rx * 0.45, cy + ry * 0.6, cx + rx * 0.45, cy + ry + 15], fill=shade)
    # face, with a lighter centre
    box = [cx - rx, cy - ry, cx + rx, cy + ry]
    d.ellipse(box, fill=skin)
    # hair cap
    hair = tuple(int(v) for v in layout["hair"])
    d.chord([cx - rx - 4, cy - ry - 8, cx + rx + 4, cy + ry * 0.3], 180, 360, fill=hair)
    # eyes, brows, nose, mouth
    ey = cy - ry * 0.1
    for sx in (-1, 1):
        ex = cx + sx * rx * 0.42
        d.ellipse([ex - 9, ey - 5, ex + 9, ey + 5], fill=(240, 240, 240))
        d.ellipse([ex - 4, ey - 4, ex + 4, ey + 4], fill=(40, 30, 25))
        d.line([ex - 10, ey - 11, ex + 10, ey - 12], fill=hair, width=3)
    d.line([cx, ey + 4, cx - 4, cy + ry * 0.35], fill=shade, width=2)
    my = cy + ry * 0.55
    d.chord([cx - 14, my - 6, cx + 14, my + 8], 0, 180, fill=(170, 70, 70))
    img = img.filter(ImageFilter.GaussianBlur(0.8))
    px = np.asarray(img).astype(np.float32)
    px += rng.normal(0, 2.0, px.shape)  # sensor-like noise, so blur has something to remove
    img = Image.fromarray(np.clip(px, 0, 255).astype(np.uint8))
    mask = Image.new("L", (SIZE, SIZE), 0)
    ImageDraw.Draw(mask).ellipse(box, fill=255)
    hair_mask = Image.new("L", (SIZE, SIZE), 0)
    ImageDraw.Draw(hair_mask).chord([cx - rx - 4, cy - ry - 8, cx + rx + 4, cy + ry * 0.3], 180, 360, fill=255)
    mask = Image.fromarray(((np.asarray(mask) > 0) & (np.asarray(hair_mask) == 0)).astype(np.uint8) * 255)
    return img, mask


def _face_box(rgb: np.ndarray) -> tuple[int, int, int, int]:
    import cv2

    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    faces = cascade.detectMultiScale(grey, scaleFactor=1.1, minNeighbors=5, minSize=(60, 60))
    if len(faces) == 0:  # pragma: no cover - the astronaut's face is found in practice
        return (170, 40, 150, 190)
    x, y, w, h = max(faces, key=lambda f: f[2] * f[3])
    return int(x), int(y), int(w), int(h)


def real_views(n: int, rng: np.random.Generator):
    """Crops, flips and re-lit views of the astronaut, with the face mask carried along."""
    photo = data.astronaut()
    x, y, w, h = _face_box(photo)
    mask = Image.new("L", photo.shape[1::-1], 0)
    ImageDraw.Draw(mask).ellipse([x + 0.12 * w, y + 0.05 * h, x + 0.88 * w, y + 1.0 * h], fill=255)
    mask_np = np.asarray(mask)
    cx, cy = x + w / 2, y + h / 2
    for k in range(n):
        half = rng.uniform(0.9, 1.4) * max(w, h)
        ox, oy = rng.uniform(-0.15, 0.15, 2) * half
        left = int(np.clip(cx + ox - half, 0, photo.shape[1] - 2 * half))
        top = int(np.clip(cy + oy - half, 0, photo.shape[0] - 2 * half))
        box = (left, top, int(left + 2 * half), int(top + 2 * half))
        im = Image.fromarray(photo).crop(box).resize((SIZE, SIZE), Image.BILINEAR)
        mk = Image.fromarray(mask_np).crop(box).resize((SIZE, SIZE), Image.NEAREST)
        if k % 2:
            im, mk = im.transpose(Image.FLIP_LEFT_RIGHT), mk.transpose(Image.FLIP_LEFT_RIGHT)
        px = np.asarray(im).astype(np.float32)
        gain = rng.uniform(0.85, 1.15) * np.array([rng.uniform(0.95, 1.05), 1.0, rng.uniform(0.95, 1.05)])
        px = np.clip(px * gain, 0, 255).astype(np.uint8)
        yield Image.fromarray(px), mk


def build(out: Path, n_real: int = 30, n_prompts: int = 24, per_prompt: int = 3, seed: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    real_dir, syn_dir = out / "real", out / "synthetic"
    for d in (real_dir / "masks", syn_dir / "masks"):
        d.mkdir(parents=True, exist_ok=True)

    rows = []
    for k, (im, mk) in enumerate(real_views(n_real, rng)):
        iid = f"astro_{k:03d}"
        im.save(real_dir / f"{iid}.png")
        mk.save(real_dir / "masks" / f"{iid}.png")
        rows.append({"id": iid, "path": f"{iid}.png", "face_mask": f"masks/{iid}.png"})
    _write_csv(out / "real.csv", rows)

    rows = []
    tones = list(TONES)
    for p in range(n_prompts):
        layout = {
            "cx": SIZE / 2 + rng.uniform(-8, 8), "cy": SIZE / 2 - 8 + rng.uniform(-6, 6),
            "rx": rng.uniform(34, 42), "ry": rng.uniform(44, 52),
            "bg": rng.uniform(90, 230, 3), "hair": rng.uniform(10, 90, 3), "shirt": rng.uniform(20, 220, 3),
        }
        for j in range(per_prompt):
            tone = tones[(p + j) % len(tones)]
            img, mask = draw_face(rng, layout, tone)
            iid = f"p{p:02d}_{j}"
            img.save(syn_dir / f"{iid}.png")
            mask.save(syn_dir / "masks" / f"{iid}.png")
            rows.append({"id": iid, "path": f"{iid}.png", "face_mask": f"masks/{iid}.png",
                         "prompt_id": f"prompt_{p:02d}", "tone": tone})
    _write_csv(out / "synthetic.csv", rows)
    return out


def _write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "examples" / "data" / "demo"))
    ap.add_argument("--real", type=int, default=30)
    ap.add_argument("--prompts", type=int, default=24)
    args = ap.parse_args(argv)
    out = build(Path(args.out), n_real=args.real, n_prompts=args.prompts)
    print(f"demo data written to {out}")


if __name__ == "__main__":
    main()
