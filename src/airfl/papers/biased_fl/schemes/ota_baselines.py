"""The six OTA baselines of Biased FL's Fig. 2(b,c) (paper §V-B), as we adapt them.

Paper: Ul Abrar, Michelusi, "Biased Federated Learning under Wireless Heterogeneity" (arXiv
2503.06078), §V-A/B. Units, receiver noise and round record are those of
:mod:`airfl.papers.biased_fl.schemes.ota` (shared with the proposed scheme).

Baseline notation: q_{m,t} = d E_s |h_{m,t}|^2 / G^2 (largest received amplitude^2 a
device can reach with energy d E_s when ||g|| <= G), s2 = d N0 / G^2. A device whose received
amplitude is r_m (signal r_m g_m after phase alignment) spends ||x_m||^2 = r_m^2 ||g_m||^2/|h_m|^2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from airfl.core.participation import require_participation
from airfl.core.scheme import DesignContext, RoundState
from airfl.runtime.lazy import lazy_import
from airfl.papers.biased_fl.schemes.ota import (
    _OtaScheme,
    _record,
    energy_ratio,
    ota_estimate,
    update_norms,
)

optimize = lazy_import("scipy.optimize")   # ~0.4 s; only OPC designs use it

__all__ = ["BbflAlternative", "BbflInterior", "LcpcOtaComp", "OpcOtaComp", "OpcOtaFl",
           "VanillaOtaFl", "average_mse", "bbfl_receive_level", "opc_denoising_factor",
           "opc_fl_design", "opc_fl_gains", "opc_fl_objective", "opc_mse", "truncation_level"]


# --------------------------------------------------------------------------------------------
# OPC OTA-Comp (Cao, Zhu, Xu, Huang, TWC 2020) — paper §V-B [19]
# --------------------------------------------------------------------------------------------

def opc_mse(eta, q: torch.Tensor, s2: float) -> torch.Tensor:
    """Per-round MSE/G^2 of [19]: sum_m (min(1, sqrt(q_m/eta)) - 1)^2 + s2/eta (eta broadcasts)."""
    eta = torch.as_tensor(eta, dtype=torch.float64).unsqueeze(-1)
    a = torch.clamp(torch.sqrt(q / eta), max=1.0)
    return ((a - 1.0) ** 2).sum(-1) + s2 / eta.squeeze(-1)         # MSE(eta)


def opc_denoising_factor(q: torch.Tensor, s2: float) -> tuple[float, float]:
    """eta* of [19]: the best of eta_i = ((s2 + sum_{k<=i} q_(k)) / sum_{k<=i} sqrt(q_(k)))^2.

    The MSE is C^1 and convex quadratic in 1/sqrt(eta) between consecutive sorted q, so its global
    minimum is the stationary point of one interval, i.e. one of these N candidates.
    """
    qs, _ = torch.sort(q.to(torch.float64))
    cand = ((s2 + torch.cumsum(qs, 0)) / torch.cumsum(torch.sqrt(qs), 0)) ** 2
    mse = opc_mse(cand, q.to(torch.float64), s2)
    best = int(torch.argmin(mse))
    return float(cand[best]), float(mse[best])


def denoised_mean(scheme: _OtaScheme, updates: torch.Tensor, a: torch.Tensor, eta: float,
                  state: RoundState, **extra) -> tuple[torch.Tensor, dict[str, Any]]:
    """g_hat = (1/N)[sum_m a_m g_m + n/sqrt(eta)], all devices transmitting with received
    amplitude sqrt(eta) a_m (OPC OTA-Comp and Vanilla OTA-FL)."""
    es, n0 = scheme.received_radio(state.statistics)
    n, dim = updates.shape
    noise_std = math.sqrt(n0 / eta) / n
    estimate = ota_estimate(updates, a / n, noise_std, state)
    ratios = energy_ratio(math.sqrt(eta) * a, update_norms(updates), state.channel_power, dim, es)
    return estimate, _record(n, dim, state.statistics, noise_std, ratios, denoising_factor=eta,
                             **extra)


class OpcOtaComp(_OtaScheme):
    """Per-round MSE-optimal power control with global instantaneous CSI; all devices transmit."""

    kind = "opc_ota_comp"

    def aggregate(self, updates, state: RoundState, design):
        dim = updates.shape[1]
        q = self.quality(state.channel_power, dim, state.statistics)
        eta, mse = opc_denoising_factor(q, self.noise_ratio(dim, state.statistics))
        a = torch.clamp(torch.sqrt(q / eta), max=1.0)             # weak: full energy; strong: invert
        return denoised_mean(self, updates, a, eta, state, mse=mse)


# --------------------------------------------------------------------------------------------
# Truncated channel inversion to a common level: LCPC OTA-Comp [19] and BB-FL [16]
# --------------------------------------------------------------------------------------------

def average_mse(eta, qbar: np.ndarray, s2: float) -> float:
    """Fading-averaged MSE/G^2 of a common threshold eta: sum_m (1 - exp(-eta/qbar_m)) + s2/eta."""
    return float(np.sum(1.0 - np.exp(-eta / qbar)) + s2 / eta)      # J(eta)


def truncation_level(qbar, s2: float, points: int = 2001) -> tuple[float, bool]:
    """argmin_eta J(eta) over [1e-4, 1e4] * min qbar: log grid, then bounded refinement.

    Returns (eta, at_edge). Golden section on log eta would presume J
    unimodal; J is a sum of saturating terms and s2/eta, so a dense log grid first (2001 points)
    guards against a second local minimum, and a bounded Brent search between the best point's
    neighbours refines it. at_edge flags a minimiser on the upper end of the range: J decreases
    towards N (nobody transmits) when the noise term dominates, as at the literal SNR; the
    LCPC design then stops with NoTransmissionError (airfl.core.participation) instead of
    training nothing.
    """
    qbar = np.asarray(qbar, dtype=float)
    base = float(qbar.min())
    x = np.linspace(math.log(1e-4), math.log(1e4), points)        # x = ln(eta / min qbar)
    values = np.array([average_mse(base * math.exp(v), qbar, s2) for v in x])
    k = int(np.argmin(values))
    lo, hi = x[max(k - 1, 0)], x[min(k + 1, points - 1)]
    res = optimize.minimize_scalar(lambda v: average_mse(base * math.exp(v), qbar, s2), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-12})
    best = res.x if res.fun <= values[k] else x[k]
    return base * math.exp(best), k in (0, points - 1)


class _CommonThreshold(_OtaScheme):
    """Helpers for schemes that invert with a common received amplitude sqrt(eta) above q >= eta."""

    def mean_quality(self, context: DesignContext) -> np.ndarray:
        es, _ = self.radio(context.channel)
        return context.dim * es * context.channel.path_gain.double().numpy() / self.param("G") ** 2

    def interior(self, statistics) -> torch.Tensor:
        """BB-FL's S_in: devices within rho_in = rho_in_frac * rho_max of the PS [16; S §V-B]."""
        radius = float(self.param("rho_in_frac")) * float(self.param("radius_m"))
        return statistics.distances_m.to(torch.float64) <= radius

    def threshold_round(self, updates, state, eta: float):
        """LCPC [19]: a_m = 1{q_m >= eta}; g_hat = (1/N)[sum a g + n/sqrt(eta)]."""
        es, n0 = self.received_radio(state.statistics)
        n, dim = updates.shape
        q = self.quality(state.channel_power, dim, state.statistics)
        active = q >= eta                                              # truncated channel inversion
        count = int(active.sum())
        ratios = energy_ratio(torch.full((count,), math.sqrt(eta), dtype=torch.float64),
                              update_norms(updates)[active], state.channel_power[active], dim, es)
        noise_std = math.sqrt(n0 / eta) / n
        estimate = ota_estimate(updates, active.to(torch.float64) / n, noise_std, state)
        return estimate, _record(count, dim, state.statistics, noise_std, ratios)


