"""Rayleigh block fading: SISO coefficients, their powers, and SIMO (multi-antenna BS) matrices.

Model (biased_fl §2.4, dp_perk_airfl §2.2, cdpb §2.2): ``h ~ CN(0, Lambda)`` per device and round,
independent across devices, i.i.d. across rounds, constant within a round; ``|h|^2 = Lambda Exp(1)``
and ``P(|h|^2 >= x) = exp(-x/Lambda)``. ``path_gain`` is the mean power gain Lambda (linear, not dB).
For cdpb (no path loss, ``h = |c|^2`` with mean h_bar) pass ``path_gain = h_bar``; for block fading
that is constant over training (lapa) use ``num_rounds = 1``.

Draw order (bit-identical for a seed; documented so other code can reproduce it):
every function makes exactly one ``torch.randn`` call in float64 of shape
``(num_rounds, *path_gain.shape, 2)`` (SISO) or ``(num_rounds, *path_gain.shape, num_antennas, 2)``
(SIMO), i.e. round-major, then device, then antenna, then (real, imaginary). Hence

* ``rayleigh_power(...)`` equals ``abs(rayleigh_siso(...))**2`` for the same generator state (up to
  float rounding), so schemes that need only |h|^2 and schemes that need h see the same channels;
* ``rayleigh_mimo(..., num_antennas=1)[:, 0, :]`` equals ``rayleigh_siso(...)``;
* the complex64 option casts the same float64 draws, so it matches complex128 to single precision.
"""

from __future__ import annotations

import torch

from .pathloss import _validated

__all__ = ["power_from_pairs", "rayleigh_siso", "rayleigh_power", "rayleigh_mimo", "rayleigh_tail"]


def _check_positive_int(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")


def _gaussian_pairs(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Standard normal draws of ``shape + (2,)`` (real, imaginary), float64, one call."""
    return torch.randn((*shape, 2), generator=generator, dtype=torch.float64)


def rayleigh_siso(path_gain, num_rounds: int, generator: torch.Generator,
                  dtype: torch.dtype = torch.complex128) -> torch.Tensor:
    """Complex SISO channels ``h[t, n] ~ CN(0, Lambda_n)``, shape ``[T, *path_gain.shape]``.

    Each real and imaginary part is ``N(0, Lambda/2)``, so ``E|h|^2 = Lambda`` (biased_fl §2.4).
    """
    lam = _validated(path_gain, "path_gain", low=0.0)
    _check_positive_int(num_rounds, "num_rounds")
    z = _gaussian_pairs((num_rounds, *lam.shape), generator)
    std = torch.sqrt(lam / 2.0)  # CN(0, Lambda): variance Lambda/2 per real dimension
    return torch.complex(z[..., 0] * std, z[..., 1] * std).to(dtype)


def rayleigh_power(path_gain, num_rounds: int, generator: torch.Generator) -> torch.Tensor:
    """Channel power gains ``|h[t, n]|^2 = Lambda_n E``, ``E ~ Exp(1)``, float64 ``[T, *path_gain.shape]``.

    Built from the same Gaussian draws as ``rayleigh_siso`` (``E = (a^2 + b^2)/2``), see module doc.
    """
    lam = _validated(path_gain, "path_gain", low=0.0)
    _check_positive_int(num_rounds, "num_rounds")
    return power_from_pairs(lam, _gaussian_pairs((num_rounds, *lam.shape), generator))


def power_from_pairs(path_gain: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``|h|^2 = Lambda (a^2 + b^2)/2`` from the Gaussian pairs z ``[..., N, 2]`` of
    ``rayleigh_power`` (path_gain float64 >= 0, as it validates it)."""
    return path_gain * 0.5 * (z[..., 0] ** 2 + z[..., 1] ** 2)  # biased_fl §2.4: Lambda Exp(1)


def rayleigh_mimo(path_gain, num_antennas: int, num_rounds: int, generator: torch.Generator,
                  dtype: torch.dtype = torch.complex128) -> torch.Tensor:
    """SIMO uplink matrices ``H[t, :, n] = h_n ~ CN(0, Lambda_n I_m)`` (dp_perk_airfl §2.2, lapa §2.3).

    ``path_gain`` is ``[*batch, N]``; the result is ``[T, *batch, m, N]`` (column n is device n's
    channel vector to the m BS antennas), entries independent.
    """
    lam = _validated(path_gain, "path_gain", low=0.0)
    _check_positive_int(num_antennas, "num_antennas")
    _check_positive_int(num_rounds, "num_rounds")
    if lam.ndim == 0:
        raise ValueError("path_gain must have a device axis [..., N]")
    z = _gaussian_pairs((num_rounds, *lam.shape, num_antennas), generator)  # [T, *b, N, m, 2]
    std = torch.sqrt(lam / 2.0).unsqueeze(-1)  # CN(0, Lambda_n) per antenna
    h = torch.complex(z[..., 0] * std, z[..., 1] * std)  # [T, *b, N, m]
    return h.transpose(-1, -2).to(dtype)


def rayleigh_tail(threshold_power, path_gain) -> torch.Tensor:
    """``P(|h|^2 >= x) = exp(-x/Lambda)`` for ``h ~ CN(0, Lambda)`` (biased_fl §2.4).

    This is the participation probability of a threshold rule: digital ``beta_m = exp(-rho_m^2/Lambda_m)``
    (biased_fl §2.6) and OTA ``beta^A_m = exp(-c_m gamma_m^2)`` with ``x = G^2 gamma^2/(d E_s)`` (§2.5).
    """
    x = _validated(threshold_power, "threshold_power", low=0.0)
    lam = _validated(path_gain, "path_gain", low=0.0, strict=True)
    return torch.exp(-x / lam)  # biased_fl §2.4: P(|h|^2 >= x) = exp(-x/Lambda)

