"""One decoded image through operators, measures and scorers without leaving the device.

`DeviceImage.upload` sends the pixels and region masks once; `variants` sweeps every
operator there (gpu.operators); `measure` evaluates measures and covariates on the
variants (gpu.measures); model scorers take the variant tensors directly (their
`Preprocess.batch` preprocesses tensors where they are), so nothing returns to the host
until the scores and measure values do. bench/gpu.py drives this path; the runtime's
tensor path (runtime/tensor_steps.py) uploads with `DeviceImage` and calls the same
operators and measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from scoreaudit.plugins.gpu import measures as tmeasures, operators as toperators


@dataclass
class DeviceImage:
    image: torch.Tensor  # uint8 H×W×3 on the device
    masks: dict[str, torch.Tensor]  # bool H×W on the device
    content_hash: str

    @classmethod
    def upload(cls, image: np.ndarray, masks: Mapping[str, np.ndarray], device: str | torch.device,
               content_hash: str | None = None) -> DeviceImage:
        from scoreaudit.plugins.base import content_hash as hash_of

        h = content_hash or hash_of(image)
        pin = torch.cuda.is_available() and str(device).startswith("cuda")
        img = torch.from_numpy(np.require(image, requirements=["C", "W"]))  # torch wants a writable array
        img = img.pin_memory() if pin else img
        return cls(img.to(device, non_blocking=pin),
                   {k: torch.from_numpy(np.ascontiguousarray(v)).to(device) for k, v in masks.items()}, h)


@dataclass(frozen=True)
class OperatorSpec:
    name: str  # the declared name
    plugin: str
    params: Any  # the plugin's validated params
    region: str | None
    doses: Sequence[float]


@dataclass(frozen=True)
class MeasureSpec:
    name: str
    kind: str  # measure | covariate
    plugin: str
    params: Any


@dataclass
class Variant:
    operator: str
    dose: float
    image: torch.Tensor
    info: dict = field(default_factory=dict)
    is_original: bool = False


def variants(img: DeviceImage, ops: Sequence[OperatorSpec], seed: int = 0) -> list[Variant]:
    """Every non-identity variant of every operator (the identity is the original, scored once)."""
    out = []
    for op in ops:
        mask = img.masks[op.region] if op.region else None
        swept = toperators.sweep(op.plugin, op.params, img.image, mask, list(op.doses), seed, img.content_hash)
        for dose, (tensor, info) in zip(op.doses, swept):
            out.append(Variant(op.name, float(dose), tensor, dict(info), is_original=tensor is img.image))
    return out


def measure(img: DeviceImage, variant: Variant, specs: Sequence[MeasureSpec], op: OperatorSpec,
            identity: float) -> dict[str, torch.Tensor]:
    """Each measure/covariate of one variant as a 0-d device tensor."""
    ctx = tmeasures.TorchMeasureContext(
        original=img.image, variant=variant.image, masks=img.masks,
        operator_mask=img.masks[op.region] if op.region else None, info=variant.info,
        dose=variant.dose, identity=identity)
    return {s.name: tmeasures.build(s.kind, s.plugin, s.params).compute(ctx) for s in specs}
