"""Shared torch code of the model scorers: device, precision (autocast), batched preprocessing.

Imported only from the scorers' constructors (torch is heavy). Preprocessing
works on tensors built from the runtime's uint8 H×W×3 RGB arrays and follows
the official pipelines step by step (shortest-edge or longest-edge resize,
centre crop or pad, scaling, normalisation), including each library's
rounding rules. Pipelines that resize a uint8 PIL image (CLIP, open_clip,
PickScore, ImageReward) use torch's uint8 antialiased kernel on the CPU, which
follows PIL's two-pass fixed-point resampling; HPSv2, which resizes a float
tensor, gets the same float resize. Images of one shape are processed in one
call, and only the resized crop is converted to float and sent to the device;
tests/models measure the remaining score difference against the official code.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.plugins.scorers.model_precision import choose_precision, device_type

AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Precision:
    """How a scorer's forwards run. Weights always stay fp32; fp16/bf16 wrap each image forward in
    `torch.autocast`, which runs matrix products, convolutions and attention in the reduced type
    and (on CUDA) softmax, norms and reductions in fp32, while residual sums promote back to fp32.
    Casting the weights instead (the previous behaviour) ran every op in half precision and left
    no exact fallback inside a forward. Heads the official code runs on `.float()` features run
    under `exact()`. fp32 enters no autocast region: its numbers are those of a plain forward.
    """

    name: str  # fp32 | fp16 | bf16
    device_type: str  # torch.autocast's device type: "cpu" or "cuda"

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return AUTOCAST_DTYPES.get(self.name)

    def forward(self):
        """The context a forward runs in: autocast to fp16/bf16, or nothing for fp32."""
        if self.name == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=AUTOCAST_DTYPES[self.name])

    def for_gradients(self) -> Precision:
        """The precision of the differentiable path (`score_tensor`, the probes): fp16 becomes bf16.

        fp16 gradients underflow without loss scaling, which a score function cannot apply for its
        caller; bf16 has fp32's exponent range. Where bf16 is unsupported (CUDA before Ampere), fp32.
        """
        if self.name != "fp16":
            return self
        ok = self.device_type == "cpu" or (self.device_type == "cuda" and torch.cuda.is_bf16_supported())
        return Precision("bf16" if ok else "fp32", self.device_type)

    def exact(self):
        """A region forced back to fp32 inside a forward (heads the official code runs on .float() features)."""
        if self.name == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, enabled=False)


def resolve_precision(device: str, ctor_precision: str | None, param_precision: str | None,
                      auto: dict[str, str] | None = None) -> Precision:
    """The `Precision` a scorer on `device` runs at (see `choose_precision`)."""
    name = choose_precision(device, ctor_precision, param_precision, auto or {})
    kind = device_type(device)
    if name != "fp32" and not torch.amp.is_autocast_available(kind):
        raise ScorerUnavailable(f"precision {name} needs torch.autocast on {kind!r}, which this torch lacks; use fp32")
    return Precision(name, kind)


def resolve_device(device: str) -> str:
    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ScorerUnavailable(
            f"device {device!r} was requested but torch sees no CUDA device; run with --device cpu"
        )
    return device


@dataclass(frozen=True)
class Preprocess:
    """How one official pipeline turns an image into the model's input tensor.

    mode "shortest": resize the short side to `size` (long side int(size·long/short),
    torchvision and HF agree), then centre-crop `crop`; crop offsets follow
    `crop_rule` ("torchvision": round((h−c)/2), "hf": (h−c)//2).
    mode "longest_pad" (HPSv2): resize the long side to `size` (round(dim·scale)),
    pad with zeros (before normalisation) to size×size, left/top = pad//2; the
    resize is done on the float [0, 1] tensor with no rounding, exactly as the
    official transform does.
    """

    size: int
    crop: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    mode: Literal["shortest", "longest_pad", "squash"] = "shortest"
    crop_rule: Literal["torchvision", "hf"] = "torchvision"
    interpolation: Literal["bicubic", "bilinear"] = "bicubic"
    round_uint8: bool = True  # the official pipeline resizes a uint8 PIL image

    def _resize(self, x: torch.Tensor, h: int, w: int) -> torch.Tensor:
        if x.shape[-2:] == (h, w):
            return x
        return F.interpolate(x, size=(h, w), mode=self.interpolation, align_corners=False, antialias=True)

    @staticmethod
    def _as_rgb(img: np.ndarray) -> np.ndarray:
        arr = np.asarray(img)
        if arr.ndim == 2:
            arr = np.repeat(arr[:, :, None], 3, axis=2)
        if arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.dtype != np.uint8:
            raise ValueError(f"expected a uint8 H×W×3 RGB image, got {arr.dtype} {arr.shape}")
        return arr[:, :, :3]

    def _affine(self, device: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-channel a, b with (x/255 − mean)/std = a·x + b: scaling and normalisation in one op."""
        std = torch.tensor(self.std, dtype=torch.float64)
        a = (1.0 / (255.0 * std)).float().view(1, 3, 1, 1).to(device)
        b = (-torch.tensor(self.mean, dtype=torch.float64) / std).float().view(1, 3, 1, 1).to(device)
        return a, b

    def group(self, arrs: Sequence[np.ndarray], device: str) -> torch.Tensor:
        """Same-sized uint8 H×W×3 images → float32 N×3×crop×crop, normalised (one resize call per group)."""
        x = torch.from_numpy(np.stack(arrs))  # uint8; np.stack copies
        return self.tensor_group(x, device, uint8_kernel=True)

    def tensor_group(self, x: torch.Tensor, device, uint8_kernel: bool) -> torch.Tensor:
        """uint8 N×H×W×3 tensor (one shape) → float32 N×3×crop×crop normalised on `device`.

        The one implementation of the official geometry, for host images and device images alike.
        A uint8 resize (`round_uint8`) runs where `x` is: torch's uint8 antialiased kernel rounds
        and clamps between its two passes as PIL does (≤ 1 level apart, typically on < 1 % of pixels,
        against ~20 % for a float resize rounded afterwards), and only the small crop then travels to
        `device`. Where that kernel is missing (CUDA, `uint8_kernel=False`) the resize runs in float32
        and is rounded and clamped to 8-bit levels before the crop. HPSv2 (`longest_pad`) resizes the
        [0, 1] float tensor unrounded on `device`, as its official pipeline does.
        """
        x = x.permute(0, 3, 1, 2)  # channels-last view
        h, w = x.shape[-2:]
        if self.mode == "longest_pad":
            x = self._fit_longest(x.to(device).float().div_(255.0))
            mean = torch.tensor(self.mean, device=x.device).view(1, 3, 1, 1)
            std = torch.tensor(self.std, device=x.device).view(1, 3, 1, 1)
            return (x - mean) / std
        nh, nw = self._resized_size(h, w)
        if not self.round_uint8:
            x = self._resize(x.to(device).float(), nh, nw)
        elif (nh, nw) != (h, w):
            x = self._resize(x, nh, nw) if uint8_kernel else torch.round(self._resize(x.float(), nh, nw)).clamp(0, 255)
        x = self._centre_crop(x).to(device)
        a, b = self._affine(x.device)
        return torch.addcmul(b, x.float(), a)

    def tensor(self, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Float N×3×H×W images in [0, 1] → the model's input, differentiably (the optimisation probes' path).

        The same resize, crop or pad and normalisation as `group`, on float
        tensors throughout: the official pipelines' rounding to 8 bits after
        resizing (≤ 1 level) is left out, since it has no gradient.
        """
        if self.mode == "longest_pad":
            x = self._fit_longest(x)
        else:
            x = self._centre_crop(self._resize(x, *self._resized_size(*x.shape[-2:])))
        mean = torch.tensor(self.mean, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
        return ((x - mean) / std).to(dtype)

    # The official geometry, shared by the uint8 path (`tensor_group`) and the differentiable one (`tensor`).

    def _fit_longest(self, x: torch.Tensor) -> torch.Tensor:
        """HPSv2: resize the long side to `size` (round(dim·scale)), zero-pad to size×size, pad//2 left/top."""
        h, w = x.shape[-2:]
        scale = self.size / float(max(h, w))
        nh, nw = (round(h * scale), round(w * scale)) if scale != 1.0 else (h, w)
        x = self._resize(x, nh, nw)
        ph, pw = self.size - nh, self.size - nw
        if ph or pw:
            x = F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), value=0.0)
        return x

    def _resized_size(self, h: int, w: int) -> tuple[int, int]:
        """The size before the crop: `size`×`size` (squash) or the short side at `size`."""
        if self.mode == "squash":
            return self.size, self.size
        if h <= w:
            return self.size, int(self.size * w / h)
        return int(self.size * h / w), self.size

    def _centre_crop(self, x: torch.Tensor) -> torch.Tensor:
        """Centre crop to `crop`×`crop`; torchvision pads with zeros when the image is smaller than the crop."""
        c = self.crop
        nh, nw = x.shape[-2:]
        if nh < c or nw < c:
            ph, pw = max(c - nh, 0), max(c - nw, 0)
            x = F.pad(x, (pw // 2, (pw + 1) // 2, ph // 2, (ph + 1) // 2), value=0)
            nh, nw = x.shape[-2:]
        if self.crop_rule == "torchvision":
            top, left = int(round((nh - c) / 2.0)), int(round((nw - c) / 2.0))
        else:
            top, left = (nh - c) // 2, (nw - c) // 2
        return x[..., top : top + c, left : left + c]

    def batch(self, images: Sequence[np.ndarray | torch.Tensor], device: str, dtype: torch.dtype) -> torch.Tensor:
        """Images of one shape are resized together (an audit's variants share their base image's size).

        uint8 H×W×3 torch tensors (the device path, scoreaudit.plugins.gpu) are preprocessed where they
        are, after one move to `device` (a no-op when they are already there).
        """
        if len(images) and isinstance(images[0], torch.Tensor):
            from scoreaudit.plugins.gpu.preprocess import batch as device_batch

            tensors: list[Any] = list(images)  # the first is a tensor: all are
            return device_batch(self, [t.to(device) for t in tensors], dtype)
        arrs = [self._as_rgb(im) for im in images]
        by_shape: dict[tuple, list[int]] = {}
        for i, a in enumerate(arrs):
            by_shape.setdefault(a.shape, []).append(i)
        if len(by_shape) == 1:
            return self.group(arrs, device).to(dtype)
        out = torch.empty((len(arrs), 3, self.crop, self.crop), device=device, dtype=torch.float32)
        for idx in by_shape.values():
            out[idx] = self.group([arrs[i] for i in idx], device)
        return out.to(dtype)


class PromptCache:
    """Per-prompt results (text embeddings, tokens) kept across batches, least recently used dropped.

    An audit scores many variants of an image under one prompt, so each prompt's text
    is encoded once; the bound keeps per-image prompts of a huge manifest from filling memory.
    """

    def __init__(self, encode: Callable[[list], Sequence], limit: int = 8192):
        self.encode, self.limit = encode, limit
        self._d: OrderedDict[Hashable, object] = OrderedDict()

    def get(self, keys: Sequence[Hashable]) -> list:
        """The cached value of every key, encoding the missing ones in one call."""
        new = list(dict.fromkeys(k for k in keys if k not in self._d))
        if new:
            for k, v in zip(new, self.encode(new)):
                self._d[k] = v
        out = []
        for k in keys:
            self._d.move_to_end(k)
            out.append(self._d[k])
        while len(self._d) > max(self.limit, len(keys)):
            self._d.popitem(last=False)
        return out

    def __len__(self) -> int:
        return len(self._d)


def chunks(n: int, size: int):
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def unique_prompts(prompts: Sequence[str] | None, n: int, scorer: str) -> tuple[list[str], list[int]]:
    """Distinct prompts and, per image, the index of its prompt (text is encoded once per prompt)."""
    if prompts is None or len(prompts) != n:
        raise ValueError(f"{scorer} needs one prompt per image (got {0 if prompts is None else len(prompts)} for {n})")
    order: dict[str, int] = {}
    idx = []
    for p in prompts:
        if not isinstance(p, str):
            raise ValueError(f"{scorer}: prompt {p!r} is not text")
        idx.append(order.setdefault(p, len(order)))
    return list(order), idx


def run_batched(
    images: Sequence[np.ndarray], batch_size: int, fn: Callable[[slice], torch.Tensor]
) -> np.ndarray:
    """Call `fn` on slices of at most `batch_size` images and return float64 scores."""
    out = np.empty(len(images), dtype=np.float64)
    for sl in chunks(len(images), batch_size):
        out[sl] = fn(sl).detach().float().cpu().numpy().reshape(-1)
    return out


def frozen(*modules) -> None:
    """No gradients for a scorer's weights: the probes differentiate the score only with respect to the image."""
    for m in modules:
        for p in m.parameters():
            p.requires_grad_(False)


def plain(t: torch.Tensor) -> torch.Tensor:
    """A cached tensor made in inference mode, as an ordinary one (autograd may save it for backward)."""
    return t.clone() if t.is_inference() else t
