"""Fig. 2 and the analytic diagnostics of AirFL-DP as tidy frames, and the claims they support.

Paper: Fig. 2 (Sec. III-B), Remark IV.2 (51)-(52), Fig. 6 (Sec. V-B). Spec: §8 (Fig. 2; Fig. 6;
"Additional diagnostic artefacts"), §4.5, §5.3 (ZF gap), §5.4 (perk threshold), §10.3 (quick
profile), Errata 1 and 4.

Every frame function is pure: ``frame(params) -> pandas.DataFrame`` with ``params`` a plain dict
(:data:`DEFAULTS` overridden by the caller, e.g. ``{**DEFAULTS, **QUICK}``); randomness only from
generators derived from ``params["seed"]`` (:func:`.uplink.trial_generators`). No training.

Frames: :func:`fig2_frame` (RDP and eps vs T), :func:`allocation_frame` (q_t and pi_t over
rounds), :func:`threshold_frame` (perk threshold and full-binding SNR vs eps_tilde, per trial and
beamformer), :func:`fig6_frame` (analytic forecast of Fig. 6: noise allocation vs P),
:func:`privacy_table` (achieved privacy of every allocation). :func:`claims` evaluates the spec-8
claims that these frames can decide, returning ``(claim_id, paper_words, our_numbers, holds)``.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
import torch

from .beamforming import zf_opt_beamformer
from .design import clip_threshold, perk_window, waterfill
from .privacy import (budget_A, cumulative_phi, domain_constant, eps_optimal, eps_paper,
                      paper_order, privacy_report, rdp_coefficient)
from .uplink import UplinkPlan, active_count, pathloss, plan_uplink, snr_wc_db, trial_generators

__all__ = ["CLAIM_PARTS", "DEFAULTS", "FRAMES", "QUICK", "SPEC_REFERENCE", "allocation_frame",
           "claims", "fig2_frame", "fig6_frame", "privacy_table", "threshold_frame"]

INF = math.inf

#: Spec §7 defaults. Tags: stated = in the paper's text; missing-default = the paper is silent,
#: value proposed by the spec (reason in §7/§9); reconstructed = chosen to draw an analytic figure
#: or diagnostic the paper only sketches (spec §8).
DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "seed": 0,                       # missing-default (any; per-trial streams derive from it)
    "trials": 10,                    # stated (V-A: 10-30 trials; A15: 10)
    "dim": 582_026,                  # stated (V-A: d = 582,026)
    "clip_factor": 0.012,            # stated (V-A: c = sqrt(0.012 d))
    "n_devices": 50,                 # stated (V-A)
    "sample_ratio": 0.9,             # stated (V-A: r = 0.9, K = 45)
    "antennas": 100,                 # stated (V-A: m = 100)
    "rounds": 50,                    # stated (V-A: T = 50)
    "lr": 0.005,                     # stated (V-A: eta = 0.005)
    "local_steps": 5,                # stated (V-A: Q = 5); the epochs mode runs 600 (A1, Errata 4)
    "power_w": 2.0e-3,               # stated (V-A: P = 2 mW)
    "sigma2_w": 1.0e-13,             # stated (V-A: -173 dBm/Hz x 20 MHz = -99.99 dBm, rounded)
    "carrier_hz": 2.4e9,             # stated (V-A: f_c = 2.4 GHz, c_l = 3e8)
    "radius_m": 1000.0,              # stated (V-A: r_i ~ 1000 sqrt(U); r_max = 1000 m)
    "min_distance_m": 1.0,           # missing-default (spec §7: clamp r >= 1 m)
    "eps_tilde": 0.1,                # stated (V-A: eps/sqrt(d) = 0.1)
    "delta": 1.0e-5,                 # stated (V-A)
    "smooth_L": 10.0,                # missing-default (A7: L never given)
    "domain_D": INF,                 # stated (Sec. IV-B solves D -> inf; experiments)
    "distance_mode": "per_device",   # stated (V-A: r_i per device); A5 lists the authors' modes
    "zf_columns": "active",          # missing-default (A5: ZF on the K active devices)
    "beamformers": ["zf", "zf_opt"],  # missing-default (A11: ZF u = 1; spec §5.3 correction)
    "noise_model": "complex_real_part",  # missing-default (A3; authors' code)
    "fig2_B": 50.0,                  # reconstructed (spec §8 Fig. 2: D such that T* = B = 50)
    "fig2_rounds_max": 80,           # reconstructed (Fig. 2 sketch axis, T = 1..80)
    "fig2_D_variants": [0.05, 0.1, 0.2, INF],  # reconstructed (spec §8 Fig. 2 context panel)
    "realistic_D": 1.0,              # reconstructed (spec §8 Fig. 2 note: D >~ 1 for a CNN)
    "epochs_local_steps": 600,       # missing-default (A1: 5 epochs x 120 batches; Errata 4)
    "diag_eps_tilde": [0.04, 0.1],   # reconstructed (spec §8 diagnostics: q_t, pi_t plot)
    "diag_power_w": [2.0e-10, 2.0e-3],  # reconstructed (spec §8 diagnostics)
    "fig3_eps_tilde": [0.04, 0.08, 0.10, 0.13, 0.15],  # missing-default (spec §7, A6)
    "threshold_eps_tilde": [0.01, 0.0175, 0.025, 0.0375, 0.05, 0.0625, 0.075, 0.0875, 0.1,
                            0.13, 0.16, 0.19, 0.22, 0.25, 0.28],  # missing-default (Fig. 5 grid)
    "fig6_power_w": [2e-11, 7e-11, 2e-10, 7e-10, 2e-9, 7e-9, 2e-8, 7e-8, 2e-7],  # missing-default
})

#: Spec §10.3 quick profile (overrides of DEFAULTS); Errata 1 for the Fig. 6 grid.
QUICK: Mapping[str, Any] = MappingProxyType({
    "trials": 20,                    # Errata 1 counts the window over 20 seeds
    "dim": 25_450,                   # MLP 784-32-10
    "n_devices": 20,
    "antennas": 40,
    "rounds": 20,
    "eps_tilde": 1.0,                # quick Fig. 6 budget
    "diag_eps_tilde": [0.3, 1.0],
    "fig3_eps_tilde": [0.3, 1.0, 3.0],
    "threshold_eps_tilde": [0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0],
    "fig6_power_w": [3e-9, 1e-8, 1.5e-8, 3e-8, 1e-7, 1e-6, 2e-3],
})

# Numbers the spec states for the default setting (§4.5, §5.3, §5.4, §8, §10.3, Errata 1).
SPEC_REFERENCE = {"zf_threshold_db": -66.5, "zf_opt_threshold_db": -72.0, "edge_all_db": -62.6,
                  "zf_gain": 0.82, "zf_opt_gain": 0.22, "quick_threshold_db": -45.1,
                  "fig2_alpha": 1.302, "fig2_D": 0.0838, "noise_std_sum": 103.6,
                  "mimo_eps_tilde_optimal": 3e5, "mimo_eps_tilde_paper": 7e5}


# ------------------------------------------------------------------------------------------
# Shared derived constants and per-trial plans
# ------------------------------------------------------------------------------------------

def _constants(params: Mapping[str, Any], eps_tilde: float | None = None) -> dict[str, float]:
    """Derived constants of a parameter dict: d, c, eps, A (34), K, Lambda_min (Sec. V-A)."""
    d = int(params["dim"])
    c = clip_threshold(d, params["clip_factor"])
    eps = (params["eps_tilde"] if eps_tilde is None else eps_tilde) * math.sqrt(d)
    return {"d": d, "c": c, "eps": eps,
            "A": budget_A(eps, params["delta"], params["sample_ratio"], c, params["sigma2_w"]),
            "K": active_count(params["n_devices"], params["sample_ratio"]),
            "pathloss_min": float(pathloss(params["radius_m"], params["carrier_hz"]))}


def _db(power_w: float, k: dict[str, float], params: Mapping[str, Any]) -> float:
    """SNR_wc in dB of a power (Fig. 6 x-axis)."""
    return float(snr_wc_db(power_w, k["pathloss_min"], params["sigma2_w"]))


def _plans(params: Mapping[str, Any], **overrides: Any) -> list[UplinkPlan]:
    """ZF plans at ``power_w`` for trials 0..trials-1 (channels shared by every beamformer)."""
    c = clip_threshold(params["dim"], params["clip_factor"])
    kw = {"radius_m": params["radius_m"], "min_distance_m": params["min_distance_m"],
          "carrier_hz": params["carrier_hz"], "distance_mode": params["distance_mode"],
          "zf_columns": params["zf_columns"], **overrides}
    return [plan_uplink(params["n_devices"], params["sample_ratio"], params["antennas"],
                        params["rounds"], c, params["dim"], params["power_w"],
                        trial_generators(params["seed"], k), beamformer="zf", **kw)
            for k in range(int(params["trials"]))]


def _pi_by_beamformer(plans: list[UplinkPlan], beamformer: str) -> torch.Tensor:
    """(P1) norms [trials, T] at the plans' power: ZF from the plans, ``zf_opt`` in one batch."""
    if beamformer == "zf":
        return torch.stack([p.pi for p in plans])
    if beamformer != "zf_opt":
        raise ValueError(f"beamformer must be 'zf' or 'zf_opt' here, got {beamformer!r}")
    columns = torch.stack([p.channels if p.zf_columns == "active" else p.channels_all
                           for p in plans])
    w = zf_opt_beamformer(columns, plans[0].gamma)
    return torch.linalg.vector_norm(w, dim=-1).to(torch.float64)


