"""Differentiable torch twins of the classical scorers a probe may optimise (`score_tensor`).

A probe (runtime/probe.py) calls `score_tensor(images, prompts)` with images
(N, 3, H, W) in 0..1 and follows the gradient. The arithmetic is
classical.py's on the same pixels (×255, BT.601 luma, 8×8 orthonormal
block DCT-II, AC energy pooled over blocks), so a probe against
`incompressibility` optimises the number the classical scorer reports — the
distribution-free baseline of the seed paper's probe. Imported only when a
probe runs: the classical path needs no torch. The constants (luma weights, DCT
matrix, block size, cutoff) are classical.py's, passed in by its caller, so
this module imports nothing of it (one direction of import).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def _work_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 stays float64 (the equality test); half precisions are lifted to float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def luma_tensor(images: torch.Tensor, weights: Sequence[float]) -> torch.Tensor:
    """Luma in 0..255 of (N, 3, H, W) images in 0..1: (N, H, W), as classical.luma601 on uint8 pixels."""
    x = images[:, :3].to(_work_dtype(images)) * 255.0
    w = torch.as_tensor(np.asarray(weights, float), dtype=x.dtype, device=x.device)
    return torch.einsum("nchw,c->nhw", x, w)


def high_frequency_share_tensor(grey: torch.Tensor, dct: np.ndarray, cutoff: int) -> torch.Tensor:
    """classical.high_frequency_share of a stack (N, H, W), with gradients (0 for a flat image, as there);
    `dct` is the orthonormal DCT-II matrix of one block (its size is the block's)."""
    block = int(dct.shape[0])
    n, h, w = grey.shape
    hb, wb = h // block, w // block
    if hb == 0 or wb == 0:
        return grey.new_zeros(n)
    blocks = grey[:, : hb * block, : wb * block].reshape(n, hb, block, wb, block)
    c = torch.as_tensor(dct, dtype=grey.dtype, device=grey.device)
    coef = torch.einsum("ui,nbiwj,vj->nbwuv", c, blocks, c)
    energy = (coef ** 2).sum(dim=(1, 2))  # (n, 8, 8)
    u, v = torch.meshgrid(torch.arange(block), torch.arange(block), indexing="ij")
    high_mask = ((u + v) >= cutoff).to(grey.device)
    ac = energy.reshape(n, -1)[:, 1:].sum(dim=1)
    high = energy[:, high_mask].sum(dim=1)
    flat = ac <= 1e-9 * block * block * hb * wb
    # the divisor is kept positive where the image is flat, so the unused branch has no NaN gradient
    return torch.where(flat, torch.zeros_like(ac), high / torch.where(flat, torch.ones_like(ac), ac))


def incompressibility_tensor(images: torch.Tensor, weights: Sequence[float], dct: np.ndarray,
                             cutoff: int) -> torch.Tensor:
    """The `incompressibility` score of (N, 3, H, W) images in 0..1, differentiable in the pixels."""
    return high_frequency_share_tensor(luma_tensor(images, weights), dct, cutoff)