class LcpcOtaComp(_CommonThreshold):
    """Common pre-scaler sqrt(eta_L) from statistics; = proposed with gamma_m = gamma, alpha = N gamma."""

    kind = "lcpc_ota_comp"

    def design(self, context: DesignContext) -> dict[str, Any]:
        qbar = self.mean_quality(context)
        s2 = self.noise_ratio(context.dim, context.channel)
        eta, edge = truncation_level(qbar, s2)
        participation = np.exp(-eta / qbar)                       # P(q >= eta) = exp(-eta/qbar)
        why = ("at the edge of its search range: J falls towards N as nobody transmits, because "
               "the receiver noise s2/eta of any transmitting level outweighs the N gradients it "
               "would carry" if edge else "here")
        expected = require_participation(
            self.name, float(participation.sum()),
            f"LCPC's truncation level eta_L = {eta:.3g} (= {eta / qbar.min():.3g} x the weakest "
            f"device's mean quality) minimises the fading-averaged MSE J(eta) of [19] "
            f"{why} (J = {average_mse(eta, qbar, s2):.4g}, N = {qbar.size})",
            "raise the SNR (radio.snr_offset_db; at +30 dB LCPC transmits) or leave LCPC out of "
            "this panel (biased_fl.<panel>.offset_only_curves)")
        return {"eta": eta, "eta_at_grid_edge": edge, "mse": average_mse(eta, qbar, s2),
                "participation": participation.tolist(), "expected_participants": expected}

    def aggregate(self, updates, state: RoundState, design):
        return self.threshold_round(updates, state, float(design["eta"]))