# ------------------------------------------------------------------------------------------
# Fig. 2
# ------------------------------------------------------------------------------------------

def _domain_for_B(params: Mapping[str, Any], B: float, c: float) -> float:
    """D with ``B(D) = B`` (inverse of App. D's B):
    ``D = (sqrt(B) - 1) 2 eta c / ((1 + eta L)^Q sqrt(r) n)``."""
    growth = (1.0 + params["lr"] * params["smooth_L"]) ** params["local_steps"]
    return (math.sqrt(B) - 1.0) * 2.0 * params["lr"] * c / (
        growth * math.sqrt(params["sample_ratio"]) * params["n_devices"])


def _B(params: Mapping[str, Any], D: float, c: float, local_steps: int | None = None) -> float:
    return domain_constant(params["lr"], params["smooth_L"],
                           local_steps or params["local_steps"], params["sample_ratio"],
                           params["n_devices"], D, c)


def fig2_frame(params: Mapping[str, Any] = DEFAULTS) -> pd.DataFrame:
    """RDP ``eps'(T) = (2 alpha r c^2/sigma^2) min{T phi, Phi}`` (21) with ``phi_t = phi`` (Fig. 2).

    ``q = sqrt(T_ref/A)`` at the default eps_tilde (T_ref = rounds), ``alpha = 1 + 2 L_delta/eps``,
    D such that B = ``fig2_B`` (so T* = Phi/phi = B), plus the ``fig2_D_variants``; curve
    ``liu_linear`` is the same slope without saturation (A14: [18] has no formula in the paper).
    Columns: curve, D, B, T_star, T, K_rdp, rdp (at alpha), eps_paper.
    """
    k = _constants(params)
    phi = k["A"] / params["rounds"]                       # 1/q^2 with q = sqrt(T_ref / A)
    alpha = paper_order(k["eps"], params["delta"])
    slope = rdp_coefficient(params["sample_ratio"], k["c"], params["sigma2_w"])  # (21)
    horizon = np.arange(1, int(params["fig2_rounds_max"]) + 1)
    phis = np.full(horizon.size, phi)
    domains = [_domain_for_B(params, params["fig2_B"], k["c"]), *params["fig2_D_variants"]]
    rows = []
    for curve, D in [("liu_linear", INF)] + [("ours", D) for D in domains]:
        B = _B(params, D, k["c"])
        krdp = slope * cumulative_phi(phis, B)            # (21), horizon by horizon
        for T, kr in zip(horizon, krdp):
            rows.append({"curve": curve, "D": D, "B": B, "T_star": B, "T": int(T),
                         "K_rdp": float(kr), "rdp": alpha * float(kr), "alpha": alpha,
                         "eps_paper": eps_paper(float(kr), params["delta"])})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------
