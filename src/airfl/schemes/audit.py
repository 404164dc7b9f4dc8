"""Auditable mechanisms of the generic schemes: DP-FedAvg (`gaussian_dp`) and the
truncated-inversion OTA scheme's noise-as-privacy record (`ota_truncated_inversion`).

Both run the scheme class's own ``aggregate`` (the one training runs) on a canary client whose
update is ``C e_0`` (at the clip norm) among N - 1 clients with zero updates; the statistic is
coordinate 0 of the released server update (:mod:`airfl.core.audit_draws`); DP-FedAvg is also
audited over its rounds (`multi_round`: the statistic summed over T releases, each round with
its own noise, against the T-fold composed claim; Nasr et al. 2023). The settings are
params.yaml ``audit.generic.<kind>``; a list-valued noise knob is the grid (quick: its first
point only, paper: every point).
"""

from __future__ import annotations

from typing import Any

import torch

from airfl.params.declare import resolve
from airfl.core.audit_draws import audit_round_state, linear_draws, loop_draws
from airfl.core.scheme import DesignContext
from airfl.privacy import GaussianEvent, SubsampledGaussianEvent, event_rdp, eps_from_rdp
from airfl.privacy.audit import gaussian_mechanism_epsilon
from airfl.privacy.auditing import AuditableMechanism
from airfl.privacy.rdp import DEFAULT_ORDERS
from airfl.schemes.dp import GaussianDpFedAvg
from airfl.schemes.ota import OtaTruncatedInversion


def rdp_epsilon(event, delta: float, rounds: int = 1) -> float:
    """eps at delta of `rounds` runs of one event by the project's RDP accountant (composition:
    [M17] Prop. 1, the RDP times `rounds`; improved conversion, [CKS20] Prop. 12,
    airfl.privacy.conversion): the accountant every generic record goes to."""
    return float(eps_from_rdp(DEFAULT_ORDERS, rounds * event_rdp(event), delta)[0])


def grid(settings: dict[str, Any], key: str) -> list[float]:
    """A knob's audited values: a list is a grid (every point, in both profiles: these draws are
    batched and cheap; the paper profile takes more draws), a number one point."""
    values = settings[key] if isinstance(settings[key], list) else [settings[key]]
    return [float(v) for v in values]


def _updates(row: torch.Tensor | None, others: int, dim: int) -> torch.Tensor:
    """[N, D]: the canary's row first (zeros if the canary is absent but its slot is kept)."""
    canary = row if row is not None else torch.zeros(dim, dtype=torch.float64)
    return torch.cat([canary[None, :], torch.zeros(others, dim, dtype=torch.float64)])


def gaussian_dp(params: dict[str, Any]) -> list[AuditableMechanism]:
    """DP-FedAvg (McMahan et al. 2018) as `schemes.dp.GaussianDpFedAvg.aggregate` runs it.

    Neighbours: add/remove the canary; "absent" keeps its slot with a zero update, which leaves
    the noisy sum as without it (the estimator divides by the public q N, McMahan et al. 2018's
    fixed denominator). q = 1: one round is a Gaussian mechanism with fixed roles, drawn batched;
    q < 1: every draw has its own Poisson sampling coins (the amplification the accountant
    claims), one aggregate call per draw. Claimed = simulated: the code adds N(0, (z C)^2 I) to
    the clipped sum, exactly what the accountant assumes."""
    settings = params["audit"]["generic"]["gaussian_dp"]
    clip, q, delta = (float(settings[k]) for k in ("clip_norm", "sampling_rate", "delta"))
    n, seed, out = int(settings["num_devices"]), int(params["seed"]), []
    for z in grid(settings, "noise_multiplier"):
        scheme = GaussianDpFedAvg("audit", noise_multiplier=z, clip_norm=clip, sampling_rate=q)
        label = f"gaussian_dp/z={z:g}"

        def release(row, call, dim, scheme=scheme, label=label):
            return scheme.aggregate(_updates(row, n - 1, dim),
                                    audit_round_state(n, seed, label, call), {})[0]

        def once(value, i, release=release):
            row = torch.tensor([value if value is not None else 0.0, 0.0], dtype=torch.float64)
            return float(release(row, i, 2)[0])

        def sample(world, draws, sub_seed, release=release, once=once):
            value = clip if world == "present" else 0.0
            if q == 1.0:
                return linear_draws(lambda row, call, dim: release(row, sub_seed * 1_000_003 + call,
                                                                    dim), value, draws)
            return loop_draws(lambda v, i: once(v, sub_seed * 1_000_003 + i), value, draws)

        event = GaussianEvent(z) if q == 1.0 else SubsampledGaussianEvent(q, z)
        eps = rdp_epsilon(event, delta)
        out.append(AuditableMechanism(
            name=f"gaussian_dp_z{z:g}", paper="generic", delta=delta, eps_claimed=eps,
            eps_simulated=eps, claimed_accountant=f"RDP of {event.to_dict()} (one round), "
            "improved conversion", simulated_note="as claimed: N(0, (zC)^2 I) on the clipped sum",
            neighbours="add/remove the canary (its slot kept with a zero update)",
            conditioning="none (no channel); Poisson coins drawn per draw when q < 1",
            aggregation="airfl.schemes.dp:GaussianDpFedAvg.aggregate", sample=sample,
            gaussian=q == 1.0, batched=q == 1.0,
            settings={"noise_multiplier": z, "clip_norm": clip, "sampling_rate": q,
                      "num_devices": n}))
    return out + multi_round(params)


