"""The knowledge-sharing schemes of OTA-FD compared in one figure (kind ``ota_fd``).

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
* ``otafl_dp`` - the FL benchmark: one global model, FedSGD/FedAvg updates clipped to C
  (core `clip_by_norm`), sent over the air with Prop. 1's data-weighted channel inversion
  (one "class" of D entries, weights B_i/B) and lambda = min(lambda_PA, lambda_DP) under the FL
  budgets (the mechanism is reconstructed [R]; sensitivity 2C, since one sample can move a
  whole-clipped update across the ball: `transceiver.whole_update_counts`).
* ``fl_noiseless`` - the upper bound of ``otafl_dp``: the same updates clipped to C and the same
  weights B_i/B, aggregated without channel or DP noise (r = sum_i (B_i/B) clip_C(u_i)).

The two FL methods average models (`model_averaging`): the wing's trainer runs them through
the core's FL round loop (`airfl.core.loop.run_trial`) on the same data, channels and CRN.

The artificial-noise variant is ``otafd_prop`` with ``an_mode: full_power``. All of the
benchmarks are reconstructed [R].

Round records of the DP methods carry the per-round events the privacy stage composes
(:mod:`.privacy`: ``privacy``, Lemma 1 and Theorem 2 as the paper accounts them, and
``privacy_simulated``, the sensitivity the code's shared vectors really have); the methods
without DP carry none (eps = inf in the privacy CSVs, as the other wings' non-private curves).

Every draw comes from the round's streams: the receiver noise from ``noise`` and artificial
noise from ``dp``, so all methods of a figure see the same channel and noise draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from airfl.core.aggregation import clip_by_norm, gaussian_noise
from airfl.core.scheme import DesignContext, RoundState, Scheme
from airfl.papers.ota_fd import privacy as dp
from airfl.papers.ota_fd import theorem1 as th
from airfl.papers.ota_fd import transceiver as tx

FL = ("otafl_dp", "fl_noiseless")
METHODS = ("otafd_prop", "fd_ota_nodp", "fd_noiseless", "local_only", "otafd_uniformw",
           "fd_digital_ldp") + FL
OTA = ("otafd_prop", "fd_ota_nodp", "otafd_uniformw")
PRIVATE = ("otafd_prop", "otafd_uniformw", "fd_digital_ldp", "otafl_dp")


def sigma_n2_of(*, power: float, snr_db: float) -> float:
    """sigma_n^2 = P / 10^(snr_db/10) (the SNR defined at the WD's peak power) [R]."""
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
        self._events: dp.RoundEvents | None = None     # the trial's compositions (round 1: new)

    @property
    def shares(self) -> bool:
        return self.method != "local_only"

    @property
    def private(self) -> bool:
        return self.method in PRIVATE

    @property
    def model_averaging(self) -> bool:
        """FL benchmarks: one global model, run by the core's FL loop."""
        return self.method in FL

    def budgets(self, state: RoundState, M: int) -> tuple[np.ndarray, np.ndarray]:
        """(eps_i, delta_i) [M] of the WDs: `eps`/`delta` for all, or per-WD draws from
        `eps_uniform` / `delta_uniform` ([lo, hi], linear uniform, our reading), one draw per
        trial from its `budgets` stream (the same for every round and every method: CRN).
        Stated for FD on ResNet-CIFAR10 and for the FL benchmark (Appendix E)."""
        if "eps_uniform" not in self.params:
            return np.full(M, float(self.params["eps"])), np.full(M, float(self.params["delta"]))
        rng = state.streams.trial_numpy("budgets")
        eps = rng.uniform(*self.params["eps_uniform"], size=M)
        delta = rng.uniform(*self.params.get("delta_uniform", [self.params["delta"]] * 2), size=M)
        return eps, delta

    def design(self, context: DesignContext) -> dict[str, Any]:
        """T is fixed before training (the DP noise of every round depends on it):
        the curve's own `T` (fixed-T sweep, `otafd_fixedT`) or the schedule's rounds
        (Prop. 2 is evaluated in the analysis X6)."""
        T = self.params.get("T") or context.rounds
        return {"T": int(T), "sigma_n2": self.sigma_n2, "dim": int(context.dim)}

    def channel_uses(self, num_classes: int, num_devices: int) -> int:
        """Uplink channel uses per round: K vectors of length K in analog form; the
        noiseless benchmark is counted as the same ideal link, local training sends nothing,
        digital FD one use per real number per WD on orthogonal links (M K^2, [R])."""
        if self.method == "fd_digital_ldp":
            return num_devices * num_classes * num_classes
        return num_classes * num_classes if self.shares else 0

    def _round_events(self, state: RoundState) -> dp.RoundEvents:
        """The trial's privacy compositions, fresh at round 1 (a trial's rounds run in order)."""
        if state.round_index == 1 or self._events is None:
            self._events = dp.RoundEvents()
        return self._events

    def aggregate(self, updates: torch.Tensor, state: RoundState, design: dict[str, Any]
                  ) -> tuple[torch.Tensor | None, dict[str, Any]]:
        if self.model_averaging:
            return self._federated(updates, state, design)
        counts = np.asarray(state.extras["class_counts"], dtype=np.float64)   # B_i^k [M, K]
        M, K = counts.shape
        q = updates.detach().double().cpu().numpy().reshape(M, K, K)
        if self.method == "local_only":
            return None, {}
        weights = tx.class_weights(counts)
        if self.method == "fd_noiseless":
            r = (weights[:, :, None] * q).sum(axis=0)
            return torch.from_numpy(r.reshape(-1)), self._theorem1(counts, weights, np.zeros(K), q)
        T = int(design["T"])
        h_abs = np.sqrt(state.channel_power.double().cpu().numpy())
        eps, delta = self.budgets(state, M) if self.private else (None, None)
        if self.method == "fd_digital_ldp":
            return self._digital(q, counts, eps, delta, T, state)
        rho = None
        if self.private:
            rho = tx.privacy_coefficients(eps=eps, delta=delta, class_counts=counts,
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
                  "nu_mean": float(np.mean(d.nu)), "nu_max": float(np.max(d.nu)),
                  **self._theorem1(counts, d.weights, d.nu, q)}
        if self.private:
            eps_real = tx.realised_eps(h_abs=h_abs, design=d, class_counts=counts,
                                       sigma_n2=self.sigma_n2, delta=delta, T=T, K=K,
                                       sensitivity_mode=self.params["sensitivity_mode"])
            record["eps_real_ratio"] = float(np.max(eps_real / eps))
            common = dict(h_abs=h_abs, design=d, class_counts=counts, sigma_n2=self.sigma_n2, K=K)
            record.update(self._round_events(state).record(
                dp.ota_multipliers(**common, sensitivity_mode=self.params["sensitivity_mode"]),
                dp.ota_multipliers(**common, sensitivity_mode="per_class")))  # q_i^k: / B_i^k
        return torch.from_numpy(r.reshape(-1)), record

    def _theorem1(self, counts: np.ndarray, realised: np.ndarray, nu: np.ndarray,
                  q: np.ndarray) -> dict[str, Any]:
        """Theorem 1's Phi_{1,i,t}, Phi_{2,i,t} [M] of the round (`theorem1.phi1`, `phi2`) for a
        curve that asks for its Omega (`theory`, X4); nothing otherwise."""
        if not self.params.get("theory"):
            return {}
        share = counts / counts.sum(axis=1, keepdims=True)                   # B_i^k / B_i
        return {"theorem1_phi1": th.phi1(share=share, ideal=tx.class_weights(counts),
                                         realised=realised, soft_labels=q).tolist(),
                "theorem1_phi2": th.phi2(share=share, nu=nu, K=counts.shape[1]).tolist()}

    def _digital(self, q, counts, eps, delta, T, state):
        """fd_digital_ldp: local Gaussian noise per WD (transceiver.local_dp_std), exact links."""
        M, K = counts.shape
        std = tx.local_dp_std(eps=eps, delta=delta, class_counts=counts, T=T,
                              sensitivity_mode=self.params["sensitivity_mode"])
        noise = torch.randn(M, K, K, generator=state.streams("dp"), dtype=torch.float64).numpy()
        r = tx.receive_digital(soft_labels=q, class_counts=counts, std=std, noise=noise)
        nu = ((tx.class_weights(counts) * std) ** 2).sum(axis=0)
        events = self._round_events(state).record(
            dp.digital_multipliers(std=std, class_counts=counts,
                                   sensitivity_mode=self.params["sensitivity_mode"]),
            dp.digital_multipliers(std=std, class_counts=counts, sensitivity_mode="per_class"))
        return torch.from_numpy(r.reshape(-1)), {
            "nu_median": float(np.median(nu)), "nu_mean": float(np.mean(nu)),
            "nu_max": float(np.max(nu)), "eps_real_ratio": 1.0, **events}  # each WD's own noise meets its budget exactly

    def _federated(self, updates: torch.Tensor, state: RoundState, design: dict[str, Any]):
        """OTA-FL with DP / noiseless FL on model updates [M, D] ([R]). Each update is
        clipped to C and divided by C (unit ball) and aggregated by `transceiver.receive_fl`
        with Prop. 1's P1 for weights B_i/B (one class, K -> D) and lambda = min(lambda_PA,
        lambda_DP), lambda_DP for the sensitivity 2C (`tx.whole_update_counts`: the update is
        clipped as a whole, so Lemma 1's / B_i does not apply). Returns C r."""
        sizes = state.data_sizes.double().cpu().numpy()
        weights = sizes / sizes.sum()
        clip = float(self.params["clip_C"])
        clipped, norms = clip_by_norm(updates, clip)
        if self.method == "fl_noiseless":      # otafl_dp without its noise: its upper bound
            return torch.from_numpy(weights).to(updates) @ clipped, {
                "clipped_fraction": float((norms > clip).float().mean())}
        M, D, T = updates.shape[0], int(design["dim"]), int(design["T"])
        h_abs = np.sqrt(state.channel_power.double().cpu().numpy())
        counts = sizes[:, None]                   # one "class": B_i (the weights B_i/B)
        whole = tx.whole_update_counts(M)         # sensitivity 2C: whole-update clipping
        eps, delta = self.budgets(state, M)
        rho = tx.privacy_coefficients(eps=eps, delta=delta,
                                      class_counts=whole, spread=tx.BALL_SPREAD)
        d = tx.prop1_design(h_abs=h_abs, power=np.full(M, self.power), class_counts=counts,
                            rho=rho, sigma_n2=self.sigma_n2, T=T, K=D)
        noise = gaussian_noise(D, 1.0, state.streams("noise"), torch.float64).to(updates)
        r = tx.receive_fl(unit_updates=clipped / clip, h_abs=h_abs, design=d,
                          sigma_n2=self.sigma_n2, noise=noise, dim=D)
        eps_real = tx.realised_eps(h_abs=h_abs, design=d, class_counts=whole,
                                   sigma_n2=self.sigma_n2, delta=delta, T=T, K=D,
                                   spread=tx.BALL_SPREAD)
        multipliers = dp.ota_multipliers(h_abs=h_abs, design=d, sigma_n2=self.sigma_n2, K=D,
                                         sensitivity_mode="paper", spread=tx.BALL_SPREAD,
                                         class_counts=whole)      # 2C |h P1| sqrt(D)
        # the accounting and the code's release have the same sensitivity: one event twice
        events = self._round_events(state).record(multipliers, multipliers)
        return clip * r, {**events, "case2_fraction": float(d.case[0] == 2),
                          "nu_median": float(clip ** 2 * d.nu[0]),
                          "clipped_fraction": float((norms > clip).float().mean()),
                          "eps_real_ratio": float(np.max(eps_real / eps))}
