"""The `anchor` probe measure: nearest labelled anchor by cosine, against a brute-force nearest neighbour."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from probe_testutil import tiny_scorers  # noqa: E402
from scoreaudit.testing.tiny_models import test_images  # noqa: E402

LABELS = ("asian_woman", "black_man", "white_woman")


def _anchor_project(tmp):
    """A tiny CLIP folder and a labelled anchor set (3 labels × 3 images) under tmp; the manifest's rows."""
    shutil.copytree(tiny_scorers(), tmp / "clip", dirs_exist_ok=True)
    (tmp / "anchors").mkdir()
    rows = []
    for k, img in enumerate(test_images(9, seed=4)):
        rel = f"anchors/a{k}.png"
        Image.fromarray(img).save(tmp / rel)
        rows.append((rel, LABELS[k % 3]))
    (tmp / "cfd.csv").write_text("path,group\n" + "".join(f"{p},{lab}\n" for p, lab in rows))
    return rows


def _measure(tmp, **kw):
    from scoreaudit.registry import load_plugins, probe_measures

    load_plugins()
    entry = probe_measures.get("anchor")
    params = entry.params.model_validate({"manifest": "cfd.csv", "label": "group", "model": "clip", **kw})
    return entry.impl(params, base_dir=tmp, device="cpu")


def _brute_force_features(folder, images):
    """transformers' own CLIPImageProcessor and get_image_features (not the measure's preprocessing)."""
    import torch
    from transformers import CLIPImageProcessor, CLIPModel

    model = CLIPModel.from_pretrained(str(folder)).eval()
    proc = CLIPImageProcessor.from_pretrained(str(folder))
    with torch.no_grad():
        out = []
        for img in images:
            f = model.get_image_features(**proc(images=Image.fromarray(img), return_tensors="pt"))
            f = f if isinstance(f, torch.Tensor) else f.pooler_output  # transformers 5: an output object
            assert f.shape[-1] == model.config.projection_dim  # the projected embedding
            out.append([float(v) for v in f[0]])
    return out


def _cos(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


def test_anchor_labels_and_margins_equal_a_brute_force_nearest_neighbour(tmp_path):
    rows = _anchor_project(tmp_path)
    m = _measure(tmp_path)
    probes = test_images(8, seed=9)
    got = [m.compute(img) for img in probes]
    assert m.labels == sorted(LABELS)
    # brute force: anchor = mean embedding of a label's images, normalised; nearest by cosine, one by one
    feats = _brute_force_features(tmp_path / "clip", [np.asarray(Image.open(tmp_path / p).convert("RGB"))
                                                       for p, _ in rows])
    anchors = {}
    for lab in LABELS:
        mine = [f for f, (_, x) in zip(feats, rows) if x == lab]
        anchors[lab] = [sum(col) / len(mine) for col in zip(*mine)]
    winners = set()
    for img, out in zip(probes, got):
        f = _brute_force_features(tmp_path / "clip", [img])[0]
        sims = sorted(((_cos(f, a), lab) for lab, a in anchors.items()), reverse=True)
        best = sims[0][1]
        winners.add(best)
        assert {lab: out[lab] for lab in LABELS} == {lab: float(lab == best) for lab in LABELS}
        assert out[""] == pytest.approx(sims[0][0] - sims[1][0], abs=2e-4)
    assert len(winners) >= 2  # the probe images do not all fall to one anchor (the check can fail)


def test_anchor_manifest_problems_are_named(tmp_path):
    from scoreaudit.plugins.base import ScorerUnavailable

    _anchor_project(tmp_path)
    with pytest.raises(ScorerUnavailable, match="no column 'race'"):
        _measure(tmp_path, label="race").compute(test_images(1)[0])
    (tmp_path / "bad.csv").write_text("path,group\n../outside.png,x\n")
    with pytest.raises(ScorerUnavailable, match="outside the spec's folder"):
        _measure(tmp_path, manifest="bad.csv").compute(test_images(1)[0])