def multi_round(params: dict[str, Any]) -> list[AuditableMechanism]:
    """DP-FedAvg over T rounds (q = 1; `audit.generic.gaussian_dp.multi_round`, T = the quick
    baselines' 30 rounds, its own noise grid: at z = 0.5 and 1 the composed claims, 111 and 40,
    are beyond what 2e5 draws resolve, ~10): the canary's update C e_0 in every round, each round its own
    `aggregate` call with its own noise stream (RoundStreams keyed by the round), and the
    statistic summed over the rounds (Nasr et al. 2023's multi-round audit; linear, so the
    draws stay batched). Claimed: the record's GaussianEvent(z) composed T times by the RDP
    accountant ([M17] Prop. 1). As simulated: exact, the sum of T Gaussian releases is
    (sqrt(T)/z)-GDP (Dong-Roth-Su 2022 Cor. 3.3), a Gaussian with multiplier z / sqrt(T)."""
    settings = params["audit"]["generic"]["gaussian_dp"]
    clip, q, delta = (float(settings[k]) for k in ("clip_norm", "sampling_rate", "delta"))
    if q != 1.0 or "multi_round" not in settings:
        return []                    # q < 1: one call a draw times T rounds, not affordable
    block, profile = settings["multi_round"], params["profile"]
    rounds, draws = (int(resolve(block[k], profile)) for k in ("rounds", "draws"))
    n, seed, out = int(settings["num_devices"]), int(params["seed"]), []
    for z in grid(block, "noise_multiplier"):      # its own grid: z = 2 (15.9 over 30 rounds)
        scheme = GaussianDpFedAvg("audit", noise_multiplier=z, clip_norm=clip, sampling_rate=q)
        label = f"gaussian_dp/z={z:g}/T={rounds}"

        def release(row, call, dim, scheme=scheme, label=label):
            updates = _updates(row, n - 1, dim)
            return sum(scheme.aggregate(updates, audit_round_state(n, seed, label, call,
                                                                   round_index=t), {})[0]
                       for t in range(1, rounds + 1))

        def sample(world, count, sub_seed, release=release):
            value = clip if world == "present" else 0.0
            return linear_draws(lambda row, call, dim: release(row, sub_seed * 1_000_003 + call,
                                                                dim), value, count)

        claimed = rdp_epsilon(GaussianEvent(z), delta, rounds)                   # [M17] Prop. 1
        simulated = gaussian_mechanism_epsilon(z / rounds ** 0.5, delta)         # DRS22 Cor. 3.3
        out.append(AuditableMechanism(
            name=f"gaussian_dp_z{z:g}_T{rounds}", paper="generic", delta=delta,
            eps_claimed=claimed, eps_simulated=simulated,
            claimed_accountant=f"RDP of GaussianEvent({z:g}) composed over T = {rounds} rounds, "
            "improved conversion", simulated_note="exact: T Gaussian releases, sqrt(T)/z GDP",
            neighbours="add/remove the canary in every round (its slot kept, zero update)",
            conditioning="none (no channel); fresh noise every round",
            aggregation="airfl.schemes.dp:GaussianDpFedAvg.aggregate", sample=sample,
            gaussian=True, draws=draws, releases=rounds,
            settings={"noise_multiplier": z, "clip_norm": clip, "rounds": rounds,
                      "num_devices": n}))
    return out