# Diagnostics
# ------------------------------------------------------------------------------------------

def allocation_frame(params: Mapping[str, Any] = DEFAULTS, trial: int = 0) -> pd.DataFrame:
    """q_t* and pi_t over rounds for one trial, every (eps_tilde, P) of the diagnostic grid (ZF)."""
    plan = _plans({**params, "trials": trial + 1})[trial]
    rows = []
    for power in params["diag_power_w"]:
        at = plan.at_power(power)
        for eps_tilde in params["diag_eps_tilde"]:
            k = _constants(params, eps_tilde)
            alloc = waterfill(at.pi, k["A"])
            snr = _db(power, k, params)
            for t, (p, q) in enumerate(zip(alloc.pi, alloc.q)):
                rows.append({"eps_tilde": eps_tilde, "power_w": power, "snr_wc_db": snr,
                             "round": t, "pi": p, "q": q, "raised": q > p,
                             "binding": alloc.binding, "water_level": alloc.water_level})
    return pd.DataFrame(rows)


def threshold_frame(params: Mapping[str, Any] = DEFAULTS, **plan_overrides: Any) -> pd.DataFrame:
    """Perk threshold P_thr and full-binding P_full (Errata 1) vs eps_tilde, per trial and
    beamformer, with the combiner gain ``mean_t pi_t^2 Lambda_min / gamma^2`` at ``power_w``.
    ``plan_overrides`` (e.g. ``distance_mode="edge", zf_columns="all"``) change the plans."""
    plans = _plans(params, **plan_overrides)
    k0 = _constants(params)
    rows = []
    for bf in params["beamformers"]:
        pis = _pi_by_beamformer(plans, bf).numpy()
        for trial, pi in enumerate(pis):
            gain = float(np.mean(pi ** 2)) * k0["pathloss_min"] / plans[trial].gamma ** 2
            for eps_tilde in params["threshold_eps_tilde"]:
                k = _constants(params, eps_tilde)
                p_thr, p_full = perk_window(pi, k["A"], params["power_w"], k["c"], k["d"])
                rows.append({
                    "beamformer": bf, "trial": trial, "eps_tilde": eps_tilde, "budget_A": k["A"],
                    "sum_inv_pi2": float(np.sum(1.0 / pi ** 2)), "combiner_gain": gain,
                    "power_threshold_w": p_thr, "power_full_w": p_full,
                    "snr_threshold_db": _db(p_thr, k, params),
                    "snr_full_db": _db(p_full, k, params)})
    return pd.DataFrame(rows)