def bbfl_receive_level(qbar_scheduled: np.ndarray, g_th: float, power_constraint: str) -> float:
    """Common received amplitude^2 eta (units of q) of BB-FL's truncated channel inversion [16].

    [16] (Zhu, Wang, Huang, TWC 2020, power control "truncated channel inversion"; its abstract:
    the threshold trades "the update-reliability [as measured by the receive SNR]" against "the
    expected update-truncation ratio", and cell-interior scheduling trades receive SNR against
    the fraction of data exploited): a scheduled device inverts its channel to one common
    receive SNR rho_0 when its path-loss-normalised fading |h|^2/Lambda is >= the power-cutoff
    threshold g_th, and is silent otherwise; rho_0 is the largest level the scheduled devices'
    power constraint allows, i.e. the weakest one's (the interior radius sets it). In the units q = d E_s |h|^2/G^2 of this module
    (energy ratio of a transmission eta/q when ||g|| = G):
    * average (the constraint of [16]): E[eta/q 1{q >= g_th qbar}] = (eta/qbar) E1(g_th) <= 1 for
      every scheduled device, E1 the exponential integral => eta = min_S qbar / E1(g_th);
    * peak (Biased FL's per-round budget ||x||^2 <= d E_s, paper eqs. 7-8): eta <= q whenever
      q >= g_th qbar => eta = g_th min_S qbar.
    """
    from scipy.special import exp1                         # E1(x) = int_x^inf e^-s/s ds

    weakest = float(np.min(qbar_scheduled))
    if power_constraint == "average":
        return weakest / float(exp1(g_th))                 # [16]: rho_0 E1(g_th) = average budget
    if power_constraint == "peak":
        return g_th * weakest                              # eq. 8 form: within d E_s at the cutoff
    raise ValueError(f"power_constraint {power_constraint!r}: allowed average, peak")


