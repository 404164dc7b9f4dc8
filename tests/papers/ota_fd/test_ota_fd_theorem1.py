"""Theorem 1's Omega_i evaluated on a run (Appendix A): Phi_1 vanishes for Prop. 1's
weights, the per-round Omega summed over WDs equals Prop. 2's exact objective at a fixed channel,
and a fixed-T run of the loop writes its Omega from the rounds it recorded."""

import numpy as np
import pytest

from airfl.papers.ota_fd import rounds as rd
from airfl.papers.ota_fd import theorem1 as th
from airfl.papers.ota_fd import transceiver as tx

M = K = 10
COUNTS = np.where(np.eye(M, K, dtype=bool), 1110.0, 10.0)
SHARE = COUNTS / COUNTS.sum(axis=1, keepdims=True)
CONSTS = rd.TheoryConstants(eta0=0.5, gamma=1.0, L1=2.0, L2=1.0)


def _soft_labels(seed=0):
    logits = np.random.default_rng(seed).normal(size=(M, K, K))
    return np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)


def test_phi1_is_zero_for_prop1_weights_and_positive_for_uniform_weights():
    q = _soft_labels()
    ideal = tx.class_weights(COUNTS)
    assert np.allclose(th.phi1(share=SHARE, ideal=ideal, realised=ideal, soft_labels=q), 0.0)
    uniform = np.full((M, K), 1.0 / M)
    biased = th.phi1(share=SHARE, ideal=ideal, realised=uniform, soft_labels=q)
    assert (biased > 0).all()
    # by hand for WD 0: sum_k share_0k || sum_j (w_jk - 1/M) q_jk ||
    by_hand = sum(SHARE[0, k] * np.linalg.norm(((ideal[:, k] - 0.1)[:, None] * q[:, k]).sum(0))
                  for k in range(K))
    assert biased[0] == pytest.approx(by_hand)


@pytest.mark.parametrize("eps, sigma_n2, T", [(0.1, 0.1, 200), (1.0, 1.0, 50), (0.5, 10.0, 800)])
def test_sum_of_omega_with_prop1_noise_is_prop2s_exact_objective(eps, sigma_n2, T):
    """At a fixed channel (every WD |h|^2 P = 1) Prop. 1 gives Phi_1 = 0 and the same nu^k
    every round, so sum_i Omega_i(T) must equal rounds.objective (the piecewise (P3.2))."""
    rho = tx.privacy_coefficients(eps=np.full(M, eps), delta=np.full(M, 1e-8),
                                  class_counts=COUNTS)
    d = tx.prop1_design(h_abs=np.ones(M), power=np.ones(M), class_counts=COUNTS, rho=rho,
                        sigma_n2=sigma_n2, T=T, K=K)
    fmax = np.linspace(2.0, 3.0, M)
    per_round = th.phi2(share=SHARE, nu=d.nu, K=K)
    omega = th.omega(T=T, consts=CONSTS, fmax=fmax, phi1=np.zeros((T, M)),
                     phi2=np.tile(per_round, (T, 1)), gradnorm=np.ones((T, M)))
    expected = rd.objective(np.array([T]), fmax=fmax, consts=CONSTS, class_counts=COUNTS,
                            rho=rho, sigma_n2=sigma_n2, channel_power=1.0, K=K)[0]
    assert omega.sum() == pytest.approx(expected, rel=1e-9)


def test_bias_term_and_bound_by_hand():
    T, fmax = 3, np.full(M, 2.0)
    phi1 = np.full((T, M), 0.2)
    gradnorm = np.full((T, M), 1.5)
    terms = th.omega_terms(T=T, consts=CONSTS, fmax=fmax, phi1=phi1, phi2=np.zeros((T, M)),
                           gradnorm=gradnorm)
    eta = CONSTS.eta0 / np.sqrt([1.0, 2.0, 3.0])
    bias = sum(CONSTS.A1 * (CONSTS.L1 * e + 1) * 1.5 * 0.2 / e for e in eta) / T ** 1.5
    assert terms["bias"][0] == pytest.approx(bias)
    assert terms["noise"][0] == pytest.approx(CONSTS.A2 * T * 0.04 / T ** 1.5)
    assert terms["init"][0] == pytest.approx(3 * 2.0 / (CONSTS.eta0 * np.sqrt(T)))
    bound = th.theorem1_bound(gamma=1.0, L2=1.0, S=5.0, T=T, consts=CONSTS, fmax=fmax,
                              phi1=phi1, phi2=np.zeros((T, M)), gradnorm=gradnorm)
    assert bound[0] == pytest.approx(sum(terms.values())[0] + 40.0)


def test_the_step_sizes_satisfy_the_proofs_sum_bound():
    """Sum_{t<T} 1/eta_t >= (2 / (3 eta_0)) T^{3/2} (Appendix A, the step after (12))."""
    for T in (1, 10, 1000):
        eta = CONSTS.eta0 / np.sqrt(np.arange(1, T + 1))
        assert (1 / eta).sum() >= 2 / (3 * CONSTS.eta0) * T ** 1.5