def fig6_frame(params: Mapping[str, Any] = DEFAULTS) -> pd.DataFrame:
    """Analytic forecast of Fig. 6 (ZF): per trial and P of the grid, the regime and the noise
    budget ``sum_t q_t^2`` of AirFL-DP vs ``sum_t pi_t^2`` of AirFL-MIMO, and whether AirFL-DP's q
    equals AirFL-MIMO's (bitwise) or equals the q at the largest P of the grid (bitwise)."""
    k = _constants(params)
    rows = []
    for trial, plan in enumerate(_plans(params)):
        p_thr, p_full = perk_window(plan.pi, k["A"], plan.power_w, k["c"], k["d"])
        top = waterfill(plan.at_power(max(params["fig6_power_w"])).pi, k["A"]).q
        for power in params["fig6_power_w"]:
            pi = plan.at_power(power).pi
            alloc = waterfill(pi, k["A"])
            regime = "perk" if power <= p_thr else "full" if power >= p_full else "partial"
            rows.append({"trial": trial, "power_w": power,
                         "snr_wc_db": _db(power, k, params),
                         "power_threshold_w": p_thr, "power_full_w": p_full, "regime": regime,
                         "sum_q2_dp": alloc.objective,
                         "sum_pi2_mimo": float(np.sum(np.square(alloc.pi))),
                         "dp_equals_mimo": alloc.q == tuple(map(float, pi)),
                         "dp_equals_top": alloc.q == top})
    return pd.DataFrame(rows)


def privacy_table(params: Mapping[str, Any] = DEFAULTS) -> pd.DataFrame:
    """Achieved privacy of AirFL-DP and AirFL-MIMO per trial, eps_tilde (Fig. 3 grid) and P
    (spec §8 diagnostic table); noise std per model coordinate ``(eta/K) q sigma/sqrt(2)``."""
    k0 = _constants(params)
    rows = []
    for trial, plan in enumerate(_plans(params)):
        for power in sorted({params["power_w"], *params["diag_power_w"]}):
            pi = plan.at_power(power).pi
            for eps_tilde in params["fig3_eps_tilde"]:
                k = _constants(params, eps_tilde)
                alloc = waterfill(pi, k["A"])
                rep = lambda q: privacy_report(q, params["sample_ratio"], k["c"],  # noqa: E731
                                               params["sigma2_w"], params["delta"], k["d"])
                dp, mimo = rep(alloc.q), rep(alloc.pi)
                std = params["lr"] / k0["K"] * np.asarray(alloc.q) * math.sqrt(
                    params["sigma2_w"] / (2.0 if params["noise_model"] == "complex_real_part"
                                          else 1.0))
                rows.append({
                    "trial": trial, "power_w": power, "eps_tilde": eps_tilde,
                    "eps_target": k["eps"],
                    "budget_A": k["A"], "sum_inv_pi2": alloc.sum_inv_pi2, "binding": alloc.binding,
                    "eps_dp_paper": dp.eps_paper, "eps_dp_optimal": dp.eps_optimal,
                    "eps_tilde_dp_paper": dp.eps_tilde_paper,
                    "eps_tilde_dp_optimal": dp.eps_tilde_optimal,
                    "eps_mimo_paper": mimo.eps_paper, "eps_tilde_mimo_paper": mimo.eps_tilde_paper,
                    "fraction_raised": alloc.raised_rounds / len(alloc.q),
                    "noise_std_model_mean": float(std.mean())})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------