class BbflInterior(_CommonThreshold):
    """BB-FL [16] restricted to the interior devices (distance <= 0.7 rho_max, paper §V-B).

    Rule of [16] (not the LCPC-like reading, see below): scheduled device m transmits iff
    |h_{m,t}|^2 / Lambda_m >= g_th (power-cutoff threshold on the small-scale fading; [16]
    compensates the path loss in the transmit power), with received level eta common to all
    (bbfl_receive_level). Every scheduled device is thus received with the same probability
    exp(-g_th) whatever its path loss ([16]'s "expected update-truncation ratio" 1 - exp(-g_th)),
    so, given the number |A_t| = k >= 1 of devices received, A_t is a uniformly random k-subset
    of S and g_hat = [sum_{A_t} g + n/sqrt(eta)] / |A_t| is unbiased for the scheduled-set mean
    (1/|S|) sum_S g. g_th is a system parameter in [16] (it trades receive SNR against truncation);
    the paper does not report its value: default 0.1 (ours), searched in the paper profile.

    A first reading took BB-FL as LCPC's threshold (one eta on q for everyone, chosen by the
    fading-averaged MSE J_S of [19]). That is not [16]'s rule: it truncates far devices far more
    often than near ones (biasing the average BB-FL takes over the received set) and J_S, which
    counts a missing device as error 1 and ignores the division by |A_t|, is minimised at "nobody
    transmits" for every SNR offset up to +10 dB (gap exactly F(0) - F* = 1.8531 in the quick
    profile before this change). A design with (almost) no participation stops with
    NoTransmissionError (airfl.core.participation).
    """

    kind = "bbfl_interior"

    def scheduled_level(self, qbar: np.ndarray, scheduled: np.ndarray) -> float:
        return bbfl_receive_level(qbar[scheduled], float(self.param("g_th")),
                                  self.param("power_constraint"))

    def check_participation(self, scheduled_count: float) -> float:
        g_th = float(self.param("g_th"))
        return require_participation(
            self.name, scheduled_count * math.exp(-g_th),
            f"power-cutoff threshold g_th = {g_th:g} (each scheduled device transmits with "
            f"probability exp(-g_th) = {math.exp(-g_th):.3g}, {scheduled_count:g} scheduled)",
            "lower g_th, or widen rho_in_frac")

    def design(self, context: DesignContext) -> dict[str, Any]:
        inside = self.interior(context.channel).numpy()
        if not bool(inside.any()):
            raise ValueError(f"{self.name}: no device within rho_in of the PS")
        qbar = self.mean_quality(context)
        g_th = float(self.param("g_th"))
        expected = self.check_participation(float(inside.sum()))
        return {"interior": inside.tolist(), "g_th": g_th,
                "eta_in": self.scheduled_level(qbar, inside),
                "transmit_probability": math.exp(-g_th), "expected_participants": expected}

    def trained_clients(self, design: dict[str, Any]) -> tuple[int, ...]:
        """S_in: the only devices whose gradients BB-FL Interior ever aggregates."""
        return tuple(int(m) for m in np.flatnonzero(design["interior"]))

    def aggregate(self, updates, state: RoundState, design):
        scheduled = torch.as_tensor(design["interior"], dtype=torch.bool)
        return self.cutoff_round(updates, state, float(design["eta_in"]), scheduled,
                                 float(design["g_th"]))

    def cutoff_round(self, updates, state: RoundState, eta: float, scheduled: torch.Tensor,
                     g_th: float):
        """A_t = {m in S: |h_m|^2/Lambda_m >= g_th}; g_hat = [sum_{A_t} g + n/sqrt(eta)]/|A_t| [16]."""
        es, n0 = self.received_radio(state.statistics)
        dim = updates.shape[1]
        fading = state.channel_power.to(torch.float64) / state.statistics.path_gain.to(torch.float64)
        active = scheduled & (fading >= g_th)                         # [16]: power-cutoff threshold
        count = int(active.sum())
        ratios = energy_ratio(torch.full((count,), math.sqrt(eta), dtype=torch.float64),
                              update_norms(updates)[active], state.channel_power[active], dim, es)
        if count == 0:                                                # A_t empty -> 0
            estimate = torch.zeros(dim, dtype=updates.dtype, device=updates.device)
            return estimate, _record(0, dim, state.statistics, 0.0, ratios)
        noise_std = math.sqrt(n0 / eta) / count                       # PS divides by |A_t| (our reading)
        estimate = ota_estimate(updates, active.to(torch.float64) / count, noise_std, state)
        return estimate, _record(count, dim, state.statistics, noise_std, ratios)


