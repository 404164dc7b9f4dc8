"""OTA-FD's over-the-air soft-label sharing (the proposed scheme, Prop. 1 with Theorem 2's DP
constraint) as an auditable mechanism.

Runs the wing's transceiver, :func:`.transceiver.prop1_design` and :func:`.transceiver.receive`
(what :meth:`.schemes.OtaFdScheme.aggregate` calls every round); ``receive`` broadcasts over the
soft labels' last axis, so the audit passes E entries at once (the batch of draws).

* Neighbours: WD 0 replaces one sample of class k. The canary moves by the sensitivity the
  code has, not the paper's: `training.soft_labels` averages the softmax outputs over the WD's
  B_0^k samples of class k, so one sample moves q_0^k by up to sqrt(2) / B_0^k in L2 (the
  simplex diameter over B_0^k). Lemma 1 ((A17), Appendix B) divides by B_0, smaller by
  B_0^k / B_0 (x1/1.08 for a WD's dominant class, x1/120 for its minority classes in the
  MNIST split). The canary's soft label is (sqrt(2) / B_0^k) e_0 ("present") or 0 ("absent");
  every other WD's 0. The audited class k is the most exposed one, the largest
  Delta_0^k / s^k under the code's sensitivity. With ``sensitivity_mode: paper`` the design's
  noise is Theorem 2's for the paper's smaller sensitivity, so the audit measures how far the
  run's guarantee falls short; with ``per_class`` the design covers the code's sensitivity.
* Conditioning: the round's channel |h_i| (Theorem 2 is a per-round condition on the design,
  which the PS computes from the channels): one Rayleigh draw (|h|^2 ~ Exp(1)) from the audit's
  seed; class counts B_i^k of the stated MNIST split (Appendix E: 1110 of a WD's own class, 10
  of each other); the noise is the receiver's z (and the AN, if any) per entry.
* Multi-round: one round's epsilon is eps / sqrt(T) (0.013 at eps = 0.1, T = 60), below what
  any affordable number of draws can resolve, so the audit runs T rounds (the same canary, fresh
  noise each round) and sums the statistic (Nasr et al. 2023's multi-round audit).
* Claimed: the paper's eps_i over T rounds, :func:`.transceiver.realised_eps` (Wei et al. Thm 1
  as in (A18)) under the setting's ``sensitivity_mode``: the guarantee the run states. As
  simulated: the exact epsilon of T such Gaussian releases with the code's sensitivity,
  sqrt(T) Delta / s GDP (Dong-Roth-Su 2022 Cor. 3.3), at the same delta. A leak (the claimed
  epsilon below what the code releases) shows as an audited lower bound above the claim.
* Settings: ``audit.ota_fd`` (eps targets, T, draws: T releases a draw cost T times more) and
  ``ota_fd.setting`` (power, SNR, delta, modes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from airfl.core.audit_draws import linear_sampler
from airfl.params.declare import resolve
from airfl.papers.ota_fd import transceiver as tx
from airfl.papers.ota_fd.schemes import sigma_n2_of
from airfl.privacy.audit import gaussian_mechanism_epsilon
from airfl.privacy.auditing import AuditableMechanism
from airfl.runtime.rng import numpy_generator


def _mechanism(params: dict[str, Any], eps: float, noise_scale: float = 1.0
               ) -> AuditableMechanism:
    """The mechanism at target `eps`. `noise_scale` multiplies every noise draw of the release
    (1: the design's noise; below 1: a deliberately too-small noise, the leak a test needs to
    show that the audit can fail)."""
    setting, analysis = params["ota_fd"]["setting"], params["ota_fd"]["analysis"]
    audit, seed = params["audit"]["ota_fd"], int(params["seed"])
    m, k, T = int(analysis["num_devices"]), int(analysis["K"]), int(audit["T"])
    counts = np.full((m, k), float(analysis["minor"]))
    counts[np.arange(m), np.arange(m) % k] = float(analysis["dominant"])
    delta, mode = float(setting["delta"]), setting["sensitivity_mode"]
    sigma_n2 = sigma_n2_of(power=float(setting["power"]), snr_db=float(setting["snr_db"]))
    h_abs = np.sqrt(numpy_generator(seed, "audit/ota_fd", "channel").exponential(size=m))
    rho = tx.privacy_coefficients(eps=np.full(m, eps), delta=np.full(m, delta),
                                  class_counts=counts, sensitivity_mode=mode)
    design = tx.prop1_design(h_abs=h_abs, power=np.full(m, float(setting["power"])),
                             class_counts=counts, rho=rho, sigma_n2=sigma_n2, T=T, K=k,
                             an_mode=setting["an_mode"])
    sens = tx.sensitivity(h_abs=h_abs, p1=design.p1, class_counts=counts, K=k,
                          sensitivity_mode="per_class")     # the code's Delta_i^k of y: / B_i^k
    s = np.sqrt(sigma_n2 + (np.abs(h_abs[:, None] * design.p2) ** 2).sum(axis=0))
    cls = int(np.argmax(sens[0] / s))
    step = np.sqrt(2.0) / counts[0, cls]      # one sample moves the class average q_0^k this far
    label = f"ota_fd/eps={eps:g}"
    one = tx.Design(p1=design.p1[:, [cls]], p2=design.p2[:, [cls]], lam=design.lam[[cls]],
                    case=design.case[[cls]], nu=design.nu[[cls]], weights=design.weights[:, [cls]])
    # ^ the audited class alone: classes are independent in Prop. 1's design and in receive

    def release(row, call: int, width: int) -> torch.Tensor:
        """The statistic summed over the T rounds of one run (a multi-round audit): the
        canary's soft label is the same every round, each round draws its own noise."""
        labels = np.zeros((m, 1, width))
        labels[0, 0] = row.numpy()
        total = np.zeros(width)
        for t in range(T):
            rng = numpy_generator(seed, f"audit/{label}", call, t)
            noise = noise_scale * rng.standard_normal((1, width))
            # P2 = 0 (an_mode none): the AN term is 0 * n whatever n is, so no draw is needed
            artificial = noise_scale * rng.standard_normal((m, 1, width)) if np.any(one.p2) \
                else np.zeros((m, 1, width))
            total += tx.receive(soft_labels=labels, h_abs=h_abs, design=one,
                                sigma_n2=sigma_n2, noise=noise, artificial=artificial)[0]
        return torch.from_numpy(total)

    sample = linear_sampler(release, step, 0.0)

    claimed = float(tx.realised_eps(h_abs=h_abs, design=design, class_counts=counts,
                                    sigma_n2=sigma_n2, delta=np.full(m, delta), T=T, K=k,
                                    sensitivity_mode=mode)[0])
    mu = float(sens[0, cls] / (noise_scale * s[cls]))   # the code's Delta / s: (Delta/s)-GDP
    simulated = gaussian_mechanism_epsilon(1.0 / (mu * np.sqrt(T)), delta)   # GDP: T rounds
    return AuditableMechanism(
        name=f"otafd_eps{eps:g}", paper="ota_fd", delta=delta, eps_claimed=claimed,
        eps_simulated=simulated,
        claimed_accountant=f"realised_eps (Wei et al. Thm 1 as in (A18)) over T = {T} rounds, "
                           f"sensitivity_mode {mode}",
        simulated_note="exact: T Gaussian releases, sqrt(T) Delta/s GDP, Delta = the code's "
                       "sqrt(2)/B_0^k",
        neighbours="WD 0 replaces one sample of class k: its class soft label moves by "
                   "sqrt(2)/B_0^k (the code's class average)",
        conditioning="one channel draw |h|^2 ~ Exp(1) for all T rounds (the design's input)",
        aggregation="airfl.papers.ota_fd.transceiver:receive", sample=sample, gaussian=True,
        draws=resolve(audit["draws"], params["profile"]), releases=T,
        settings={"eps_target": eps, "T": T, "class": cls, "case": int(design.case[cls]),
                  "mu": mu, "devices": m, "K": k, "sensitivity_mode": mode,
                  "canary_step": float(step)})