# Claims
# ------------------------------------------------------------------------------------------

Claim = tuple[str, str, str, bool]


def _fig2_claims(frame: pd.DataFrame, params: Mapping[str, Any]) -> list[Claim]:
    k = _constants(params)
    linear = frame[frame.curve == "liu_linear"].set_index("T")["rdp"]
    ours = frame[frame.curve == "ours"]
    main = ours[np.isclose(ours.B, params["fig2_B"], rtol=1e-9)]
    t_star = float(main.T_star.iloc[0])
    slope = float(linear.iloc[0])
    expect = slope * np.minimum(main["T"].to_numpy(), t_star)
    shape_err = float(np.max(np.abs(main.rdp.to_numpy() / expect - 1.0)))
    excess = float(max((g.set_index("T").rdp / linear - 1.0).max() for _, g in ours.groupby("D")))
    inf_rows = ours[np.isinf(ours.D)].set_index("T").rdp
    stars = ours.groupby("D").T_star.first().sort_index()
    b1 = _B(params, params["realistic_D"], k["c"])
    b1_epochs = _B(params, params["realistic_D"], k["c"], params["epochs_local_steps"])
    d_b = _domain_for_B(params, params["fig2_B"], k["c"])
    alpha = float(main.alpha.iloc[0])
    return [
        ("fig2.linear_then_flat", "ours grows linearly up to T* = Phi/phi and is flat after",
         f"T* = {t_star:.6g}; max rel. deviation from slope*min(T, T*) = {shape_err:.1e}",
         shape_err < 1e-12 and abs(t_star - params["fig2_B"]) < 1e-9 * params["fig2_B"]),
        ("fig2.below_linear", "the converging bound never exceeds the linear bound of [18]",
         f"max over D, T of ours/linear - 1 = {excess:.2e}", excess <= 1e-15),
        ("fig2.recovers_linear", "the bound recovers the linear one as D -> inf",
         f"D = inf equals linear: {bool(np.array_equal(inf_rows.to_numpy(), linear.to_numpy()))}; "
         f"T* over D {list(stars.index)}: {[f'{v:.4g}' for v in stars]}",
         bool(np.array_equal(inf_rows.to_numpy(), linear.to_numpy()))
         and bool(np.all(np.diff(stars.to_numpy()) > 0))),
        ("fig2.invisible_at_T50", "spec §8: for realistic D >~ 1, T* = B >= 5e3 >> T = 50",
         f"B(D = {params['realistic_D']:g}) = {b1:.4g} (Q = {params['local_steps']}), "
         f"{b1_epochs:.3g} (Q = {params['epochs_local_steps']})", b1 >= 5e3 and b1_epochs >= b1),
        ("fig2.constants",
         "spec §8: alpha = 1.302 at eps~ = 0.1; D = 0.0838 for B = 50 (L = 10, Q = 5)",
         f"alpha = {alpha:.4f}; D = {d_b:.4f}",
         abs(alpha - SPEC_REFERENCE["fig2_alpha"]) < 5e-4
         and abs(d_b - SPEC_REFERENCE["fig2_D"]) < 5e-5),
    ]


def _at(frame: pd.DataFrame, bf: str, eps_tilde: float) -> pd.DataFrame:
    return frame[(frame.beamformer == bf) & np.isclose(frame.eps_tilde, eps_tilde)]


def leading_digit_interval(quoted: float) -> tuple[float, float]:
    """The values a number quoted to one significant figure (``quoted`` = d x 10^e) stands for:
    same power of ten and the same leading digit, ``[d 10^e, (d+1) 10^e)``.

    Spec §4.5 writes the MIMO window's ends with one digit, and they are the leading digits of
    the values its own premise implies (sum 1/pi^2 = 1e7 A gives 3.84e5 and 7.68e5, written
    "3·10⁵" and "7·10⁵"), so the digit is truncated, not rounded: rounding would fail the
    spec's own premise at both ends."""
    exponent = math.floor(math.log10(quoted))
    digit = round(quoted / 10 ** exponent)
    return digit * 10.0 ** exponent, (digit + 1) * 10.0 ** exponent


