"""The knowledge-sharing schemes of OTA-FD compared in one figure (spec §7, kind ``ota_fd``).

In federated distillation a scheme aggregates the WDs' per-class soft labels, not model
updates: `aggregate` takes q [M, K*K] (device, class-major K x K) and returns the estimate
r [K*K] of the global per-class soft labels q^k = sum_i (B_i^k/B^k) q_i^k, or None when the
method shares nothing (local only). Methods:

* ``otafd_prop`` - proposed: Prop. 1 transceiver with the DP constraint (Theorem 2).
* ``fd_ota_nodp`` - OTA with receiver noise only (lambda = lambda_PA; the cost of DP alone).
* ``fd_noiseless`` - ideal r = q_t (upper bound of FD).
* ``local_only`` - no sharing, gamma = 0 (lower bound).
* ``otafd_uniformw`` - OTA channel inversion to equal weights 1/M (Phi_1 != 0), DP met by
  lambda_DP (the value of the B_i^k/B^k weighting).
* ``fd_digital_ldp`` - every WD adds its own DP noise (local DP) and sends over orthogonal
  error-free links; the PS averages with B_i^k/B^k (the value of the shared OTA noise).

The artificial-noise variant is ``otafd_prop`` with ``an_mode: full_power``. All of the
benchmarks are reconstructed [R] (spec §7).

Every draw comes from the round's streams: the receiver noise from ``noise`` and artificial
noise from ``dp``, so all methods of a figure see the same channel and noise draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.papers.ota_fd import transceiver as tx

METHODS = ("otafd_prop", "fd_ota_nodp", "fd_noiseless", "local_only", "otafd_uniformw",
           "fd_digital_ldp")
OTA = ("otafd_prop", "fd_ota_nodp", "otafd_uniformw")
PRIVATE = ("otafd_prop", "otafd_uniformw", "fd_digital_ldp")


def sigma_n2_of(*, power: float, snr_db: float) -> float:
    """sigma_n^2 = P / 10^(snr_db/10) (spec §7 defaults: SNR defined at the WD's peak power) [R]."""
    return power / 10 ** (snr_db / 10)


class OtaFdScheme(Scheme):
    """One OTA-FD method (curve parameters: method, eps, delta, power, snr_db, sensitivity_mode,
    an_mode, gamma, clip_S; see params.schema.yaml)."""

    kind = "ota_fd"

    def __init__(self, name: str, **params: Any):
        super().__init__(name, **params)
        self.method = params["method"]
        if self.method not in METHODS:
            raise ValueError(f"curves.{name}.method: unknown {self.method!r}; allowed: "
                             + ", ".join(METHODS))
        self.gamma = 0.0 if self.method == "local_only" else float(params["gamma"])
        self.clip_S = float(params["clip_S"])
        self.power = float(params["power"])
        self.sigma_n2 = sigma_n2_of(power=self.power, snr_db=float(params["snr_db"]))

    @property
    def shares(self) -> bool:
        return self.method != "local_only"

    @property
    def private(self) -> bool:
        return self.method in PRIVATE

    def design(self, context: DesignContext) -> dict[str, Any]:
        """T is fixed before training (the DP noise of every round depends on it, spec §3.3):
        here the schedule's rounds (Prop. 2 is evaluated in the analysis; quick uses fixed T)."""
        return {"T": int(context.rounds), "sigma_n2": self.sigma_n2}

    def channel_uses(self, num_classes: int, num_devices: int) -> int:
        """Uplink channel uses per round: K vectors of length K in analog form (spec X1); the
        noiseless benchmark is counted as the same ideal link, local training sends nothing,
        digital FD one use per real number per WD on orthogonal links (M K^2, [R])."""
        if self.method == "fd_digital_ldp":
            return num_devices * num_classes * num_classes
        return num_classes * num_classes if self.shares else 0

    def aggregate(self, updates: torch.Tensor, state: RoundState, design: dict[str, Any]
                  ) -> tuple[torch.Tensor | None, dict[str, Any]]:
        counts = np.asarray(state.extras["class_counts"], dtype=np.float64)   # B_i^k [M, K]
        M, K = counts.shape
        q = updates.detach().double().cpu().numpy().reshape(M, K, K)
        if self.method == "local_only":
            return None, {}
        weights = tx.class_weights(counts)
        if self.method == "fd_noiseless":
            r = (weights[:, :, None] * q).sum(axis=0)
            return torch.from_numpy(r.reshape(-1)), {}
        T = int(design["T"])
        h_abs = np.sqrt(state.channel_power.double().cpu().numpy())
        delta = np.full(M, float(self.params["delta"]))
        if self.method == "fd_digital_ldp":
            return self._digital(q, counts, delta, T, state)
        rho = None
        if self.private:
            rho = tx.privacy_coefficients(eps=np.full(M, float(self.params["eps"])), delta=delta,
                                          class_counts=counts,
                                          sensitivity_mode=self.params["sensitivity_mode"])
        uniform = np.full((M, K), 1.0 / M) if self.method == "otafd_uniformw" else None
        d = tx.prop1_design(h_abs=h_abs, power=np.full(M, self.power), class_counts=counts,
                            rho=rho, sigma_n2=self.sigma_n2, T=T, K=K, weights=uniform,
                            an_mode=self.params["an_mode"])
        noise = torch.randn(K, K, generator=state.streams("noise"), dtype=torch.float64).numpy()
        artificial = torch.randn(M, K, K, generator=state.streams("dp"),
                                 dtype=torch.float64).numpy()
        r = tx.receive(soft_labels=q, h_abs=h_abs, design=d, sigma_n2=self.sigma_n2,
                       noise=noise, artificial=artificial)
        record = {"case2_fraction": float(np.mean(d.case == 2)), "nu_median": float(np.median(d.nu)),
                  "nu_max": float(np.max(d.nu))}
        if self.private:
            eps_real = tx.realised_eps(h_abs=h_abs, design=d, class_counts=counts,
                                       sigma_n2=self.sigma_n2, delta=delta, T=T, K=K,
                                       sensitivity_mode=self.params["sensitivity_mode"])
            record["eps_real_ratio"] = float(np.max(eps_real) / float(self.params["eps"]))
        return torch.from_numpy(r.reshape(-1)), record

    def _digital(self, q, counts, delta, T, state):
        """fd_digital_ldp: local Gaussian noise per WD (transceiver.local_dp_std), exact links."""
        M, K = counts.shape
        std = tx.local_dp_std(eps=np.full(M, float(self.params["eps"])), delta=delta,
                              class_counts=counts, T=T,
                              sensitivity_mode=self.params["sensitivity_mode"])
        noise = torch.randn(M, K, K, generator=state.streams("dp"), dtype=torch.float64).numpy()
        r = tx.receive_digital(soft_labels=q, class_counts=counts, std=std, noise=noise)
        nu = ((tx.class_weights(counts) * std) ** 2).sum(axis=0)
        return torch.from_numpy(r.reshape(-1)), {
            "nu_median": float(np.median(nu)), "nu_max": float(np.max(nu)),
            "eps_real_ratio": 1.0}       # each WD's own noise meets its budget exactly
