"""Differentiable torch twins of the classical scorers a probe may optimise (`score_tensor`).

A probe (runtime/probe.py) calls `score_tensor(images, prompts)` with images
(N, 3, H, W) in 0..1 and follows the gradient. The arithmetic is
classical.py's on the same pixels (×255, BT.601 luma, 8×8 orthonormal
block DCT-II, AC energy pooled over blocks), so a probe against
`incompressibility` optimises the number the classical scorer reports — the
distribution-free baseline of the seed paper's probe. Imported only when a
probe runs: the classical path needs no torch.
"""

from __future__ import annotations

import torch

from scoreaudit.plugins.scorers.classical import BT601, DCT_BLOCK, HIGH_FREQ_CUTOFF, dct_matrix


def _work_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 stays float64 (the equality test); half precisions are lifted to float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def luma601_tensor(images: torch.Tensor) -> torch.Tensor:
    """BT.601 luma in 0..255 of (N, 3, H, W) images in 0..1: (N, H, W), as classical.luma601 on uint8 pixels."""
    x = images[:, :3].to(_work_dtype(images)) * 255.0
    w = torch.as_tensor(BT601, dtype=x.dtype, device=x.device)
    return torch.einsum("nchw,c->nhw", x, w)


def high_frequency_share_tensor(grey: torch.Tensor, cutoff: int = HIGH_FREQ_CUTOFF) -> torch.Tensor:
    """classical.high_frequency_share of a stack (N, H, W), with gradients (0 for a flat image, as there)."""
    n, h, w = grey.shape
    hb, wb = h // DCT_BLOCK, w // DCT_BLOCK
    if hb == 0 or wb == 0:
        return grey.new_zeros(n)
    blocks = grey[:, : hb * DCT_BLOCK, : wb * DCT_BLOCK].reshape(n, hb, DCT_BLOCK, wb, DCT_BLOCK)
    c = torch.as_tensor(dct_matrix(), dtype=grey.dtype, device=grey.device)
    coef = torch.einsum("ui,nbiwj,vj->nbwuv", c, blocks, c)
    energy = (coef ** 2).sum(dim=(1, 2))  # (n, 8, 8)
    u, v = torch.meshgrid(torch.arange(DCT_BLOCK), torch.arange(DCT_BLOCK), indexing="ij")
    high_mask = ((u + v) >= cutoff).to(grey.device)
    ac = energy.reshape(n, -1)[:, 1:].sum(dim=1)
    high = energy[:, high_mask].sum(dim=1)
    flat = ac <= 1e-9 * DCT_BLOCK * DCT_BLOCK * hb * wb
    # the divisor is kept positive where the image is flat, so the unused branch has no NaN gradient
    return torch.where(flat, torch.zeros_like(ac), high / torch.where(flat, torch.ones_like(ac), ac))


def incompressibility_tensor(images: torch.Tensor) -> torch.Tensor:
    """The `incompressibility` score of (N, 3, H, W) images in 0..1, differentiable in the pixels."""
    return high_frequency_share_tensor(luma601_tensor(images))