def _short(value: float) -> str:
    """3e+05 -> 3e5 (claim text)."""
    return f"{value:.0e}".replace("e+0", "e").replace("e+", "e")


def _mimo_no_privacy(zf: pd.DataFrame, params: Mapping[str, Any]) -> Claim:
    """Spec §4.5: AirFL-MIMO at 2 mW has ``sum_t 1/pi_t^2 ~ 1e7 A``, "i.e. its implied eps~ is
    ~ 3·10⁵-7·10⁵". The window is the pair of conversions of the same K_rdp (issue 11), not a
    range for one of them: the optimal conversion (Lemma III.1 minimised over alpha, spec §4.4)
    gives the low end, the paper's (23) about twice it (eps ~ 2 K_rdp at K_rdp >> L_delta) the
    high end. Each is checked against its own end, on the trial mean, to the one significant
    figure the spec quotes (:func:`leading_digit_interval`); the ratio to within half a decade of
    the quoted 1e7 (one significant power of ten)."""
    ratio = float(np.log10((zf.sum_inv_pi2 / zf.budget_A).mean()))
    k = _constants(params)
    slope = rdp_coefficient(params["sample_ratio"], k["c"], params["sigma2_w"])    # (21)
    by_paper = np.array([eps_paper(slope * s, params["delta"]) / math.sqrt(k["d"])
                         for s in zf.sum_inv_pi2])          # (23); eps~ = eps / sqrt(d) (V-A)
    by_optimal = np.array([eps_optimal(slope * s, params["delta"])[0] / math.sqrt(k["d"])
                           for s in zf.sum_inv_pi2])                            # spec §4.4
    low = leading_digit_interval(SPEC_REFERENCE["mimo_eps_tilde_optimal"])
    high = leading_digit_interval(SPEC_REFERENCE["mimo_eps_tilde_paper"])
    holds = (abs(ratio - 7.0) <= 0.5 and low[0] <= by_optimal.mean() < low[1]
             and high[0] <= by_paper.mean() < high[1])
    return ("perk.mimo_no_privacy", "spec §4.5: AirFL-MIMO at 2 mW has sum 1/pi^2 ~ 1e7 A, "
            "implied eps~ ~ 3e5 (optimal conversion) to 7e5 (paper conversion (23))",
            f"log10(sum 1/pi^2 / A) = {ratio:.2f}; implied eps~, trial mean (range): optimal "
            f"conversion {by_optimal.mean():.3g} ({by_optimal.min():.3g}..{by_optimal.max():.3g}"
            f"; needs [{_short(low[0])}, {_short(low[1])})), paper conversion "
            f"{by_paper.mean():.3g} ({by_paper.min():.3g}..{by_paper.max():.3g}; needs "
            f"[{_short(high[0])}, {_short(high[1])}))", holds)


def _threshold_claims(frame: pd.DataFrame, edge: pd.DataFrame | None,
                      params: Mapping[str, Any]) -> list[Claim]:
    eps0 = params["eps_tilde"]
    zf, opt = _at(frame, "zf", eps0), _at(frame, "zf_opt", eps0)
    snr_default = float(snr_wc_db(params["power_w"], _constants(params)["pathloss_min"],
                                  params["sigma2_w"]))
    margin = snr_default - zf.snr_threshold_db.mean()
    gap = float((zf.snr_threshold_db.to_numpy() - opt.snr_threshold_db.to_numpy()).mean())
    grid_db = snr_wc_db(torch.tensor(params["fig6_power_w"]), _constants(params)["pathloss_min"],
                        params["sigma2_w"]).numpy()
    inside = bool(zf.snr_threshold_db.between(grid_db.min(), grid_db.max(), "neither").all())
    by_eps = frame[frame.beamformer == "zf"].groupby("eps_tilde").snr_threshold_db.mean()
    out = [
        ("perk.zf_threshold", "spec §5.4: perk threshold SNR_wc ~ -66.5 dB (eps~ = 0.1, ZF u = 1)",
         f"{zf.snr_threshold_db.mean():.2f} dB (trial sd {zf.snr_threshold_db.std():.2f}, "
         f"{len(zf)} trials)",
         abs(zf.snr_threshold_db.mean() - SPEC_REFERENCE["zf_threshold_db"]) <= 1.0),
        ("perk.zf_opt_threshold", "spec §5.3: optimised phases move it to ~ -72 dB, 5-6 dB lower",
         f"{opt.snr_threshold_db.mean():.2f} dB; gap {gap:.2f} dB",
         abs(opt.snr_threshold_db.mean() - SPEC_REFERENCE["zf_opt_threshold_db"]) <= 1.0
         and 5.0 <= gap <= 6.0),
        ("perk.binding_at_2mW", "spec §5.4/A6: at P = 2 mW the DP constraint binds by ~70 dB",
         f"SNR_wc(2 mW) - threshold = {margin:.2f} dB", abs(margin - 70.0) <= 1.5),
        _mimo_no_privacy(zf, params),
        ("fig6.threshold_in_grid", "A6: the analytic threshold lies inside the Fig. 6 SNR range",
         f"thresholds {zf.snr_threshold_db.min():.1f}..{zf.snr_threshold_db.max():.1f} dB in "
         f"[{grid_db.min():.1f}, {grid_db.max():.1f}] dB", inside),
        ("perk.threshold_vs_eps", "(51): the threshold SNR rises with the budget eps~",
         f"{by_eps.iloc[0]:.1f} dB at eps~ = {by_eps.index[0]:g} .. {by_eps.iloc[-1]:.1f} dB at "
         f"{by_eps.index[-1]:g}", bool(np.all(np.diff(by_eps.to_numpy()) > 0))),
    ]
    if edge is not None:
        e_zf, e_opt = _at(edge, "zf", eps0), _at(edge, "zf_opt", eps0)
        out += [
            ("perk.authors_labelling", "spec §5.4: ~ -62.6 dB with all devices at r_max and n = 50 "
             "ZF columns", f"{e_zf.snr_threshold_db.mean():.2f} dB",
             abs(e_zf.snr_threshold_db.mean() - SPEC_REFERENCE["edge_all_db"]) <= 1.0),
        ]
    return out


