"""OTA-FD's per-round DP events for the privacy stage:
``privacy``, the paper's accounting, and ``privacy_simulated``, the mechanism as the code runs it.

Units: every (WD i, class k) is its own Gaussian release each round (classes in parallel, our
reading: one sample of class k only moves q_i^k; WDs hold disjoint data); the FL
benchmark has one unit per WD. Each round's event is the worst unit's RDP increment
(:class:`airfl.privacy.parallel.WorstUnitGaussian`), so the stage's composition over the T
rounds is max_{i,k} sum_t (Delta_{i,t}^k / s_t^k)^2 alpha / 2: a heterogeneous-round
accountant, rho_i = max_k sum_t Delta^2 / (2 s^2) (zCDP = the Gaussian's
RDP, alpha rho), converted at the curve's delta (improved and classic conversions; the classic
one is rho + 2 sqrt(rho ln(1/delta)) up to the order grid). With per-WD budgets
(eps_i ~ U(.), delta_i ~ U(.)) the stage reports the worst WD's epsilon at the curve's `delta`.

* ``privacy`` (`epsilon_paper`): Lemma 1's sensitivity Delta_i^k = sqrt(2K) |h_i P1_i^k| / B_i
  ((A17); / B_i^k with `sensitivity_mode: per_class`, A1) over the receiver's per-entry noise
  s^k = sqrt(sigma_n^2 + sum_j |h_j P2_j^k|^2) (Appendix B, (A18)) -- Theorem 2 keeps every round at
  Delta sqrt(2T ln(1/delta_i)) / s <= eps_i, so this composes to about the target eps_i.
  Digital FD: each WD's own noise sigma_i^k over sqrt(2)/B_i (Lemma 1 without the channel).
  FL benchmark: 2C |h_i P1_i| sqrt(D) ([R], `transceiver.whole_update_counts`: the update is
  clipped as a whole, so one sample can move it across the ball; no division by B_i).
* ``privacy_simulated`` (`epsilon_simulated`): the noise as drawn is what the accountant
  assumes (real standard normals per entry: `receive`'s sqrt(sigma_n^2) z and P2 n, the
  digital links' sigma_i^k n), but the sensitivity is what the code's shared vector really
  has. FD: `training.soft_labels` averages softmax outputs over the WD's B_i^k samples of
  class k, so one sample moves q_i^k by up to sqrt(2)/B_i^k (the simplex diameter over
  B_i^k): the `per_class` sensitivity, larger than Lemma 1's by B_i / B_i^k (x1.08 for
  a WD's dominant class, x120 for its minority classes in the MNIST split); equal to
  ``privacy`` with `sensitivity_mode: per_class`. FL: the code clips each WD's whole update
  to C (`clip_by_norm`, no per-sample clipping), so one sample can move it across the whole
  ball: 2C |h_i P1_i| sqrt(D), the sensitivity the accounting and the noise design already use
  (the two events are equal).
* Not counted in either (we treat it as post-processing, as the appendix's accounting does; a
  caveat the README states):
  theta_{i,t} is trained on D_i, so from round 2 on one sample can also move q_i^k through the
  model, up to the simplex diameter sqrt(2) for every class at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from airfl.papers.ota_fd import transceiver as tx
from airfl.privacy.parallel import WorstUnitGaussian


def ota_multipliers(*, h_abs: np.ndarray, design: tx.Design, class_counts: np.ndarray,
                    sigma_n2: float, K: int, sensitivity_mode: str,
                    spread: float = tx.SIMPLEX_SPREAD) -> np.ndarray:
    """Noise multipliers s^k / Delta_i^k [M, K] of one over-the-air round (inf: WD i sends
    nothing for class k): Lemma 1's sensitivity (A17) under `sensitivity_mode`, the receiver's
    per-entry noise plus the artificial noise."""
    s = np.sqrt(sigma_n2 + (np.abs(h_abs[:, None] * design.p2) ** 2).sum(axis=0))   # (A18)
    delta = tx.sensitivity(h_abs=h_abs, p1=design.p1, class_counts=class_counts, K=K,
                           sensitivity_mode=sensitivity_mode, spread=spread)        # (A17)
    with np.errstate(divide="ignore"):
        return np.where(delta > 0, s[None, :] / delta, np.inf)


def digital_multipliers(*, std: np.ndarray, class_counts: np.ndarray,
                        sensitivity_mode: str) -> np.ndarray:
    """sigma_i^k / (sqrt(2)/D_i^k) [M, K] of digital FD with local DP: each WD's own Gaussian
    on its soft label (Lemma 1 without the channel); D_i^k = B_i (`paper`) or B_i^k."""
    counts = np.asarray(class_counts, dtype=np.float64)
    denom = counts.sum(axis=1, keepdims=True) * np.ones_like(counts) \
        if sensitivity_mode == "paper" else counts
    return np.where(counts > 0, std * denom / np.sqrt(2.0), np.inf)     # Lemma 1: sqrt(2)/B


class RoundEvents:
    """The two worst-unit compositions of one trial (``privacy`` and ``privacy_simulated``);
    a scheme makes a fresh one at round 1 and calls :meth:`record` every round."""

    def __init__(self) -> None:
        self._paper, self._simulated = WorstUnitGaussian(), WorstUnitGaussian()

    def record(self, paper: np.ndarray, simulated: np.ndarray) -> dict[str, Any]:
        """The round record's events from each unit's multiplier under the two readings."""
        return {"privacy": [self._paper.step(paper).to_dict()],
                "privacy_simulated": [self._simulated.step(simulated).to_dict()],
                "noise_multiplier_min": float(np.min(paper)),
                "noise_multiplier_simulated_min": float(np.min(simulated))}
