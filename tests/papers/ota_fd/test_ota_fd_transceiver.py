"""OTA-FD's knowledge sharing over the air (Appendices B-D): Prop. 1, Lemma 1, Theorem 2, the
signal- vs nu-level receivers, the realised eps, hand-derived test vectors."""

import numpy as np
import pytest

from airfl.papers.ota_fd import transceiver as tx


M = K = 10
# hand-derived test vectors: B_i^k = 1110 if k = i else 10, delta = 1e-8, sigma_n^2 = 0.1, |h| = 1
COUNTS = np.where(np.eye(M, K, dtype=bool), 1110.0, 10.0)


def _rho(eps, counts=COUNTS, mode="paper"):
    return tx.privacy_coefficients(eps=np.full(M, eps), delta=np.full(M, 1e-8),
                                   class_counts=counts, sensitivity_mode=mode)


def _design(eps, T=100, h=None, sigma_n2=0.1, an_mode="none", counts=COUNTS, mode="paper"):
    h = np.ones(M) if h is None else h
    return tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts,
                           rho=_rho(eps, counts, mode), sigma_n2=sigma_n2, T=T, K=K,
                           an_mode=an_mode)


@pytest.mark.parametrize("eps, rho, lam, case, nu", [
    (1.0, 1.27921e-5, 3.41868, 1, 8.55625e-3),
    (0.1, 1.27921e-3, 0.477922, 2, 0.437811)])
def test_reference_vectors(eps, rho, lam, case, nu):
    d = _design(eps)
    assert _rho(eps)[0, 0] == pytest.approx(rho, rel=1e-5)
    assert d.lam == pytest.approx(np.full(K, lam), rel=1e-5)
    assert (d.case == case).all()
    assert d.nu == pytest.approx(np.full(K, nu), rel=1e-5)
    # Phi_2 of WD i = sum_k (B_i^k/B_i) K nu^k, = K nu here
    phi2 = (COUNTS / COUNTS.sum(axis=1, keepdims=True) * K * d.nu).sum(axis=1)
    assert phi2 == pytest.approx(np.full(M, K * nu), rel=1e-5)


def _random_instance(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 300, size=(M, K)).astype(float)
    h = np.sqrt(rng.exponential(size=M))
    return rng, counts, h


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("an_mode", ["none", "full_power"])
def test_prop1_unbiased_feasible_and_tight(seed, an_mode):
    rng, counts, h = _random_instance(seed)
    eps = rng.uniform(0.01, 1.0, size=M)
    rho = tx.privacy_coefficients(eps=eps, delta=np.full(M, 1e-8), class_counts=counts)
    for T in (1, 30, 3000):
        d = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=rho,
                            sigma_n2=0.1, T=T, K=K, an_mode=an_mode)
        c = h[:, None] * d.p1 * np.sqrt(K) / d.lam[None, :]
        assert c == pytest.approx(counts / counts.sum(axis=0), rel=1e-12)   # (A21): Phi_1 = 0
        assert (np.abs(d.p1) ** 2 + np.abs(d.p2) ** 2 <= 1.0 + 1e-12).all()  # (M9)
        slack = tx.dp_slack(h_abs=h, p1=d.p1, p2=d.p2, sigma_n2=0.1, rho=rho, T=T, K=K)
        assert (slack >= -1e-9).all()                                       # Theorem 2
        two = d.case == 2
        assert slack[two] == pytest.approx(np.zeros(two.sum()), abs=1e-9)  # tight in Case II
        # Case I: the weakest weighted link transmits at full power
        full = (np.abs(d.p1) ** 2 + np.abs(d.p2) ** 2).max(axis=0)
        assert full[~two] == pytest.approx(np.ones((~two).sum()), rel=1e-12)


def test_both_cases_occur_and_an_member_has_the_same_nu():
    _, counts, h = _random_instance(1)
    rho = tx.privacy_coefficients(eps=np.full(M, 0.05), delta=np.full(M, 1e-8),
                                  class_counts=counts)
    mixed = None
    for T in np.geomspace(1, 1e6, 40).astype(int):
        d = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=rho,
                            sigma_n2=0.1, T=int(T), K=K)
        if (d.case == 1).any() and (d.case == 2).any():
            mixed = int(T)
            break
    assert mixed is not None
    none = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=rho,
                           sigma_n2=0.1, T=mixed, K=K)
    an = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=rho,
                         sigma_n2=0.1, T=mixed, K=K, an_mode="full_power")
    assert an.nu == pytest.approx(none.nu, rel=1e-10)
    assert (an.p2[:, none.case == 2] > 0).any(axis=0).all()       # AN used in Case II
    assert (an.lam >= none.lam * (1 - 1e-12)).all()               # more transmit power
    assert (an.p2[:, none.case == 1] == 0).all()