def _gain_claim(edge_active: pd.DataFrame, params: Mapping[str, Any]) -> Claim:
    eps0 = params["eps_tilde"]
    g_zf = _at(edge_active, "zf", eps0).combiner_gain.mean()
    g_opt = _at(edge_active, "zf_opt", eps0).combiner_gain.mean()
    return ("perk.combiner_gain", "spec §5.3: ||w||^2 ~ 0.82 gamma^2/Lambda (u = 1) vs ~ 0.22 "
            "gamma^2/Lambda optimised (m = 100, K = 45, common Lambda)",
            f"{g_zf:.3f} vs {g_opt:.3f} ({10 * np.log10(g_zf / g_opt):.2f} dB)",
            abs(g_zf - SPEC_REFERENCE["zf_gain"]) <= 0.03
            and abs(g_opt - SPEC_REFERENCE["zf_opt_gain"]) <= 0.03)


def _fig6_claims(frame: pd.DataFrame, params: Mapping[str, Any]) -> list[Claim]:
    perk, full = frame[frame.regime == "perk"], frame[frame.regime == "full"]
    authors = {"identical": 7e-11, "differs": 2e-10, "flat": 7e-10}
    per_trial = frame.groupby("trial").first()
    # Mean curves over trials with common random numbers: equal at 7e-11 needs every trial in the
    # perk regime there; a difference at 2e-10 needs at least one trial above P_thr; the flat
    # values from 7e-10 on need every trial fully binding there.
    pattern = {"equal at 7e-11": bool((per_trial.power_threshold_w >= authors["identical"]).all()),
               "differ at 2e-10": bool((per_trial.power_threshold_w < authors["differs"]).any()),
               "flat from 7e-10": bool((per_trial.power_full_w <= authors["flat"]).all())}
    return [
        ("fig6.identical_below", "Fig. 6 / (51): below the threshold AirFL-DP is identical to "
         "AirFL-MIMO", f"{int(perk.dp_equals_mimo.sum())}/{len(perk)} (trial, P) points below "
         "P_thr with bit-identical q", bool(perk.dp_equals_mimo.all()) and len(perk) > 0),
        ("fig6.flat_above_full", "Errata 1: above P_full AirFL-DP no longer depends on P",
         f"{int(full.dp_equals_top.sum())}/{len(full)} points above P_full with q equal to the "
         "largest P's", bool(full.dp_equals_top.all()) and len(full) > 0),
        ("fig6.dp_noisier", "above the threshold AirFL-DP is (slightly) worse than AirFL-MIMO: "
         "its noise budget sum q^2 is never below MIMO's",
         f"min sum q^2 / sum pi^2 = {float((frame.sum_q2_dp / frame.sum_pi2_mimo).min()):.6f}",
         bool((frame.sum_q2_dp >= frame.sum_pi2_mimo).all())),
        ("fig6.authors_pattern", "authors' code (10-trial means): DP = MIMO at 7e-11 W, they "
         "differ at 2e-10 W, DP flat from 7e-10 W",
         f"{pattern}; P_thr {per_trial.power_threshold_w.min():.3g}..."
         f"{per_trial.power_threshold_w.max():.3g} W, P_full {per_trial.power_full_w.min():.3g}..."
         f"{per_trial.power_full_w.max():.3g} W", all(pattern.values())),
    ]