class BbflAlternative(BbflInterior):
    """BB-FL [16] alternating: all devices with probability q_alt, else the interior set; each
    set has its own receive level (its weakest member's), the same cutoff g_th."""

    kind = "bbfl_alternative"

    def design(self, context: DesignContext) -> dict[str, Any]:
        out = super().design(context)
        qbar = self.mean_quality(context)
        everyone = np.ones(qbar.size, dtype=bool)
        out["eta_all"] = self.scheduled_level(qbar, everyone)
        q_alt = float(self.param("q_alt"))
        interior = float(np.sum(out["interior"]))
        out["expected_participants"] = self.check_participation(
            q_alt * qbar.size + (1.0 - q_alt) * interior)
        return out

    def trained_clients(self, design: dict[str, Any]) -> None:
        """Every device: the all-device rounds schedule the exterior ones too."""
        return None

    def aggregate(self, updates, state: RoundState, design):
        draw = float(torch.rand((), generator=state.streams("sampling"), dtype=torch.float64))
        use_all = draw < float(self.param("q_alt"))                      # "randomly alternating" (paper §V-B): q_alt
        scheduled = torch.ones(updates.shape[0], dtype=torch.bool) if use_all else \
            torch.as_tensor(design["interior"], dtype=torch.bool)
        eta = float(design["eta_all"] if use_all else design["eta_in"])
        estimate, record = self.cutoff_round(updates, state, eta, scheduled, float(design["g_th"]))
        record["scheduled_all"] = use_all
        return estimate, record


# --------------------------------------------------------------------------------------------
# Vanilla OTA-FL (Yang, Jiang, Shi, Ding, TWC 2020) — paper §V-B [13]
# --------------------------------------------------------------------------------------------

class VanillaOtaFl(_OtaScheme):
    """Full channel inversion to the worst instantaneous channel: eta_t = min_m q_{m,t}, a_m = 1."""

    kind = "vanilla_ota_fl"

    def aggregate(self, updates, state: RoundState, design):
        n, dim = updates.shape
        q = self.quality(state.channel_power, dim, state.statistics)
        eta = float(q.min())
        return denoised_mean(self, updates, torch.ones(n, dtype=torch.float64), eta, state)


# --------------------------------------------------------------------------------------------
# OPC OTA-FL (Cao, Zhu, Xu, Wang, Cui, JSAC 2022), genie-aided — paper §V-B [20]
# --------------------------------------------------------------------------------------------

def _opc_fl_candidate(q, omega, eta0, kappa_peak, lam):
    """a_{m,t}(lambda_m) = min(sqrt(kappa_peak q/eta0), omega q/(omega q + lambda_m eta0))."""
    peak = np.sqrt(kappa_peak * q / eta0)                                     # e_{m,t} <= kappa_peak
    return np.minimum(peak, omega * q / (omega * q + lam * eta0))              # regularised inversion