def test_case_switch_is_the_exact_test_and_A28_short_form_when_equal_counts():
    """lambda_PA <= lambda_DP <=> sigma^2 >= 4TK min_i(|h_i|^2 P_i/(B_i^k)^2) max_i((B_i^k)^2
    rho_i); with equal B_i^k it is the appendix's short form with T_0."""
    equal = np.full((M, K), 120.0)
    h = np.sqrt(np.random.default_rng(3).exponential(size=M))
    rho = _rho(0.1, equal)
    T0 = 0.1 / (4 * K * (h ** 2).min() * rho.max())
    below = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=equal, rho=rho,
                            sigma_n2=0.1, T=int(np.floor(T0 * 0.99)) or 1, K=K)
    above = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=equal, rho=rho,
                            sigma_n2=0.1, T=int(np.ceil(T0 * 1.01)), K=K)
    assert (above.case == 2).all()
    if T0 * 0.99 >= 1:
        assert (below.case == 1).all()


def test_signal_and_nu_level_agree_draw_by_draw_without_an():
    rng, counts, h = _random_instance(4)
    q = rng.dirichlet(np.ones(K), size=(M, K))
    d = _design(0.1, T=50, h=h, counts=counts)
    noise = rng.standard_normal((K, K))
    signal = tx.receive(soft_labels=q, h_abs=h, design=d, sigma_n2=0.1, noise=noise,
                        artificial=rng.standard_normal((M, K, K)))
    assert signal == pytest.approx(tx.receive_equivalent(soft_labels=q, design=d, noise=noise),
                                   rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("an_mode", ["none", "full_power"])
def test_monte_carlo_mean_is_the_global_soft_label_and_variance_is_nu(an_mode):
    rng, counts, h = _random_instance(5)
    q = rng.dirichlet(np.ones(K), size=(M, K))
    d = _design(0.05, T=200, h=h, counts=counts, an_mode=an_mode)
    truth = ((counts / counts.sum(axis=0))[:, :, None] * q).sum(axis=0)
    n = 4000
    draws = np.stack([tx.receive(soft_labels=q, h_abs=h, design=d, sigma_n2=0.1,
                                 noise=rng.standard_normal((K, K)),
                                 artificial=rng.standard_normal((M, K, K)))
                      for _ in range(n)])
    sd = np.sqrt(d.nu)[:, None]
    z = (draws.mean(axis=0) - truth) / (sd / np.sqrt(n))
    assert np.abs(z).max() < 4.5                      # 100 entries: |z| < 4.5 w.p. > 0.999
    ratio = draws.var(axis=0) / sd ** 2
    assert np.abs(ratio - 1).max() < 0.15             # chi2 with 3999 dof: sd of ratio 0.022


@pytest.mark.parametrize("mode", ["paper", "per_class"])
def test_realised_eps_meets_the_target_and_binds_in_case_two(mode):
    rng, counts, h = _random_instance(6)
    eps = rng.uniform(0.05, 1.0, size=M)
    delta = np.full(M, 1e-8)
    rho = tx.privacy_coefficients(eps=eps, delta=delta, class_counts=counts,
                                  sensitivity_mode=mode)
    for T, an_mode in ((5, "none"), (400, "none"), (400, "full_power")):
        d = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=rho,
                            sigma_n2=0.1, T=T, K=K, an_mode=an_mode)
        real = tx.realised_eps(h_abs=h, design=d, class_counts=counts, sigma_n2=0.1,
                               delta=delta, T=T, K=K, sensitivity_mode=mode)
        assert (real <= eps * (1 + 1e-9)).all()
        if (d.case == 2).any():
            assert (real / eps).max() == pytest.approx(1.0, rel=1e-9)


def test_lemma1_sensitivity_bounds_one_sample_replacement():
    """Replacing one sample of WD i's class-k set moves its received vector by at most the
    per_class Delta (/B_i^k); the paper's Delta (/B_i) is smaller by B_i^k/B_i (ambiguity A1)."""
    rng, counts, h = _random_instance(7)
    d = _design(0.1, T=20, h=h, counts=counts)
    per_class = tx.sensitivity(h_abs=h, p1=d.p1, class_counts=counts, K=K,
                               sensitivity_mode="per_class")
    paper = tx.sensitivity(h_abs=h, p1=d.p1, class_counts=counts, K=K)
    assert paper == pytest.approx(per_class * counts / counts.sum(axis=1, keepdims=True))
    i, k = 2, 3
    n = int(counts[i, k])
    outputs = rng.dirichlet(np.ones(K) * 0.05, size=n)
    replaced = outputs.copy()
    replaced[0] = np.eye(K)[np.argmin(outputs[0])]      # a far vertex of the simplex
    moved = h[i] * d.p1[i, k] * np.sqrt(K) * np.linalg.norm(outputs.mean(0) - replaced.mean(0))
    assert moved <= per_class[i, k] * (1 + 1e-12)
    assert moved > 0.5 * per_class[i, k]                # the bound is nearly attained