def _privacy_claims(table: pd.DataFrame) -> list[Claim]:
    bind, slack = table[table.binding], table[~table.binding]
    rel = float((bind.eps_dp_paper / bind.eps_target - 1.0).abs().max()) if len(bind) else math.nan
    ok_slack = bool((slack.eps_dp_paper <= slack.eps_target).all())
    below = bool((table.eps_dp_optimal <= table.eps_dp_paper).all())
    return [
        ("privacy.target_met",
         "spec §10.3 (6): eps_paper == eps~ sqrt(d) when binding, <= otherwise",
         f"max rel. error when binding {rel:.1e} ({len(bind)} rows); slack rows within: {ok_slack}",
         len(bind) > 0 and rel <= 1e-9 and ok_slack),
        ("privacy.optimal_conversion",
         "spec §4.4: the optimal conversion never exceeds the paper's",
         f"eps_opt/eps_paper in [{(table.eps_dp_optimal / table.eps_dp_paper).min():.3f}, "
         f"{(table.eps_dp_optimal / table.eps_dp_paper).max():.3f}]", below),
    ]


def _quick_claims(params: Mapping[str, Any]) -> list[Claim]:
    quick = {**params, **QUICK, "beamformers": ["zf"], "threshold_eps_tilde": [QUICK["eps_tilde"]]}
    frame = threshold_frame(quick)
    mean_db = frame.snr_threshold_db.mean()
    def in_window(p: float) -> int:
        return int(((frame.power_threshold_w < p) & (p < frame.power_full_w)).sum())

    below = int((frame.power_threshold_w > 1.5e-8).sum())
    return [
        ("quick.threshold", "spec §10.3: quick analytic perk threshold at eps~ = 1 ~ -45.1 dB",
         f"{mean_db:.2f} dB over {len(frame)} seeds",
         abs(mean_db - SPEC_REFERENCE["quick_threshold_db"]) <= 1.0),
        ("quick.fig6_grid", "Errata 1: 3e-8 W falls inside [P_thr, P_full] in 7 of 20 seeds; use "
         "1.5e-8 W (below the threshold) instead",
         f"3e-8 inside the window in {in_window(3e-8)}/{len(frame)} seeds; 1.5e-8 below P_thr in "
         f"{below}/{len(frame)}, inside in {in_window(1.5e-8)}",
         in_window(3e-8) > 0 and below == len(frame)),
    ]


CLAIM_PARTS = ("fig2", "threshold", "fig6", "privacy", "quick")


def claims(params: Mapping[str, Any] = DEFAULTS, parts: tuple[str, ...] = CLAIM_PARTS
           ) -> list[Claim]:
    """Evaluate the claims the analytic frames decide, as (claim_id, paper_words, our_numbers,
    holds); ``parts`` selects groups of :data:`CLAIM_PARTS`. Computes the frames it needs from
    ``params`` (the threshold group also draws the authors' labelling: all devices at r_max)."""
    unknown = set(parts) - set(CLAIM_PARTS)
    if unknown:
        raise ValueError(f"parts must be among {CLAIM_PARTS}, got {sorted(unknown)}")
    edge = {"distance_mode": "edge"}
    found: list[Claim] = []
    if "fig2" in parts:
        found += _fig2_claims(fig2_frame(params), params)
    if "threshold" in parts:
        found += _threshold_claims(threshold_frame(params),
                                   threshold_frame({**params, "beamformers": ["zf"]},
                                                   zf_columns="all", **edge), params)
        found.append(_gain_claim(threshold_frame(params, **edge), params))
    if "fig6" in parts:
        found += _fig6_claims(fig6_frame(params), params)
    if "privacy" in parts:
        found += _privacy_claims(privacy_table(params))
    if "quick" in parts:
        found += _quick_claims(params)
    return [(cid, words, numbers, bool(holds)) for cid, words, numbers, holds in found]


FRAMES: dict[str, Callable[[dict[str, Any]], pd.DataFrame]] = {
    "fig2": fig2_frame, "allocation": allocation_frame, "threshold": threshold_frame,
    "fig6": fig6_frame, "privacy": privacy_table,
}