def opc_fl_gains(q: np.ndarray, omega: np.ndarray, eta0: float, kappa_peak: float,
                 steps: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Per-device optimal gains a [T, N] and multipliers lambda [N] for a fixed eta0.

    lambda_m = 0 when the average-energy constraint (1/T) sum_t a^2 eta0/q <= 1 is slack; else
    bisection on ln lambda_m (energy decreases in lambda), returning the feasible end of the
    bracket so the constraint holds to rounding.
    """
    omega = omega[:, None]
    energy = lambda a: np.mean(a ** 2 * eta0 / q, axis=0)                      # (1/T) sum_t e_{m,t}
    zero = _opc_fl_candidate(q, omega, eta0, kappa_peak, 0.0)
    tight = energy(zero) > 1.0
    lam = np.zeros(q.shape[1])
    if tight.any():
        hi = np.full(q.shape[1], math.log(float(np.max(omega * q)) / eta0 + 1e-300))
        while True:                                                            # bracket: energy(hi) <= 1
            over = energy(_opc_fl_candidate(q, omega, eta0, kappa_peak, np.exp(hi))) > 1.0
            if not over.any():
                break
            hi = np.where(over, hi + 5.0, hi)
        lo = hi - 200.0
        for _ in range(steps):
            mid = 0.5 * (lo + hi)
            over = energy(_opc_fl_candidate(q, omega, eta0, kappa_peak, np.exp(mid))) > 1.0
            lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
        lam = np.where(tight, np.exp(hi), 0.0)
    return _opc_fl_candidate(q, omega, eta0, kappa_peak, lam), lam


def opc_fl_objective(a: np.ndarray, omega: np.ndarray, eta0: float, G: float, d: int,
                     N0: float) -> float:
    """J = sum_t omega_t [ (G^2/N) sum_m (a - 1)^2 + d N0/(N^2 eta0) ].

    eta0 is in the units of q = d E_s |h|^2/G^2 (a device's received amplitude is sqrt(eta0) a
    and its energy ratio a^2 eta0/q), so the noise of g_hat = (1/N)[sum a g + n/sqrt(eta0)] has
    total variance d N0/(N^2 eta0): the bracket is the per-round MSE bound of [20] (distortion
    ||(1/N) sum (a-1) g||^2 <= (G^2/N) sum (a-1)^2 by Cauchy-Schwarz, plus noise).
    """
    n = a.shape[1]
    per_round = G ** 2 / n * np.sum((a - 1.0) ** 2, axis=1) + d * N0 / (n ** 2 * eta0)
    return float(np.sum(omega * per_round))


def opc_fl_design(q: np.ndarray, eta: float, mu: float, kappa_peak: float, G: float, d: int,
                  N0: float, grid: int = 60) -> dict[str, Any]:
    """Genie-aided OPC OTA-FL: best eta0 on a log grid [1e-3, 1e2] x median q."""
    T = q.shape[0]
    omega = (1.0 - eta * mu) ** (2 * (T - 1 - np.arange(T)))        # omega_t = (1 - eta mu)^{2(T-1-t)}
    med = float(np.median(q))
    best = None
    for i, eta0 in enumerate(np.logspace(math.log10(1e-3 * med), math.log10(1e2 * med), grid)):
        a, lam = opc_fl_gains(q, omega, float(eta0), kappa_peak)
        value = opc_fl_objective(a, omega, float(eta0), G, d, N0)
        if best is None or value < best["objective"]:
            best = {"eta0": float(eta0), "objective": value, "gains": a, "multipliers": lam,
                    "eta0_at_grid_edge": i in (0, grid - 1)}
    return best


class OpcOtaFl(_OtaScheme):
    """Genie-aided power control over all T rounds (non-causal CSI), fixed normalisation eta0."""

    kind = "opc_ota_fl"
    uses_future_channels = True

    def design(self, context: DesignContext) -> dict[str, Any]:
        if context.future_channel_power is None:
            raise ValueError(f"{self.name}: OPC OTA-FL is genie-aided and needs future_channel_power")
        _, n0 = self.radio(context.channel)
        power = context.future_channel_power(context.rounds).to(torch.float64)     # [T, N]
        q = self.quality(power, context.dim, context.channel).numpy()
        best = opc_fl_design(q, float(self.param("eta")), float(self.param("mu")),
                             float(self.param("kappa_peak")), float(self.param("G")), context.dim,
                             n0, int(self.param("eta0_grid")))
        energy = best["gains"] ** 2 * best["eta0"] / q                         # e_{m,t}
        return {"eta0": best["eta0"], "eta0_at_grid_edge": best["eta0_at_grid_edge"],
                "objective": best["objective"],
                "gains": best["gains"].tolist(), "multipliers": best["multipliers"].tolist(),
                "channel_power": power.numpy().tolist(),
                "average_energy": energy.mean(axis=0).tolist(),
                "peak_energy": energy.max(axis=0).tolist()}

    def aggregate(self, updates, state: RoundState, design):
        es, n0 = self.received_radio(state.statistics)
        n, dim = updates.shape
        t = state.round_index                                  # rounds are 1..T (future row t-1)
        if not 1 <= t <= len(design["gains"]):
            raise ValueError(f"{self.name}: round {t} outside the genie design's 1..{len(design['gains'])}")
        planned = torch.as_tensor(design["channel_power"][t - 1], dtype=torch.float64)
        if not torch.allclose(planned, state.channel_power.to(torch.float64), rtol=1e-9, atol=0.0):
            raise ValueError(f"{self.name}: round {t} channel differs from the genie design's "
                             "(the design must use this trial's channel sequence)")
        a = torch.as_tensor(design["gains"][t - 1], dtype=torch.float64)
        eta0 = float(design["eta0"])
        noise_std = math.sqrt(n0 / eta0) / n                    # (1/N)[sum a g + n/sqrt(eta0)]
        estimate = ota_estimate(updates, a / n, noise_std, state)
        ratios = energy_ratio(math.sqrt(eta0) * a, update_norms(updates), state.channel_power, dim, es)
        return estimate, _record(n, dim, state.statistics, noise_std, ratios)
