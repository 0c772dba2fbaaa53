"""The tensor path: one image on the run's device through operators, measures and model scorers.

Chosen once per run (`resolve_tensor_path`: on for a CUDA device, selectable on the CPU).
On it, each decoded image and its region masks go to the device once
(`plugins.gpu.pipeline.DeviceImage.upload`, per batch, in `attach`); operators sweep
there with their torch twins (`plugins.gpu.operators`), measures and covariates
(the builtin leakage included) are computed there (`plugins.gpu.measures`), and model
scorers receive the variant tensors (their `Preprocess` handles tensors where they
are). What still comes back to the host, and why:
- each new variant's uint8 pixels, once, for its content hash (score keys and the
  variant step's record are content-addressed) - `DeviceVariant.image`;
- each measure's float (the value the cache stores);
- a host copy for scorers that take numpy arrays (classical, NIQE, planted, Ray actors).
A plugin without a torch twin (an entry-point operator or measure) runs its numpy
reference on host copies; run.log says so once per plugin. The numpy/OpenCV path
stays the reference and the default on the CPU; tests/runtime/test_tensor_path.py
holds the two equal over whole runs.

torch is imported inside functions only: the core never imports it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scoreaudit.plugins.base import MeasureContext
from scoreaudit.registry import REGISTRIES, load_plugins

TENSOR_PATH_CHOICES = ("auto", "on", "off")


def resolve_tensor_path(choice: str, device: str, executor: str = "local") -> tuple[bool, str]:
    """(on, why) for `--tensor-path auto|on|off`: auto = on for a CUDA device, off on the CPU.

    The Ray executor's batch tasks use the reference path (their scorers are actors in
    other processes, which take host arrays), so the tensor path is off there.
    """
    if choice not in TENSOR_PATH_CHOICES:
        raise ValueError(f"unknown tensor path {choice!r}: use auto, on or off")
    if executor == "ray":
        return False, ("tensor path off: the Ray executor's batch tasks run the numpy reference path"
                       + (" (--tensor-path on ignored)" if choice == "on" else ""))
    if choice == "off" or (choice == "auto" and not str(device).startswith("cuda")):
        return False, f"tensor path off: operators, measures and preprocessing use the numpy/OpenCV reference on {device}"
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        from scoreaudit.runtime.device import DeviceUnavailable

        raise DeviceUnavailable("--tensor-path on needs torch (pip install 'scoreaudit[models]')")
    return True, (f"tensor path on: each image goes to {device} once; operators, measures and covariates "
                  "run there as torch ops and model scorers take the device tensors")


class DeviceVariant:
    """One operator output on the tensor path: the device tensor, its info, a host copy made at most once."""

    __slots__ = ("_floats", "_host", "_tensor", "device", "info")

    def __init__(self, tensor: Any = None, info: Mapping[str, Any] | None = None, host: np.ndarray | None = None,
                 device: str = "cpu"):
        self._tensor, self._host, self.info, self.device = tensor, host, dict(info or {}), device
        self._floats: dict[str, float] | None = None

    @property
    def tensor(self):
        """The uint8 H×W×3 device tensor (a fallback operator's output is uploaded on first use)."""
        if self._tensor is None:
            import torch

            self._tensor = torch.from_numpy(np.require(self._host, requirements=["C", "W"])).to(self.device)
        return self._tensor

    @property
    def image(self) -> np.ndarray:
        """The host uint8 H×W×3 array, downloaded once (for the content hash and numpy consumers)."""
        if self._host is None:
            self._host = self._tensor.cpu().numpy()
        return self._host

    def float_info(self) -> dict[str, float]:
        """The info values as floats (0-d device tensors come back together, in one transfer)."""
        if self._floats is None:
            self._floats = dict(zip(self.info, _floats(list(self.info.values()))))
        return self._floats


def _floats(values: Sequence[Any]) -> list[float]:
    """Floats of numbers and 0-d tensors; the tensors are stacked and downloaded in one transfer."""
    import torch

    out: list[Any] = list(values)
    idx = [k for k, v in enumerate(out) if isinstance(v, torch.Tensor)]
    if idx:
        got = torch.stack([out[k].reshape(()).to(torch.float64) for k in idx]).cpu().tolist()
        for k, v in zip(idx, got):
            out[k] = v
    return [float(v) for v in out]


def _note_once(ctx, key: str, text: str) -> None:
    seen = ctx._plugins.setdefault("tensor-path notes", set())
    if key not in seen:
        seen.add(key)
        if ctx.log is not None:
            ctx.log.note(text)


def attach(ctx, imgs: Sequence[Any]) -> None:
    """Upload each image of a batch and its region masks to the run's device, once (img.dev)."""
    from scoreaudit.plugins.gpu.pipeline import DeviceImage

    for img in imgs:
        if img.dev is None:
            img.dev = DeviceImage.upload(img.image, img.masks.masks, ctx.device, img.content_hash)


# ---------------------------------------------------------------- operators


def has_torch_operator(name: str) -> bool:
    from scoreaudit.plugins.gpu.operators import TORCH_OPERATORS

    return name in TORCH_OPERATORS


def sweep(ctx, op, img, doses: Sequence[float]) -> list[DeviceVariant]:
    """Operator `op` over `doses` on img.dev (its torch twin), or its reference on the host copy."""
    plugin = ctx.plugin("operator", op.call.plugin, dict(op.call.params))
    if not has_torch_operator(op.call.plugin):
        _note_once(ctx, f"operator {op.call.plugin}",
                   f"tensor path: operator '{op.call.plugin}' has no torch twin; it runs its numpy reference on "
                   "a host copy and each variant is uploaded once")
        mask = img.masks.masks.get(op.region) if op.region else None
        outs = list(plugin.sweep(img.image, mask, list(doses), ctx.seed))
        return [DeviceVariant(img.dev.image if o.image is img.image else None, o.info,
                              o.image if isinstance(o.image, np.ndarray) else None, ctx.device)
                for o in outs]
    from scoreaudit.plugins.gpu.operators import sweep as torch_sweep

    params = getattr(plugin, "params", None)
    if params is None:
        load_plugins()
        params = REGISTRIES["operator"].get(op.call.plugin).validate(dict(op.call.params))
    dev = img.dev
    mask = dev.masks.get(op.region) if op.region else None
    out = []
    for tensor, info in torch_sweep(op.call.plugin, params, dev.image, mask, list(doses), ctx.seed,
                                    img.content_hash):
        out.append(DeviceVariant(tensor, info, img.image if tensor is dev.image else None, ctx.device))
    return out


def check_output(v: Any) -> bool:
    """A usable variant: uint8 H×W×3 (tensor or array)."""
    if isinstance(v, DeviceVariant):
        t = v._tensor if v._tensor is not None else v._host
        if t is None:
            return False
        if isinstance(t, np.ndarray):
            return t.dtype == np.uint8 and t.ndim == 3 and t.shape[2] == 3
        import torch

        return t.dtype == torch.uint8 and t.ndim == 3 and t.shape[2] == 3
    return False


# ---------------------------------------------------------------- measures


def has_torch_measure(kind: str, name: str) -> bool:
    from scoreaudit.plugins.gpu.measures import TORCH_COVARIATES, TORCH_MEASURES

    return name in (TORCH_COVARIATES if kind == "covariate" else TORCH_MEASURES)


def _torch_measure(ctx, spec) -> Any:
    from scoreaudit.keys import canonical_json
    from scoreaudit.plugins.gpu.measures import build

    ident = canonical_json(["torch " + spec.registry, spec.plugin, dict(spec.params)])
    if ident not in ctx._plugins:
        load_plugins()
        params = REGISTRIES[spec.registry].get(spec.plugin).validate(dict(spec.params))
        ctx._plugins[ident] = build(spec.registry, spec.plugin, params)
    return ctx._plugins[ident]


def compute_many(ctx, jobs: Sequence[tuple]) -> list[Any]:
    """Cache values of measures `(spec, img, variant, operator_region, dose, identity)` on the tensor path:
    float (NaN allowed) or {"failure": reason}; the device results come back together, in one transfer."""
    out: list[Any] = [_compute(ctx, *job) for job in jobs]
    idx = [k for k, v in enumerate(out) if not isinstance(v, (dict, float))]
    if idx:
        got: list[Any]
        try:
            got = _floats([out[k] for k in idx])
        except Exception as exc:  # noqa: BLE001 - a device error surfacing only now: each value on its own
            got = []
            for k in idx:
                try:
                    got.append(float(out[k]))
                except Exception:  # noqa: BLE001 - this value is the failure: recorded, not raised
                    spec = jobs[k][0]
                    got.append({"failure": f"{spec.role} '{spec.name}' failed: {type(exc).__name__}: {exc}"})
        for k, v in zip(idx, got):
            out[k] = v
    return [v if isinstance(v, dict) or math.isfinite(v) or math.isnan(v) else float("nan") for v in out]


def _compute(ctx, spec, img, variant: DeviceVariant | None, operator_region: str | None,
             dose: float, identity: float) -> Any:
    """A 0-d device tensor (torch twin), a float (reference fallback) or {"failure": reason}.

    `variant` None means the unaltered image (the `original` rows); an identity dose's variant
    holds the uploaded original itself, so measures that test "variant is original" see it.
    """
    from scoreaudit.runtime.measure_steps import compute_measure

    dev = img.dev
    info = variant.info if variant is not None else {}
    if not has_torch_measure(spec.registry, spec.plugin):
        _note_once(ctx, f"{spec.registry} {spec.plugin}",
                   f"tensor path: {spec.registry} '{spec.plugin}' has no torch twin; it runs its numpy reference "
                   "on host copies")
        mctx = MeasureContext(original=img.image, variant=img.image if variant is None else variant.image,
                              masks=img.masks.masks,
                              operator_mask=img.masks.masks.get(operator_region) if operator_region else None,
                              info=variant.float_info() if variant is not None else {}, dose=dose,
                              identity=identity)
        return compute_measure(ctx, spec, mctx)  # float or failure
    from scoreaudit.plugins.gpu.measures import TorchMeasureContext

    try:
        tm = _torch_measure(ctx, spec)
        tctx = TorchMeasureContext(original=dev.image, variant=dev.image if variant is None else variant.tensor,
                                   masks=dev.masks,
                                   operator_mask=dev.masks.get(operator_region) if operator_region else None,
                                   info=info, dose=dose, identity=identity)
        value = tm.compute(tctx)
    except Exception as exc:  # noqa: BLE001 - a plugin bug or unusable input: excluded, never a crash (as the reference)
        return {"failure": f"{spec.role} '{spec.name}' failed: {type(exc).__name__}: {exc}"}
    import torch

    return value if isinstance(value, torch.Tensor) else float(value)