def ota_truncated_inversion(params: dict[str, Any]) -> list[AuditableMechanism]:
    """The truncated-inversion OTA scheme's record GaussianEvent(1 / (b C)): the receiver noise
    N(0, 1) per entry on y = b sum clip(Delta) + z is read as a Gaussian mechanism with
    sensitivity b C (Zhu-Wang-Huang 2020's b; the record's claim, schemes/ota.py).

    Conditioning (as the record's claim, which has no amplification): one channel draw (devices
    at the cell edge, |h|^2 ~ Exp(1), drawn once from the audit's seed) with the canary's gain
    above the threshold, so it transmits; absent = the canary removed (N - 1 devices). The
    released estimate divides y by b |S|, and |S| includes the canary when present: the
    audit runs that division as the code does."""
    settings = params["audit"]["generic"]["ota_truncated_inversion"]
    clip, threshold, delta = (float(settings[k]) for k in ("clip_norm", "truncation_threshold",
                                                           "delta"))
    n, dim, seed, out = int(settings["num_devices"]), int(settings["dim"]), int(params["seed"]), []
    gains = torch.empty(n, dtype=torch.float64).exponential_(
        generator=torch.Generator().manual_seed(seed))
    gains[0] = max(float(gains[0]), 2.0 * threshold)          # the canary transmits
    for snr_db in grid(settings, "snr_db"):
        scheme = OtaTruncatedInversion("audit", snr_db=snr_db, truncation_threshold=threshold,
                                       clip_norm=clip)
        stats = audit_round_state(n, seed, "design", 0).statistics
        design = scheme.design(DesignContext(num_devices=n, dim=dim, rounds=1,
                                             data_sizes=torch.ones(n), channel=stats))
        label = f"ota/snr={snr_db:g}"

        def release(row, call, dim, scheme=scheme, design=design, label=label):
            if row is None:                     # absent: the canary and its gain removed
                updates = torch.zeros(n - 1, dim, dtype=torch.float64)
                return scheme.aggregate(updates, audit_round_state(n - 1, seed, label, call,
                                                                   gains[1:]), design)[0]
            return scheme.aggregate(_updates(row, n - 1, row.numel()),
                                    audit_round_state(n, seed, label, call, gains), design)[0]

        def sample(world, draws, sub_seed, release=release):
            value = clip if world == "present" else None
            return linear_draws(lambda row, call, dim: release(row, sub_seed * 1_000_003 + call,
                                                               dim), value, draws)

        event = GaussianEvent(design["noise_multiplier"])
        eps = rdp_epsilon(event, delta)
        out.append(AuditableMechanism(
            name=f"ota_snr{snr_db:g}db", paper="generic", delta=delta, eps_claimed=eps,
            eps_simulated=eps, claimed_accountant=f"RDP of {event.to_dict()} (the round "
            "record), improved conversion",
            simulated_note="as claimed for y: unit-variance real noise per entry; the estimate "
            "also divides by b|S|", neighbours="add/remove the canary device",
            conditioning="one fixed channel draw, canary above the truncation threshold",
            aggregation="airfl.schemes.ota:OtaTruncatedInversion.aggregate", sample=sample,
            gaussian=False,
            settings={"snr_db": snr_db, "truncation_threshold": threshold, "clip_norm": clip,
                      "num_devices": n, "dim": dim, "amplitude": design["amplitude"],
                      "participants_others": int((gains[1:] >= design["threshold_power"]).sum())}))
    return out

