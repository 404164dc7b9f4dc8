"""Digital uplink: Shannon rates, outage, and TDMA upload latency.

Rates are spectral efficiencies in bit/s/Hz; a device with rate R on bandwidth B uploads L bits in
``L / (B R)`` seconds. In TDMA every transmitting device uses the full band in its own slot, so the
round latency is the sum of the slot lengths (Biased FL paper, eq. 17).

Our reading of Biased FL's digital figures (Sec. V-D): every scheme is *timed* by capacity,
``C_{m,t} = log2(1 + E_s |h_{m,t}|^2 / N0)`` (pass ``rates`` of shape ``[T, N]``), while the fixed rate
``R_m = log2(1 + E_s rho_m^2 / N0)`` (no outage above the threshold) enters only the design's budget.
"""

from __future__ import annotations

import math

import torch

from .pathloss import _validated

__all__ = [
    "shannon_rate",
    "capacity_bits",
    "outage",
    "outage_probability_rayleigh",
    "upload_latency",
    "tdma_round_latency",
]


def shannon_rate(snr) -> torch.Tensor:
    """Capacity ``log2(1 + snr)`` in bit/s/Hz for a linear SNR >= 0."""
    s = _validated(snr, "snr", low=0.0)
    return torch.log2(1.0 + s)  # Shannon: C = log2(1 + SNR); Biased FL's R_m and C_{m,t}


def capacity_bits(snr, *, bandwidth_hz, duration_s) -> torch.Tensor:
    """Bits deliverable at capacity in ``duration_s`` seconds over ``bandwidth_hz``: ``B t log2(1 + snr)``."""
    b = _validated(bandwidth_hz, "bandwidth_hz", low=0.0, strict=True)
    t = _validated(duration_s, "duration_s", low=0.0)
    return b * t * shannon_rate(snr)


def outage(snr_instantaneous, rate) -> torch.Tensor:
    """Outage indicator ``log2(1 + snr) < R`` (bool, broadcast shape): the fixed rate exceeds capacity."""
    r = _validated(rate, "rate", low=0.0)
    return shannon_rate(snr_instantaneous) < r


def outage_probability_rayleigh(mean_snr, rate) -> torch.Tensor:
    """Closed-form Rayleigh outage ``P(log2(1 + snr E) < R) = 1 - exp(-(2^R - 1)/mean_snr)``, E ~ Exp(1).

    Follows from ``P(|h|^2 >= x) = exp(-x/Lambda)`` (biased_fl §2.4) with the SNR threshold ``2^R - 1``.
    """
    s = _validated(mean_snr, "mean_snr", low=0.0, strict=True)
    r = _validated(rate, "rate", low=0.0)
    snr_threshold = torch.expm1(r * math.log(2.0))  # 2^R - 1, accurate for small R
    return -torch.expm1(-snr_threshold / s)  # 1 - exp(-(2^R - 1)/mean_snr)


def upload_latency(payload_bits, *, rate, bandwidth_hz) -> torch.Tensor:
    """Slot length ``L / (B R)`` seconds (biased_fl §2.6); ``inf`` where the rate is 0."""
    bits = _validated(payload_bits, "payload_bits", low=0.0)
    r = _validated(rate, "rate", low=0.0)
    b = _validated(bandwidth_hz, "bandwidth_hz", low=0.0, strict=True)
    return bits / (b * r)  # biased_fl §2.6: tau_{t,m} = L_m / (B R_m)


def tdma_round_latency(payload_bits, rates, *, bandwidth_hz, transmitting) -> torch.Tensor:
    """TDMA round latency ``sum_n chi[t, n] L_n / (B R_{t,n})``, one value per round ``[T]``.

    ``payload_bits`` ``[N]`` (or ``[T, N]``), ``rates`` ``[N]`` fixed or ``[T, N]`` per round (capacity
    mode), ``transmitting`` a bool mask ``[T, N]``. Silent devices cost nothing even where their rate is
    0 (no ``0 * inf``). biased_fl §2.6 eq. 17 (its expectation is ``sum beta_m L_m / (B R_m)``).
    """
    mask = torch.as_tensor(transmitting)
    if mask.dtype != torch.bool:
        raise ValueError("transmitting must be a bool mask [T, N]")
    slot = upload_latency(payload_bits, rate=rates, bandwidth_hz=bandwidth_hz)
    slot, mask = torch.broadcast_tensors(slot, mask)
    if (mask & torch.isinf(slot)).any():
        raise ValueError("a transmitting device has rate 0 (infinite slot)")
    return torch.where(mask, slot, torch.zeros((), dtype=slot.dtype)).sum(dim=-1)
