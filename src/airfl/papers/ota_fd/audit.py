"""OTA-FD's over-the-air soft-label sharing (the proposed scheme, Prop. 1 with Theorem 2's DP
constraint) as an auditable mechanism.

Runs the wing's transceiver, :func:`.transceiver.prop1_design` and :func:`.transceiver.receive`
(what :meth:`.schemes.OtaFdScheme.aggregate` calls every round); ``receive`` broadcasts over the
soft labels' last axis, so the audit passes E entries at once (the batch of draws).

* Neighbours (Lemma 1, (A17)): WD 0 replaces one sample, moving its class-k soft label q_0^k by
  sqrt(2) / B_0 in L2 (the simplex diameter over B_0, ``sensitivity_mode: paper``): the
  canary's soft label (sqrt(2) / B_0) e_0 ("present") or 0 ("absent"); every other WD's 0.
  The audited class k is the one with the largest Delta_0^k / s^k (the most exposed).
* Conditioning: the round's channel |h_i| (Theorem 2 is a per-round condition on the design,
  which the PS computes from the channels): one Rayleigh draw (|h|^2 ~ Exp(1)) from the audit's
  seed; class counts B_i^k of the stated MNIST split (``ota_fd.analysis``: 1,110 of a WD's own
  class, 10 of each other); the noise is the receiver's z (and the AN, if any) per entry.
* Multi-round: one round's epsilon is eps / sqrt(T) (0.013 at eps = 0.1, T = 60), below what
  any affordable number of draws can resolve, so the audit runs T rounds (the same canary, fresh
  noise each round) and sums the statistic (Nasr et al. 2023's multi-round audit).
* Claimed: the paper's eps_i over T rounds, :func:`.transceiver.realised_eps` (Wei et al. Thm 1
  as in (A18): Delta sqrt(2 T ln(1/delta)) / s). As simulated: the exact epsilon of T such
  Gaussian releases, sqrt(T) Delta / s GDP (Dong-Roth-Su 2022 Cor. 3.3), at the same delta.
* Settings: ``audit.ota_fd`` (eps targets, T, draws: T releases a draw cost T times more) and ``ota_fd.setting`` (power, SNR, delta, modes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from airfl.core.audit_draws import linear_draws
from airfl.declare import resolve
from airfl.papers.ota_fd import transceiver as tx
from airfl.papers.ota_fd.schemes import sigma_n2_of
from airfl.privacy.audit import gaussian_mechanism_epsilon
from airfl.privacy.auditing import AuditableMechanism
from airfl.rng import numpy_generator


def _mechanism(params: dict[str, Any], eps: float) -> AuditableMechanism:
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
                          sensitivity_mode=mode)            # Delta_i^k of the received y (A17)
    s = np.sqrt(sigma_n2 + (np.abs(h_abs[:, None] * design.p2) ** 2).sum(axis=0))
    cls = int(np.argmax(sens[0] / s))
    step = np.sqrt(2.0) / (counts[0].sum() if mode == "paper" else counts[0, cls])   # (A17)
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
            noise = rng.standard_normal((1, width))
            # P2 = 0 (an_mode none): the AN term is 0 * n whatever n is, so no draw is needed
            artificial = rng.standard_normal((m, 1, width)) if np.any(one.p2) else \
                np.zeros((m, 1, width))
            total += tx.receive(soft_labels=labels, h_abs=h_abs, design=one,
                                sigma_n2=sigma_n2, noise=noise, artificial=artificial)[0]
        return torch.from_numpy(total)

    def sample(world: str, draws: int, sub_seed: int):
        value = step if world == "present" else 0.0
        return linear_draws(lambda row, call, width: release(row, sub_seed * 1_000_003 + call,
                                                             width), value, draws)

    claimed = float(tx.realised_eps(h_abs=h_abs, design=design, class_counts=counts,
                                    sigma_n2=sigma_n2, delta=np.full(m, delta), T=T, K=k,
                                    sensitivity_mode=mode)[0])
    mu = float(sens[0, cls] / s[cls])          # Delta / s: one round is (Delta/s)-GDP exactly
    simulated = gaussian_mechanism_epsilon(1.0 / (mu * np.sqrt(T)), delta)   # GDP: T rounds
    return AuditableMechanism(
        name=f"otafd_eps{eps:g}", paper="ota_fd", delta=delta, eps_claimed=claimed,
        eps_simulated=simulated,
        claimed_accountant=f"realised_eps (Wei et al. Thm 1 as in (A18)) over T = {T} rounds",
        simulated_note="exact: T Gaussian releases, sqrt(T) Delta/s GDP",
        neighbours="WD 0 replaces one sample: its class soft label moves by sqrt(2)/B_0",
        conditioning="one channel draw |h|^2 ~ Exp(1) for all T rounds (the design's input)",
        aggregation="airfl.papers.ota_fd.transceiver:receive", sample=sample, gaussian=True,
        draws=resolve(audit["draws"], params["profile"]),
        settings={"eps_target": eps, "T": T, "class": cls, "case": int(design.case[cls]),
                  "mu": mu, "devices": m, "K": k})


def ota_fd(params: dict[str, Any]) -> list[AuditableMechanism]:
    """The proposed OTA-FD at every target eps of ``audit.ota_fd.eps`` (batched draws)."""
    return [_mechanism(params, float(e)) for e in params["audit"]["ota_fd"]["eps"]]
