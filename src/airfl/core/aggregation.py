"""Aggregation primitives shared by schemes: per-client clipping and weighted sums, batched.

Clipping per client and noise on the aggregate are separate composable steps (pfl-research's
mechanism = clip + add noise), so a scheme composes the two it needs.
"""

from __future__ import annotations

import torch


def clip_by_norm(updates: torch.Tensor, clip_norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale each row to L2 norm <= clip_norm: g / max(1, ||g|| / C). Returns (clipped, norms)."""
    norms = torch.linalg.vector_norm(updates, dim=1)
    factor = torch.clamp(norms / clip_norm, min=1.0)
    return updates / factor.unsqueeze(1), norms


def masked_weighted_mean(updates: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor
                         ) -> torch.Tensor:
    """sum_{m in mask} w_m g_m / sum_{m in mask} w_m, or zeros when the mask is empty."""
    w = weights.to(updates.dtype) * mask.to(updates.dtype)
    total = w.sum()
    if total <= 0:
        return torch.zeros(updates.shape[1], dtype=updates.dtype, device=updates.device)
    return (w / total) @ updates


def gaussian_noise(dim: int, std: float, generator: torch.Generator, dtype=torch.float32
                   ) -> torch.Tensor:
    """Real Gaussian noise N(0, std^2 I_dim) from a given stream."""
    return torch.randn(dim, generator=generator, dtype=torch.float64).to(dtype) * std
