"""LAPA's per-device Gaussian mechanism (uniform DP, Benchmark 3, and LAPA's round 1, where
both split eps_T / T equally, eq. 16) as an auditable mechanism.

Runs :meth:`.schemes.LapaScheme.aggregate` (clip to C, eq. 17; artificial noise sigma_k =
c Delta s_k / eps_k, eq. 19; the practical channel's noise sigma_ch,k; the weighted sum, eq. 2)
with the design its ``design`` step makes for trial 0 of ``lapa.radio``.

* Neighbours (the record's sensitivity 2C): the canary device's clipped
  pseudo-gradient +C e_0 ("present") or -C e_0 ("absent", the opposite worst case); the other
  devices' updates 0. The statistic is coordinate 0 of the released server update (eq. 3).
* Conditioning: the trial's layout and channels (block fading drawn once per trial, the
  design), round 1 (fresh state: the equal split); given them the release is linear with i.i.d.
  Gaussian noise per coordinate, so the draws are batched. The canary is the device with the
  largest weight (the least diluted signal) among the selected ones.
* Claimed: the record's GaussianEvent (the smallest total noise std over the devices over 2C,
  parallel composition), improved conversion at lapa.training.delta. As simulated: the same
  mechanism seen through the server update, which weights each device by G_k (eq. 2) and adds
  every device's noise: z = sqrt(sum_k G_k^2 s_k^2) / (2 C G_canary), exact (no bound).
* Settings: ``audit.lapa`` (model dimension d, channel) and lapa.training.nu_grid.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from airfl.core.audit_draws import linear_sampler
from airfl.params.declare import resolve
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.papers.lapa.mechanism import gaussian_constant, sensitivity
from airfl.papers.lapa.schemes import LapaScheme
from airfl.privacy import GaussianEvent, eps_from_rdp, event_from_dict, event_rdp
from airfl.privacy.auditing import AuditableMechanism
from airfl.privacy.rdp import DEFAULT_ORDERS
from airfl.runtime.rng import RoundStreams


def _eps(event, delta: float) -> float:
    return float(eps_from_rdp(DEFAULT_ORDERS, event_rdp(event), delta)[0])


def _mechanism(params: dict[str, Any], nu: float) -> AuditableMechanism:
    block, audit, profile = params["lapa"], params["audit"]["lapa"], params["profile"]
    training = block["training"]
    lr = float(resolve(training["lr"], profile))
    clip, delta, seed = float(training["clip"]), float(training["delta"]), int(params["seed"])
    devices = int(sum(block["radio"]["region_devices"]))
    dim = int(resolve(audit["dim"], profile))
    channel = audit["channel"]
    scheme = LapaScheme("audit", aggregation="fedavg", privacy="uniform", channel=channel, lr=lr,
                        clip=clip, delta=delta, radio=block["radio"], alloc=block["alloc"], nu=nu)
    sizes = torch.full((devices,), float(np.mean(resolve(training["size_range"], profile))))
    stats = ChannelStatistics(path_gain=torch.ones(devices, dtype=torch.float64),
                              reference_gain=1.0, bandwidth_hz=1.0e6,
                              distances_m=torch.ones(devices, dtype=torch.float64))
    design = scheme.design(DesignContext(
        num_devices=devices, dim=dim, rounds=int(resolve(block["scale"], profile)["rounds"]),
        data_sizes=sizes, channel=stats, label_histograms=np.ones((devices, 10))))
    weights = np.asarray(design["weights"])
    canary = int(np.argmax(weights))
    label = f"lapa/nu={nu:g}"

    def release(row, call: int, width: int) -> torch.Tensor:
        updates = torch.zeros(devices, width, dtype=torch.float64)
        updates[canary] = -lr * row                 # the core uploads w_k - w = -lam g_k
        state = RoundState(round_index=1, channel_power=torch.ones(devices), data_sizes=sizes,
                           statistics=stats, streams=RoundStreams(seed, f"audit/{label}", call, 1))
        return scheme.aggregate(updates, state, design)[0]

    sample = linear_sampler(release, clip, -clip)

    record = scheme.aggregate(torch.zeros(devices, 2, dtype=torch.float64), RoundState(
        round_index=1, channel_power=torch.ones(devices), data_sizes=sizes, statistics=stats,
        streams=RoundStreams(seed, f"audit/{label}/record", 0, 1)), design)[1]
    claimed = _eps(event_from_dict(record["privacy"]), delta)
    c, sens = gaussian_constant(delta), sensitivity(lr=lr, clip=clip, sizes=sizes.numpy())
    sigma = scheme._noise_std(scheme._run(design, 1), design, sens, c)    # eq. 19, round 1
    total = np.sqrt(sigma ** 2 + np.asarray(design["sigma_ch"]) ** 2)
    z_sim = math.sqrt(float(np.sum(weights ** 2 * total ** 2))) / (2 * clip * weights[canary])
    simulated = _eps(GaussianEvent(z_sim), delta)     # eq. 2: the weighted sum of eq. 19's noise
    return AuditableMechanism(
        name=f"uniform_nu{nu:g}_{channel}", paper="lapa", delta=delta, eps_claimed=claimed,
        eps_simulated=simulated,
        claimed_accountant="the round record: Gaussian, smallest total std over 2C, "
        "improved conversion",
        simulated_note="the server update: weighted sum (eq. 2), signal G_k 2C over the noise "
        "of every device", neighbours="replace the canary's clipped gradient +C e_0 by -C e_0",
        conditioning="trial 0's layout and channels, round 1 (equal split)",
        aggregation="airfl.papers.lapa.schemes:LapaScheme.aggregate", sample=sample,
        gaussian=True,
        settings={"nu": nu, "channel": channel, "dim": dim, "devices": devices,
                  "canary": canary, "weight": float(weights[canary]), "clip": clip,
                  "z_simulated": z_sim})


def lapa(params: dict[str, Any]) -> list[AuditableMechanism]:
    """Uniform DP (LAPA's round 1) at every nu of the profile's lapa.training.nu_grid (quick
    4, 16; paper 1-16; batched draws)."""
    grid = params["lapa"]["training"]["nu_grid"]
    grid = resolve(grid, params["profile"])
    return [_mechanism(params, float(nu)) for nu in grid]
