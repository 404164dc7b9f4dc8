"""Device placement around a base station (BS) and the device-BS distances.

All positions are float64 tensors in metres, coordinates on the last axis (``[..., N, D]``, D = 2
or 3); distances are ``[..., N]``. Leading batch axes (e.g. trials) are allowed everywhere.
Randomness comes only from the ``torch.Generator`` passed in, so a seed fixes the placement.

Which paper uses which placement:

* biased_fl: deterministic equal-area quantile radii by default (``quantile_radii``),
  ``placement: random`` = ``uniform_disc``; R = 3000 m (OTA) or 1200 m (digital); BS at the centre.
* dp_perk_airfl: ``r = 1000 sqrt(U)`` per device, drawn once per trial, clamped
  ``r >= 1 m`` (``uniform_disc(...).clamp_min(1.0)``; note ``min_radius`` is a different law).
* lapa: devices uniform in two rectangles at z = 0, BS at (-50, 0, 10) m, 3-D distance
  (``uniform_box`` + ``distance_to_bs``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .pathloss import _validated

__all__ = [
    "uniform_disc",
    "uniform_box",
    "quantile_radii",
    "fixed_coordinates",
    "distance_to_bs",
]


def _check_count(num_devices: int) -> None:
    if isinstance(num_devices, bool) or not isinstance(num_devices, int) or num_devices < 1:
        raise ValueError(f"num_devices must be a positive int; got {num_devices!r}")


def _radii_pair(radius, min_radius) -> tuple[torch.Tensor, torch.Tensor]:
    big = _validated(radius, "radius", low=0.0, strict=True)
    small = _validated(min_radius, "min_radius", low=0.0)
    if (small >= big).any():
        raise ValueError("min_radius must be smaller than radius")
    return big, small


def uniform_disc(num_devices: int, *, radius, generator: torch.Generator, min_radius=0.0,
                 batch_shape: Sequence[int] = (), return_coords: bool = False) -> torch.Tensor:
    """Devices uniform in area on the disc (annulus if ``min_radius > 0``) around a BS at the origin.

    Radius by inverse CDF: ``r = sqrt(U (R^2 - r0^2) + r0^2)``, so ``P(r <= x) = (x^2 - r0^2)/(R^2 - r0^2)``.
    ``radius``/``min_radius`` are scalars or tensors of shape broadcastable to ``batch_shape``
    (one disc per batch element). Returns distances ``[*batch, N]``, or with ``return_coords`` the
    points ``[*batch, N, 2]`` (x, y).

    Draw order: one ``torch.rand(*batch, N)`` for the radii, then (only with ``return_coords``) one
    ``torch.rand(*batch, N)`` for the angles, so distances do not depend on ``return_coords``.
    """
    _check_count(num_devices)
    big, small = _radii_pair(radius, min_radius)
    # numpy's rule (the same as torch's): torch.broadcast_shapes imports torch.fx and sympy on
    # first use, ~0.4 s of every job that places devices.
    batch = np.broadcast_shapes(tuple(batch_shape), tuple(big.shape), tuple(small.shape))
    shape = (*batch, num_devices)
    u = torch.rand(shape, generator=generator, dtype=torch.float64)
    big2, small2 = (big ** 2).unsqueeze(-1), (small ** 2).unsqueeze(-1)
    r = torch.sqrt(u * (big2 - small2) + small2)  # area-uniform inverse CDF
    if not return_coords:
        return r
    phi = 2.0 * torch.pi * torch.rand(shape, generator=generator, dtype=torch.float64)
    return torch.stack((r * torch.cos(phi), r * torch.sin(phi)), dim=-1)


def uniform_box(num_devices: int, low: Sequence[float], high: Sequence[float],
                generator: torch.Generator, batch_shape: Sequence[int] = ()) -> torch.Tensor:
    """Devices uniform in the axis-aligned box ``low <= p <= high`` (``low[i] == high[i]`` pins an axis).

    Returns points ``[*batch, N, D]``, D = ``len(low)``; one ``torch.rand(*batch, N, D)`` draw.
    Used for lapa's rectangular regions.
    """
    _check_count(num_devices)
    lo = _validated(low, "low")
    hi = _validated(high, "high")
    if lo.ndim != 1 or lo.shape != hi.shape:
        raise ValueError("low and high must be 1-D sequences of equal length")
    if (hi < lo).any():
        raise ValueError("high must be >= low on every axis")
    u = torch.rand((*batch_shape, num_devices, lo.numel()), generator=generator, dtype=torch.float64)
    return lo + u * (hi - lo)


def quantile_radii(num_devices: int, *, radius, min_radius=0.0) -> torch.Tensor:
    """Deterministic equal-area quantile radii ``r_m = R sqrt((m - 0.5)/N)``, m = 1..N (biased_fl §2.3).

    Each device sits at the median radius of its own equal-area ring, increasing with m. With
    ``min_radius`` r0 the annulus version ``sqrt((m - 0.5)/N (R^2 - r0^2) + r0^2)``. ``radius`` may be a
    tensor ``[*batch]``; the result is ``[*batch, N]``.
    """
    _check_count(num_devices)
    big, small = _radii_pair(radius, min_radius)
    q = (torch.arange(1, num_devices + 1, dtype=torch.float64) - 0.5) / num_devices
    big2, small2 = (big ** 2).unsqueeze(-1), (small ** 2).unsqueeze(-1)
    return torch.sqrt(q * (big2 - small2) + small2)  # r_m = R sqrt((m-0.5)/N)


def fixed_coordinates(coords) -> torch.Tensor:
    """User-given device positions as a validated float64 tensor ``[..., N, D]`` (D = 1, 2 or 3)."""
    c = _validated(coords, "coords")
    if c.ndim < 2 or not 1 <= c.shape[-1] <= 3:
        raise ValueError(f"coords must have shape [..., N, D] with D in 1..3; got {tuple(c.shape)}")
    if not torch.isfinite(c).all():
        raise ValueError("coords must be finite")
    return c


def distance_to_bs(coords, bs_position=None) -> torch.Tensor:
    """Euclidean device-BS distances ``[..., N]`` from points ``[..., N, D]``; BS at the origin by default.

    ``bs_position`` is a length-D point (e.g. lapa's (-50, 0, 10) m) or a tensor broadcastable to
    ``[..., 1, D]`` for per-batch BS positions.
    """
    c = fixed_coordinates(coords)
    if bs_position is None:
        return torch.linalg.vector_norm(c, dim=-1)
    bs = _validated(bs_position, "bs_position")
    if bs.shape[-1] != c.shape[-1]:
        raise ValueError("bs_position and coords must have the same dimension D")
    if bs.ndim > 1:
        bs = bs.unsqueeze(-2)
    return torch.linalg.vector_norm(c - bs, dim=-1)
