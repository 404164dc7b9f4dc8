"""Truncated channel inversion, the analog (OTA) power-control primitive shared by several papers.

A device with update g, pre-scaler (scale) gamma and channel h sends ``x = gamma g / h`` so that the
signals add up aligned at the receiver, but only if its channel is strong enough: inverting a deep
fade would need unbounded energy (``E[1/|h|^2] = inf`` under Rayleigh). Zhu, Wang, Huang,
"Broadband analog aggregation for low-latency federated edge learning", IEEE TWC 2020, introduced
this truncation; biased_fl uses it as (paper eqs. 7-8)

    x_{m,t} = chi_{m,t} gamma_m g_{m,t} / h_{m,t},   chi_{m,t} = 1{ |h_{m,t}| >= G gamma_m / sqrt(d E_s) },

which guarantees ``||x||^2 <= d E_s`` whenever ``||g|| <= G``. Here thresholds are on the channel
*power* ``|h|^2`` (the amplitude rule squared), matching ``rayleigh_power``; the participation
probability is then ``rayleigh_tail(threshold, Lambda) = exp(-G^2 gamma^2 / (d Lambda E_s))``.
cdpb's truncation ``h >= h_th`` and lapa/ota_fd's ``h_abs_floor`` are the same primitive.
"""

from __future__ import annotations

import torch

from .pathloss import _validated

__all__ = ["inversion_threshold_power", "truncated_inversion_mask", "inversion_energy"]


def inversion_threshold_power(*, grad_bound, scale, dim: int, energy_per_symbol) -> torch.Tensor:
    """Power threshold ``(G gamma)^2 / (d E_s)`` of biased_fl eq. 8 (its amplitude rule, squared).

    ``grad_bound`` G and ``scale`` gamma broadcast (e.g. gamma per device ``[N]``); ``dim`` is d, the
    number of channel uses per upload; ``energy_per_symbol`` E_s in joules.
    """
    g = _validated(grad_bound, "grad_bound", low=0.0)
    gamma = _validated(scale, "scale", low=0.0)
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive int; got {dim!r}")
    es = _validated(energy_per_symbol, "energy_per_symbol", low=0.0, strict=True)
    return (g * gamma) ** 2 / (dim * es)  # biased_fl eq. 8: |h| >= G gamma / sqrt(d E_s), squared


def truncated_inversion_mask(channel_power, threshold) -> torch.Tensor:
    """Participation mask ``|h|^2 >= threshold`` (bool, broadcast of ``[T, N]`` or ``[N]`` with ``[N]``).

    ``threshold`` is a channel-power threshold (same units as ``channel_power``), e.g. from
    ``inversion_threshold_power`` (biased_fl eq. 8) or a digital ``rho_m^2`` (biased_fl eq. 12).
    """
    p = _validated(channel_power, "channel_power", low=0.0)
    th = _validated(threshold, "threshold", low=0.0)
    return p >= th  # biased_fl eq. 8 / eq. 12: chi = 1{|h|^2 >= threshold}


def inversion_energy(*, update_norm, scale, channel_power) -> torch.Tensor:
    """Energy ``||x||^2 = gamma^2 ||g||^2 / |h|^2`` of the inverted signal ``x = gamma g / h`` (eq. 7).

    ``update_norm`` is ``||g||`` (not squared). Compare with the budget ``d E_s`` to check the
    energy constraint; ``inf`` where the channel power is 0.
    """
    g = _validated(update_norm, "update_norm", low=0.0)
    gamma = _validated(scale, "scale", low=0.0)
    p = _validated(channel_power, "channel_power", low=0.0)
    return gamma ** 2 * g ** 2 / p  # biased_fl eq. 7: ||gamma g / h||^2