def test_no_dp_design_is_the_power_limit():
    _, counts, h = _random_instance(8)
    d = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=None,
                        sigma_n2=0.1, T=100, K=K)
    lam_pa = tx.power_limit(h_abs=h, power=np.ones(M), weights=tx.class_weights(counts), K=K)
    assert d.lam == pytest.approx(lam_pa)
    assert (d.case == 1).all()


def test_bad_modes_are_rejected():
    with pytest.raises(ValueError, match="an_mode"):
        _design(1.0, an_mode="loud")
    with pytest.raises(ValueError, match="sensitivity_mode"):
        _rho(1.0, mode="per_sample")


def test_uniform_weights_are_biased_but_private_and_feasible():
    rng, counts, h = _random_instance(9)
    rho = _rho(0.1, counts)
    uniform = np.full((M, K), 1.0 / M)
    d = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts, rho=rho, sigma_n2=0.1,
                        T=200, K=K, weights=uniform)
    c = h[:, None] * d.p1 * np.sqrt(K) / d.lam[None, :]
    assert c == pytest.approx(uniform)
    assert not np.allclose(c, tx.class_weights(counts))          # Phi_1 != 0
    assert tx.dp_ok(h_abs=h, p1=d.p1, p2=d.p2, sigma_n2=0.1, rho=rho, T=200, K=K).all()
    assert (np.abs(d.p1) ** 2 <= 1 + 1e-12).all()


def test_digital_local_dp_is_noisier_than_shared_ota_noise():
    """Local DP adds sum_i c_i^2 sigma_i^2 per entry; OTA's Case II needs only the max term."""
    rng, counts, h = _random_instance(10)
    eps, delta = np.full(M, 0.1), np.full(M, 1e-8)
    std = tx.local_dp_std(eps=eps, delta=delta, class_counts=counts, T=500)
    w = tx.class_weights(counts)
    digital = ((w * std) ** 2).sum(axis=0)
    ota = tx.prop1_design(h_abs=h, power=np.ones(M), class_counts=counts,
                          rho=_rho(0.1, counts), sigma_n2=0.1, T=500, K=K)
    assert (ota.case == 2).all()
    assert (digital > ota.nu).all()
    assert ota.nu == pytest.approx(((w * std) ** 2).max(axis=0))
    q = rng.dirichlet(np.ones(K), size=(M, K))
    draws = np.stack([tx.receive_digital(soft_labels=q, class_counts=counts, std=std,
                                         noise=rng.standard_normal((M, K, K)))
                      for _ in range(2000)])
    truth = (w[:, :, None] * q).sum(axis=0)
    z = (draws.mean(0) - truth) / np.sqrt(digital[:, None] / 2000)
    assert np.abs(z).max() < 4.5


def test_ball_sensitivity_doubles_the_privacy_coefficient():
    counts = np.array([[10.0], [30.0]])
    simplex = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5), class_counts=counts)
    ball = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5), class_counts=counts,
                                   spread=tx.BALL_SPREAD)
    assert ball == pytest.approx(2 * simplex)
    # two unit-ball vectors differ by up to 2 = sqrt(2 spread): the sensitivity's diameter
    delta = tx.sensitivity(h_abs=np.ones(2), p1=np.ones((2, 1)), class_counts=counts, K=1,
                           spread=tx.BALL_SPREAD)
    assert delta[:, 0] == pytest.approx(2.0 / counts[:, 0])


def test_the_fl_benchmark_accounts_a_whole_clipped_update_without_dividing_by_B_i():
    """One sample can move a whole-clipped update across the unit ball: D_i = 1, so the
    sensitivity is 2 (2C / C) and rho_i = 2 ln(1/delta_i) / eps_i^2, B_i^2 times Lemma 1's
    form with / B_i; the noise design needs correspondingly more noise (a smaller lambda_DP)."""
    counts = np.array([[10.0], [30.0]])
    whole = tx.whole_update_counts(2)
    assert whole.shape == (2, 1)
    rho = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5), class_counts=whole,
                                  spread=tx.BALL_SPREAD)
    assert rho[:, 0] == pytest.approx(2 * np.log(1e5))
    per_sample = tx.privacy_coefficients(eps=np.ones(2), delta=np.full(2, 1e-5),
                                         class_counts=counts, spread=tx.BALL_SPREAD)
    assert rho == pytest.approx(per_sample * counts ** 2)
    assert tx.sensitivity(h_abs=np.ones(2), p1=np.ones((2, 1)), class_counts=whole, K=1,
                          spread=tx.BALL_SPREAD)[:, 0] == pytest.approx(2.0)
    design = dict(h_abs=np.ones(2), power=np.ones(2), class_counts=counts, sigma_n2=0.1, T=5,
                  K=50)
    assert tx.prop1_design(**design, rho=rho).lam[0] < \
        tx.prop1_design(**design, rho=per_sample).lam[0]
