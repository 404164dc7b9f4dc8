"""Receiver noise: PSD and power conversions, mean SNR, and Gaussian noise draws.

SNR convention (biased_fl §2.5): with transmit power P over bandwidth B, the energy per channel use
(symbol) is ``E_s = P/B`` and the noise energy per symbol is ``N0`` (W/Hz = J), so the mean received
SNR per symbol is ``Lambda E_s / N0 = P Lambda / (N0 B)``. dp_perk_airfl §2.2 writes the same thing as
``P Lambda / sigma^2`` with ``sigma^2 = N0 B`` (-173 dBm/Hz x 20 MHz = 1e-13 W).

Real vs complex noise: a complex draw ``CN(0, v)`` has variance ``v/2`` per real part. Which one a
scheme adds to a real gradient is a per-paper choice (biased_fl: real ``N(0, N0)`` by default;
dp_perk_airfl: the real part of complex noise, variance ``||w||^2 sigma^2 / 2``; lapa: real, full
variance), so ``awgn`` offers both and the scheme decides.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .pathloss import _validated, dbm_to_watt

__all__ = ["noise_psd_w_per_hz", "noise_power_w", "energy_per_symbol", "mean_snr", "awgn"]


def noise_psd_w_per_hz(n0_dbm_per_hz) -> torch.Tensor:
    """Noise PSD in W/Hz (= J) from dBm/Hz; -161 dBm/Hz = 7.943e-20 W/Hz (biased_fl §2.5)."""
    return dbm_to_watt(n0_dbm_per_hz)  # N0 = 10^((dBm/Hz - 30)/10)


def noise_power_w(n0_dbm_per_hz, bandwidth_hz) -> torch.Tensor:
    """Noise power ``sigma^2 = N0 B`` in watts (dp_perk_airfl §2.2)."""
    b = _validated(bandwidth_hz, "bandwidth_hz", low=0.0, strict=True)
    return noise_psd_w_per_hz(n0_dbm_per_hz) * b  # sigma^2 = N0 * B


def energy_per_symbol(power_w, bandwidth_hz) -> torch.Tensor:
    """Energy per channel use ``E_s = P/B`` in joules (biased_fl §2.5: 1 mW / 1 MHz = 1e-9 J)."""
    p = _validated(power_w, "power_w", low=0.0)
    b = _validated(bandwidth_hz, "bandwidth_hz", low=0.0, strict=True)
    return p / b  # biased_fl §2.5: E_s = P_tx / B


def mean_snr(*, power_w, path_gain, n0_dbm_per_hz, bandwidth_hz) -> torch.Tensor:
    """Mean received SNR per symbol (linear): ``Lambda E_s / N0 = P Lambda / (N0 B)`` (biased_fl §2.3)."""
    lam = _validated(path_gain, "path_gain", low=0.0)
    es = energy_per_symbol(power_w, bandwidth_hz)
    return lam * es / noise_psd_w_per_hz(n0_dbm_per_hz)  # biased_fl §2.3: Lambda_m E_s / N0


def awgn(shape: Sequence[int], variance, generator: torch.Generator, complex: bool = False,
         dtype: torch.dtype | None = None) -> torch.Tensor:
    """Zero-mean Gaussian noise of total variance ``variance`` per entry.

    Real: ``N(0, v)`` (float64). Complex: ``CN(0, v)``, i.e. ``v/2`` per real part (complex128).
    ``variance`` may be a tensor broadcastable to ``shape`` (e.g. per-round levels ``[T, 1]``).
    Draw order: one ``torch.randn(shape)`` (real) or ``torch.randn(*shape, 2)`` (real, imaginary),
    float64, then cast to ``dtype``.
    """
    var = _validated(variance, "variance", low=0.0)
    shape = tuple(shape)
    if complex:
        z = torch.randn((*shape, 2), generator=generator, dtype=torch.float64)
        std = torch.sqrt(var / 2.0)  # CN(0, v): v/2 per real dimension
        out = torch.complex(z[..., 0] * std, z[..., 1] * std)
        return out.to(dtype or torch.complex128)
    z = torch.randn(shape, generator=generator, dtype=torch.float64)
    return (z * torch.sqrt(var)).to(dtype or torch.float64)