def _fl_mechanism(params: dict[str, Any], eps: float, noise_scale: float = 1.0
                  ) -> AuditableMechanism:
    """The FL benchmark's over-the-air aggregation (`transceiver.receive_fl`, what
    :meth:`.schemes.OtaFdScheme._federated` runs) at target `eps` for every WD. Its stated
    budgets eps_i ~ U(1e6, 1e7) (Appendix E) are beyond any audit, so the mechanism is audited
    at the audit's targets. The code clips each WD's whole update to C (no per-sample
    clipping), so one replaced sample can move it across the ball: the canary moves WD 0's unit
    update by 2 (2C / C; present 2 e_0, absent 0), the sensitivity the noise design (rho_i,
    lambda_DP) and the claimed epsilon use (`tx.whole_update_counts`, `BALL_SPREAD`). D is the
    CNN's (Appendix E: 21,680). `noise_scale` below 1: a deliberately too-small noise (the
    leak a test needs to show that this audit can fail)."""
    from airfl.models.flat import build_model

    setting, analysis = params["ota_fd"]["setting"], params["ota_fd"]["analysis"]
    audit, seed = params["audit"]["ota_fd"], int(params["seed"])
    m, k, T = int(analysis["num_devices"]), int(analysis["K"]), int(audit["T"])
    dim = int(build_model("cnn_mnist_k3", (1, 28, 28), k).dim)
    counts = np.full((m, 1), float(analysis["dominant"]) + (k - 1) * float(analysis["minor"]))
    delta = float(setting["delta"])
    sigma_n2 = sigma_n2_of(power=float(setting["power"]), snr_db=float(setting["snr_db"]))
    h_abs = np.sqrt(numpy_generator(seed, "audit/ota_fd", "channel").exponential(size=m))
    whole = tx.whole_update_counts(m)                  # sensitivity 2C, as the scheme's
    rho = tx.privacy_coefficients(eps=np.full(m, eps), delta=np.full(m, delta),
                                  class_counts=whole, spread=tx.BALL_SPREAD)
    design = tx.prop1_design(h_abs=h_abs, power=np.full(m, float(setting["power"])),
                             class_counts=counts, rho=rho, sigma_n2=sigma_n2, T=T, K=dim)
    step = 2.0                                    # 2C / C: the whole unit ball's diameter
    label = f"otafl/eps={eps:g}"

    def release(row, call: int, width: int) -> torch.Tensor:
        """The statistic summed over T rounds, each with fresh receiver noise."""
        updates = np.zeros((m, width))
        updates[0] = row.numpy()
        total = np.zeros(width)
        for t in range(T):
            noise = noise_scale * numpy_generator(seed, f"audit/{label}", call, t
                                                  ).standard_normal(width)
            total += tx.receive_fl(unit_updates=updates, h_abs=h_abs, design=design,
                                   sigma_n2=sigma_n2, noise=noise, dim=dim)
        return torch.from_numpy(total)

    sample = linear_sampler(release, step, 0.0)

    claimed = float(tx.realised_eps(h_abs=h_abs, design=design, class_counts=whole,
                                    sigma_n2=sigma_n2, delta=np.full(m, delta), T=T, K=dim,
                                    spread=tx.BALL_SPREAD)[0])
    sens = tx.sensitivity(h_abs=h_abs, p1=design.p1, class_counts=whole, K=dim,
                          spread=tx.BALL_SPREAD)      # 2 sqrt(D) |h_0 P1_0|: the code's 2C
    mu = float(sens[0, 0] / (noise_scale * np.sqrt(sigma_n2)))
    simulated = gaussian_mechanism_epsilon(1.0 / (mu * np.sqrt(T)), delta)
    return AuditableMechanism(
        name=f"otafl_eps{eps:g}", paper="ota_fd", delta=delta, eps_claimed=claimed,
        eps_simulated=simulated,
        claimed_accountant=f"realised_eps with 2C (whole-update clipping, the ball's "
                           f"diameter) over T = {T} rounds",
        simulated_note="exact: T Gaussian releases, sqrt(T) Delta/s GDP, Delta = the code's 2C",
        neighbours="WD 0 replaces one sample: its whole clipped update can cross the ball (2C)",
        conditioning="one channel draw |h|^2 ~ Exp(1) for all T rounds (the design's input)",
        aggregation="airfl.papers.ota_fd.transceiver:receive_fl", sample=sample, gaussian=True,
        draws=resolve(audit["draws"], params["profile"]), releases=T,
        settings={"eps_target": eps, "T": T, "case": int(design.case[0]), "mu": mu,
                  "devices": m, "D": dim, "canary_step": step})


def ota_fd(params: dict[str, Any]) -> list[AuditableMechanism]:
    """The proposed OTA-FD and the OTA-FL benchmark at every target eps of
    ``audit.ota_fd.eps`` (batched draws)."""
    eps = [float(e) for e in params["audit"]["ota_fd"]["eps"]]
    return [_mechanism(params, e) for e in eps] + [_fl_mechanism(params, e) for e in eps]
