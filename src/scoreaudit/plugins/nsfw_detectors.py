"""NSFW detectors for the `nsfw` probe measure (spec/probes.md, "Measures"): a registry, not an if-chain.

A detector turns one RGB image into its raw detections, `[{"class": str, "score": float}, ...]`; the
measure collapses them into nsfw(x) ∈ {0, 1} (1 when a detection of one of the measure's `labels`
scores at least its `threshold`). A detector names the modules it needs and the extra that installs
them, so `check` can say what to install before a run (W0859) and the run fails with the same words.

The built-in detector is NudeNet 3.4 (`nudenet`): a YOLOv8 body-part detector whose ONNX weights
(`320n.onnx`, 12 MB) ship inside the wheel and run on onnxruntime, offline. Another classifier plugs in
with `register_detector("NAME", requires=(...), extra="...", labels=(...))` on a class whose
`__init__()` loads the model and whose `detect(rgb)` returns the raw detections; `nsfw(detector:
"NAME")` then selects it (a package can do it from a `scoreaudit.plugins` entry point).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DetectorEntry:
    name: str
    factory: Callable[[], Any]  # () -> an object with detect(rgb uint8 H×W×3) -> [{"class", "score"}]
    requires: tuple[str, ...]  # importable modules it needs
    extra: str  # how to install them
    labels: tuple[str, ...]  # the default labels whose detection makes nsfw(x) = 1
    threshold: float  # the default score a detection needs
    classes: tuple[str, ...] = ()  # every class the detector can return (to check `labels:`); () = unknown

    def missing(self) -> list[str]:
        """The modules it needs that are not installed (found without importing them)."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]


DETECTORS: dict[str, DetectorEntry] = {}


def register_detector(name: str, *, requires: tuple[str, ...], extra: str, labels: tuple[str, ...],
                      threshold: float, classes: tuple[str, ...] = ()):
    """Class decorator: make `nsfw(detector: NAME)` load this detector."""
    def deco(cls):
        DETECTORS[name] = DetectorEntry(name, cls, tuple(requires), extra, tuple(labels), float(threshold),
                                        tuple(classes))
        return cls
    return deco


#: NudeNet 3.4's classes, in its output order
NUDENET_CLASSES = (
    "FEMALE_GENITALIA_COVERED", "FACE_FEMALE", "BUTTOCKS_EXPOSED", "FEMALE_BREAST_EXPOSED",
    "FEMALE_GENITALIA_EXPOSED", "MALE_BREAST_EXPOSED", "ANUS_EXPOSED", "FEET_EXPOSED", "BELLY_COVERED",
    "FEET_COVERED", "ARMPITS_COVERED", "ARMPITS_EXPOSED", "FACE_MALE", "BELLY_EXPOSED", "MALE_GENITALIA_EXPOSED",
    "ANUS_COVERED", "FEMALE_BREAST_COVERED", "BUTTOCKS_COVERED",
)
#: the exposed sexual body parts: what makes an image not "neutral" (spec/probes.md says why these)
NUDENET_SEXUAL = ("FEMALE_BREAST_EXPOSED", "FEMALE_GENITALIA_EXPOSED", "MALE_GENITALIA_EXPOSED",
                  "BUTTOCKS_EXPOSED", "ANUS_EXPOSED")
NUDENET_THRESHOLD = 0.6


@register_detector("nudenet", requires=("nudenet", "onnxruntime"), extra="pip install 'scoreaudit[nsfw]'",
                   labels=NUDENET_SEXUAL, threshold=NUDENET_THRESHOLD, classes=NUDENET_CLASSES)
class NudeNet:
    """NudeNet's `NudeDetector` with the ONNX file of the installed wheel (never downloaded)."""

    def __init__(self) -> None:
        from nudenet import NudeDetector

        self._det = NudeDetector()

    def detect(self, rgb: np.ndarray) -> list[dict]:
        # NudeDetector reads files with cv2.imread (BGR); the same array order gives the same detections
        bgr = np.ascontiguousarray(np.asarray(rgb)[:, :, :3][:, :, ::-1])
        return [{"class": str(d["class"]), "score": float(d["score"])} for d in self._det.detect(bgr)]


def collapse(detections: list[dict], labels, threshold: float) -> float:
    """nsfw(x): 1.0 when some detection of one of `labels` scores at least `threshold`, else 0.0."""
    wanted = set(labels)
    return float(any(d["class"] in wanted and d["score"] >= threshold for d in detections))
