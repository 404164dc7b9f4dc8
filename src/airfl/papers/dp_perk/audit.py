"""AirFL-DP (DP as a perk) as an auditable mechanism.

Runs the wing's own round rule :func:`.aggregation.airfl_dp` (clip (6), over-the-air sum plus the
effective receiver noise of ||w|| = q_t (9)-(10)) on the trial plan and design a training run
builds (:class:`.schemes.DpPerkScheme`'s ``_plan``: the same uplink plan and water-filled q_t).

* Neighbours (Proposition III.1's proof, (57): replace one user, sensitivity 2c): the canary's
  clipped update +c e_0 ("present") or -c e_0 ("absent", replaced by the opposite worst case at
  the clip norm), the other K - 1 active devices' updates 0.
* Conditioning: the round's channel and combiner, as the paper's per-round bound (phi_t = 1/q_t^2,
  (22)) does; the audited round is the one with the smallest q_t (the least noise, the largest
  per-round epsilon). Given them the release is linear with i.i.d. Gaussian noise per coordinate,
  so the draws are batched (:func:`airfl.core.audit_draws.linear_draws`).
* Claimed: the record's :func:`.privacy.gaussian_event` (Lemma III.3's increment with the
  Bernoulli(r) factor, sigma^2 under the ``dp_noise_convention``); simulated:
  :func:`.privacy.simulated_gaussian_event` (the real part's q^2 sigma^2 / 2, no amplification);
  both one round, improved conversion at the training delta.
* Settings: params.yaml ``dp_perk.training`` (devices, antennas, rounds, conventions),
  ``audit.dp_perk.dim`` (the model dimension d, which sets c = sqrt(0.012 d): the quick model
  mlp32 has d = 25,450) and Fig. 3's eps_tilde grid of the profile.
"""

from __future__ import annotations

from typing import Any

import torch

from airfl.core.audit_draws import linear_sampler
from airfl.params.declare import resolve
from airfl.papers.dp_perk.aggregation import airfl_dp
from airfl.papers.dp_perk.privacy import accounting_sigma2, gaussian_event, simulated_gaussian_event
from airfl.papers.dp_perk.schemes import DpPerkScheme
from airfl.papers.dp_perk.uplink import effective_noise_variance
from airfl.privacy import eps_from_rdp, event_rdp
from airfl.privacy.auditing import AuditableMechanism
from airfl.privacy.rdp import DEFAULT_ORDERS
from airfl.runtime.rng import torch_generator


def _eps(event, delta: float) -> float:
    """eps at delta of one round by the project's RDP accountant (improved conversion)."""
    return float(eps_from_rdp(DEFAULT_ORDERS, event_rdp(event), delta)[0])


def _mechanism(params: dict[str, Any], eps_tilde: float) -> AuditableMechanism:
    profile, seed = params["profile"], int(params["seed"])
    analytic, training = params["dp_perk"]["analytic"], params["dp_perk"]["training"]
    radio = {k: analytic[k] for k in ("power_w", "sample_ratio", "clip_factor", "sigma2_w",
                                      "carrier_hz", "radius_m", "min_distance_m",
                                      "distance_mode", "zf_columns", "noise_model", "delta")}
    n = int(resolve(training["num_devices"], profile))
    rounds = int(resolve(training["scale"], profile)["rounds"])
    dim = int(resolve(params["audit"]["dp_perk"]["dim"], profile))
    scheme = DpPerkScheme("audit", method="airfl_dp", lr=float(resolve(training["lr"], profile)),
                          antennas=int(resolve(training["antennas"], profile)),
                          beamformer=training["beamformer"],
                          dp_noise_convention=training["dp_noise_convention"],
                          accountant=training["accountant"], eps_tilde=eps_tilde, **radio)
    plan, design = scheme._plan(seed, "audit/dp_perk", 0, n, rounds, dim)
    t = min(range(len(design.q)), key=lambda i: design.q[i])        # least noise: worst round
    channel = plan.round(t)
    k = int(channel.active.numel())
    label = f"dp_perk/eps_tilde={eps_tilde:g}"

    def release(row, call: int, width: int) -> torch.Tensor:
        updates = torch.zeros(k, width, dtype=torch.float64)
        updates[0] = row
        return airfl_dp(updates, channel, design, torch_generator(seed, f"audit/{label}",
                                                                 call, "noise"))[0]

    sample = linear_sampler(release, design.clip, -design.clip)

    q = design.q[t]
    s2 = accounting_sigma2(design.sigma2, design.noise_model, design.dp_noise_convention)
    variance = effective_noise_variance(q, design.sigma2, design.noise_model)
    claimed = _eps(gaussian_event(q, design.sample_ratio, design.clip, s2), radio["delta"])
    simulated = _eps(simulated_gaussian_event(q, design.clip, variance), radio["delta"])
    return AuditableMechanism(
        name=f"airfl_dp_eps{eps_tilde:g}", paper="dp_perk", delta=float(radio["delta"]),
        eps_claimed=claimed, eps_simulated=simulated,
        claimed_accountant="Lemma III.3 per round (2 alpha r c^2 phi_t / sigma^2, sigma^2 of the "
        f"{design.dp_noise_convention} convention), improved conversion",
        simulated_note=f"Gaussian, per-coordinate variance q^2 sigma^2{' / 2' if design.noise_model == 'complex_real_part' else ''} "
        "(the receiver's real part), sensitivity 2c, no Bernoulli(r) amplification (fixed set)",
        neighbours="replace the canary's update +c e_0 by -c e_0 (sensitivity 2c, (57))",
        conditioning=f"the round's channel and combiner (round {t}, the smallest q_t)",
        aggregation="airfl.papers.dp_perk.aggregation:airfl_dp", sample=sample, gaussian=True,
        settings={"eps_tilde": eps_tilde, "round": t, "q_t": q, "clip": design.clip,
                  "sample_ratio": design.sample_ratio, "active": k, "dim": dim,
                  "noise_std_sum": variance ** 0.5})


def dp_perk(params: dict[str, Any]) -> list[AuditableMechanism]:
    """AirFL-DP at every eps_tilde of Fig. 3's grid of the profile (dp_perk.training
    .fig3_eps_tilde: quick 0.3, 1, 3; paper 0.04-0.15; batched draws, cheap in both)."""
    grid = params["dp_perk"]["training"]["fig3_eps_tilde"]
    grid = resolve(grid, params["profile"])
    return [_mechanism(params, float(e)) for e in grid]
