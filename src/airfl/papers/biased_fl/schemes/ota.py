"""The proposed OTA-FL scheme of Biased FL and the round primitives its baselines share.

Paper: Ul Abrar, Michelusi, "Biased Federated Learning under Wireless Heterogeneity" (arXiv
2503.06078), §II-B (eqs. 6-10), §IV-A, §V-A/B.

Every scheme aggregates per-round GRADIENTS g [N, d] in physical units:
Lambda_m = statistics.path_gain, |h_{m,t}|^2 = state.channel_power, E_s = energy_per_symbol,
N0 = noise_psd, B = bandwidth_hz. The receiver noise is real N(0, N0 I_d), or N(0, N0/2 I_d) with
`ota_noise: real_part` (KEPT_NOISE_POWER), drawn from the round's "noise" stream; every OTA
round lasts d/B (d symbols at B symbols/s: our reading). No clipping: when ||g|| > G the energy
budget d E_s is exceeded and logged (the paper does not clip; record "max_energy_ratio" /
"energy_violations").

The six OTA baselines of Fig. 2(b,c) are in :mod:`airfl.papers.biased_fl.schemes.ota_baselines`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from airfl.channel.ota import inversion_threshold_power, truncated_inversion_mask
from airfl.core.participation import require_participation
from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.papers.biased_fl.design import ota as design_ota
from airfl.papers.biased_fl.schemes.params import OTA_PARAMS as PARAMS_SCHEMA

__all__ = ["KEPT_NOISE_POWER", "PARAMS_SCHEMA", "BiasedOta", "energy_ratio", "ota_estimate", "update_norms"]

KEPT_NOISE_POWER = {"real_full": 1.0, "real_part": 0.5}
"""The receiver noise per real entry of g_hat, as a fraction of N0. Paper eq. 6: z_t ~ CN(0, N0 I)
while the gradient is real. real_full (default, our reading): real N(0, N0) noise per entry, the
d N0 / alpha^2 variance Lemma 1 and the designs use. real_part: the PS keeps Re(y_t), and the real
part of a CN(0, N0) entry is N(0, N0/2): half the noise power."""


class _OtaScheme(Scheme):
    """Shared parameter access (schema defaults) and radio constants."""

    def param(self, name: str):
        if name in self.params:
            return self.params[name]
        spec = PARAMS_SCHEMA[self.kind]["properties"].get(name, {})
        if "default" not in spec:
            raise ValueError(f"scheme {self.name!r} ({self.kind}): missing param {name!r}")
        return spec["default"]

    @staticmethod
    def radio(statistics) -> tuple[float, float]:
        if statistics.energy_per_symbol is None or statistics.noise_psd is None:
            raise ValueError("Biased FL OTA schemes need energy_per_symbol and noise_psd")
        return float(statistics.energy_per_symbol), float(statistics.noise_psd)

    def received_radio(self, statistics) -> tuple[float, float]:
        """E_s and the noise power per real entry that the receiver keeps, N0 x
        KEPT_NOISE_POWER[ota_noise]: the simulated noise of a round (the designs keep the
        paper's N0, as Lemma 1's d N0 / alpha^2 has it)."""
        es, n0 = self.radio(statistics)
        return es, n0 * KEPT_NOISE_POWER[self.param("ota_noise")]

    def quality(self, channel_power: torch.Tensor, dim: int, statistics) -> torch.Tensor:
        """q_{m,t} = d E_s |h|^2 / G^2 (our baselines' notation)."""
        es, _ = self.radio(statistics)
        return dim * es * channel_power.to(torch.float64) / self.param("G") ** 2

    def noise_ratio(self, dim: int, statistics) -> float:
        """s2 = d N0 / G^2 (our baselines' notation)."""
        _, n0 = self.radio(statistics)
        return dim * n0 / self.param("G") ** 2


# --------------------------------------------------------------------------------------------
# Shared per-round primitives
# --------------------------------------------------------------------------------------------

def ota_estimate(updates: torch.Tensor, weights: torch.Tensor, noise_std: float,
                 state: RoundState) -> torch.Tensor:
    """g_hat = sum_m w_m g_m + noise_std * n, n ~ N(0, I_d) from the round's noise stream (KEPT_NOISE_POWER)."""
    noise = torch.randn(updates.shape[1], generator=state.streams("noise"), dtype=torch.float64)
    weights = weights.to(device=updates.device, dtype=torch.float64)
    estimate = weights @ updates.to(torch.float64) + noise_std * noise.to(updates.device)  # eq. 9 form
    return estimate.to(updates.dtype)


def update_norms(updates: torch.Tensor) -> torch.Tensor:
    """||g_m|| as a CPU float64 [N] tensor (the channel quantities live on the CPU)."""
    return torch.linalg.vector_norm(updates.to(torch.float64), dim=1).cpu()


def energy_ratio(received_amplitude: torch.Tensor, norms: torch.Tensor,
                 channel_power: torch.Tensor, dim: int, energy_per_symbol: float) -> torch.Tensor:
    """||x_m||^2 / (d E_s) with x_m = r_m g_m / h_m (received amplitude r_m; paper eq. 7 form)."""
    energy = received_amplitude ** 2 * norms ** 2 / channel_power.to(torch.float64)  # ||r g / h||^2
    return energy / (dim * energy_per_symbol)


def _record(participants: int, dim: int, statistics, noise_std: float, ratios: torch.Tensor,
            **extra) -> dict[str, Any]:
    """The per-round record shared by every OTA scheme (latency d/B; energy log, no clipping)."""
    return {"participants": int(participants), "latency_s": dim / statistics.bandwidth_hz,
            "privacy": None, "noise_std": float(noise_std),
            "max_energy_ratio": float(ratios.max()) if ratios.numel() else 0.0,
            "energy_violations": int((ratios > 1.0 + 1e-12).sum()), **extra}


# --------------------------------------------------------------------------------------------
# Proposed: Biased OTA-FL (paper §II-B, §IV-A)
# --------------------------------------------------------------------------------------------

class BiasedOta(_OtaScheme):
    """Truncated channel inversion with per-device pre-scalers gamma_m and post-scaler alpha.

    design: gamma from design.ota per variant (opt: SCA, nv: eq. 22, zb: bisection); returns
    gamma, alpha, p, beta, zeta (Lemma 1), psi (eq. 20a), bound terms (Theorem 1).
    aggregate: g_hat = (sum_m chi_m gamma_m g_m + n)/alpha, chi_m = 1{|h_m| >= G gamma_m/sqrt(d E_s)}.
    """

    kind = "biased_ota"

    def design(self, context: DesignContext) -> dict[str, Any]:
        es, n0 = self.radio(context.channel)
        lam = context.channel.path_gain.double().numpy()
        G, d = float(self.param("G")), context.dim
        eta, mu, kappa = float(self.param("eta")), float(self.param("mu")), float(self.param("kappa"))
        variant = self.param("variant")
        extra: dict[str, Any] = {}
        if variant == "opt":
            out = design_ota.design_sca(lam, G=G, d=d, Es=es, N0=n0, eta=eta, mu=mu, kappa=kappa,
                                        max_iter=int(self.param("sca_max_iter")),
                                        tol=float(self.param("sca_tol")),
                                        solver=self.param("sca_solver"))
            extra["sca"] = {key: out[key] for key in (
                "start", "iterations", "converged", "stop_reason", "psi_history",
                "iterations_per_start", "converged_per_start", "stop_reason_per_start")}
            extra["sca"]["status_counts"] = {status: out["statuses"].count(status)
                                             for status in sorted(set(out["statuses"]))}
        elif variant == "nv":
            out = design_ota.design_nv(lam, G=G, d=d, Es=es)
        elif variant == "zb":
            out = design_ota.design_zb(lam, G=G, d=d, Es=es)
        else:
            raise ValueError(f"biased_ota: unknown variant {variant!r}; allowed: opt, nv, zb")
        zeta = design_ota.zeta_ota(out["p"], out["beta"], out["alpha"], G=G, d=d, N0=n0)
        require_participation(self.name, float(np.sum(out["beta"])),
                              f"pre-scalers gamma of variant {variant!r} (device m transmits with "
                              f"probability beta_m = exp(-c_m gamma_m^2), paper §II-B)",
                              "check the design constants G, kappa, eta and the SNR")
        result = {"variant": variant, "gamma": np.asarray(out["gamma"]).tolist(),
                  "alpha": float(out["alpha"]), "p": np.asarray(out["p"]).tolist(),
                  "beta": np.asarray(out["beta"]).tolist(), "zeta": zeta,
                  "psi": design_ota.psi(zeta, out["p"], eta, mu, kappa), **extra}
        diameter = self.params.get("diameter")
        terms = design_ota.bound_terms(out["p"], zeta, eta, mu, kappa,
                                       float(diameter) if diameter else 0.0, context.rounds)
        if not diameter:
            terms["init"] = terms["total"] = None     # D unknown: only bias and var are defined
        result["bound"] = terms
        return result

    def aggregate(self, updates, state: RoundState, design):
        es, n0 = self.received_radio(state.statistics)
        dim = updates.shape[1]
        gamma = torch.as_tensor(design["gamma"], dtype=torch.float64)
        alpha = float(design["alpha"])
        threshold = inversion_threshold_power(grad_bound=self.param("G"), scale=gamma, dim=dim,
                                              energy_per_symbol=es)                # eq. 8, squared
        chi = truncated_inversion_mask(state.channel_power, threshold)           # eq. 8
        weights = chi.to(torch.float64) * gamma / alpha                          # eq. 9: chi gamma / alpha
        estimate = ota_estimate(updates, weights, math.sqrt(n0) / alpha, state)  # eq. 9: + z/alpha
        ratios = energy_ratio(gamma[chi], update_norms(updates)[chi], state.channel_power[chi], dim, es)
        return estimate, _record(int(chi.sum()), dim, state.statistics, math.sqrt(n0) / alpha, ratios)
