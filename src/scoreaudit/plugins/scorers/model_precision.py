"""Which precision a model scorer's forwards run at, decided without importing torch.

The runtime keys cached scores by it (bf16 autocast on a GPU is not fp32 on a CPU) before
any model is built, so this module stays pure Python; `model_torch.Precision` turns the
name into the autocast context the forwards run in.
"""

from __future__ import annotations

from collections.abc import Mapping

from scoreaudit.plugins.base import ScorerUnavailable

PRECISIONS = ("fp32", "fp16", "bf16")


def device_type(device: str) -> str:
    """"cuda:1" → "cuda" (torch.autocast's device type)."""
    return str(device).split(":", 1)[0]


def choose_precision(device: str, ctor_precision: str | None, param_precision: str | None,
                     auto: Mapping[str, str]) -> str:
    """The scorer's `precision:` wins over the runtime's; "auto" is the scorer's own choice per
    device type (`auto`, e.g. {"cuda": "bf16"}), and fp32 where it names none."""
    choice = param_precision if param_precision not in (None, "auto") else ctor_precision
    if choice in (None, "auto"):
        return auto.get(device_type(device), "fp32")
    if choice not in PRECISIONS:
        raise ScorerUnavailable(f"unknown precision {choice!r}: use auto, fp32, fp16 or bf16")
    return choice
