"""CDPB round aggregation: client-by-client vs efficient simulation, unbiasedness, records.

Statistical tests use seeded generators (deterministic) and 5-standard-error bands: a correct
implementation fails a band with probability < 6e-7 per comparison, while the errors they guard
against (a missing sqrt(rho), a factor d in the noise, wrong normalisation, wrong selection)
move the statistic by tens of standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from airfl.papers.cdpb.aggregation import (RoundDesign, aggregate, aggregate_clientwise,
                                           aggregate_efficient, normalise_updates)
from airfl.papers.cdpb.setting import CdpbSetting

torch.set_num_threads(1)
F64 = torch.float64
RECORD_KEYS = {"simulation", "n_participants", "n_noise_only", "rho", "sigma_q2", "normalizer",
               "skipped", "signal_norm", "noise_norm", "tx_energy", "max_tx_power",
               "tx_power_ratio", "power_violations"}


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _updates(n: int, d: int, seed: int = 0) -> torch.Tensor:
    """Distinct client updates with norms in [0.3, 1] (normalised units, W = 1)."""
    u = torch.randn(n, d, generator=_gen(seed), dtype=F64)
    return u / u.norm(dim=1, keepdim=True) * torch.linspace(0.3, 1.0, n, dtype=F64)[:, None]


def _rounds(updates, design, simulation, rounds, seed, gains=None, h_bar=1.0):
    """Estimates [rounds, d] (random Exp(h_bar) gains per round unless gains is given)."""
    gen = _gen(seed)
    out = []
    for _ in range(rounds):
        h = gains if gains is not None else torch.empty(
            updates.shape[0], dtype=F64).exponential_(1.0 / h_bar, generator=gen)
        out.append(aggregate(updates, h, design, gen, simulation)[0])
    return torch.stack(out).numpy()


FIXED_GAINS = torch.tensor([0.2, 0.6, 1.1, 1.7, 2.5, 0.9], dtype=F64)


@pytest.mark.parametrize("strategy", ["cdpb_i", "cdpb_n"])
@pytest.mark.parametrize("simulation", ["clientwise", "efficient"])
@pytest.mark.parametrize("reading", ["total", "per_coordinate"])
def test_fixed_gains_estimate_has_the_gaussian_law_of_19(strategy, simulation, reading):
    """With the gains fixed, g_hat ~ N(mean_{K_t} g, sigma_q,t^2 / (d rho K_t^2) I) exactly
 (sigma_q^2 the total power of (13)), or N(., sigma_q,t^2 / (rho K_t^2) I) when
    sigma_q^2 is read per coordinate (Theorem 1). Mean: 5 standard errors; variance:
    (R-1) s^2 / sigma^2 ~ chi2_{R-1}, so s^2 / sigma^2 within 1 +- 5 sqrt(2 / (R-1))."""
    rho, d, rounds = 0.5, 3, 1000
    u = _updates(6, d)
    design = RoundDesign(strategy, rho, sigma_z2=0.05, noise_variance=reading)
    reliable = FIXED_GAINS >= rho
    noise = (FIXED_GAINS[reliable] - rho).sum() + 0.05
    if strategy == "cdpb_n":
        noise = noise + FIXED_GAINS[~reliable].sum()
    share = 1.0 / d if reading == "total" else 1.0
    var = float(noise) * share / (rho * int(reliable.sum()) ** 2)
    est = _rounds(u, design, simulation, rounds, seed=11, gains=FIXED_GAINS)
    mean = u[reliable].mean(dim=0).numpy()
    assert np.all(np.abs(est.mean(axis=0) - mean) <= 5 * math.sqrt(var / rounds))
    assert np.all(np.abs(est.var(axis=0, ddof=1) / var - 1) <= 5 * math.sqrt(2 / (rounds - 1)))


def _moment_se(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard errors of the sample mean and of the sample variance (from the 4th moment)."""
    n = x.shape[0]
    centred = x - x.mean(axis=0)
    m2, m4 = (centred**2).mean(axis=0), (centred**4).mean(axis=0)
    return np.sqrt(m2 / n), np.sqrt((m4 - m2**2) / n)


@pytest.mark.parametrize("strategy,beta,rounds", [("cdpb_mixed", 0.5, 1500), ("is", None, 1000),
                                                  ("hmin", None, 1000)])
def test_efficient_simulation_equals_clientwise_in_distribution(strategy, beta, rounds):
    """Random gains and coins every round: per-coordinate mean and variance of g_hat agree
    between the two simulations within 5 standard errors of their difference."""
    s = CdpbSetting(K=5, sigma_z2=0.05, q_IS=0.7)
    rho = 0.2 if strategy == "hmin" else 0.6
    design = RoundDesign.from_setting(s, strategy, rho, beta)
    u = _updates(5, 2, seed=3)
    a = _rounds(u, design, "clientwise", rounds, seed=21)
    b = _rounds(u, design, "efficient", rounds, seed=22)
    (se_ma, se_va), (se_mb, se_vb) = _moment_se(a), _moment_se(b)
    assert np.all(np.abs(a.mean(0) - b.mean(0)) <= 5 * np.hypot(se_ma, se_mb))
    assert np.all(np.abs(a.var(0) - b.var(0)) <= 5 * np.hypot(se_va, se_vb))


@pytest.mark.parametrize("strategy,beta", [("cdpb_i", None), ("cdpb_n", None),
                                           ("cdpb_mixed", 0.3), ("is", None), ("hmin", None),
                                           ("noise_free", None)])
def test_both_simulations_draw_the_same_roles(strategy, beta):
    """Coins first, then noise (our reading): one seed gives the same clients and sigma_q,t^2."""
    s = CdpbSetting(K=12, q_IS=0.6)
    design = RoundDesign.from_setting(s, strategy, 0.08 if strategy == "hmin" else 0.7, beta)
    u = _updates(12, 4, seed=5)
    h = torch.empty(12, dtype=F64).exponential_(1.0, generator=_gen(6))
    _, ra = aggregate_clientwise(u, h, design, _gen(7))
    _, rb = aggregate_efficient(u, h, design, _gen(7))
    assert set(ra) == set(rb) == RECORD_KEYS
    for key in RECORD_KEYS - {"simulation", "noise_norm"}:
        assert ra[key] == pytest.approx(rb[key], rel=1e-12), key
    _, rc = aggregate(u, h, design, _gen(99), "clientwise", coin_generator=_gen(7))
    assert rc["n_participants"] == ra["n_participants"] and rc["sigma_q2"] == ra["sigma_q2"]


def test_cdpb_i_is_unbiased_up_to_the_known_scaling():
    """Realised K_t: E[g_hat] = Pr(K_t >= 1) mean_k g_k (exchangeable clients, empty rounds
    skipped); expected normalisation K p: E[g_hat] = mean_k g_k. rho = P/W^2 so that the factor
    Pr(K_t >= 1) = 1 - (1 - 1/e)^3 = 0.75 is many standard errors away from 1."""
    s = CdpbSetting(K=3, sigma_z2=0.01)
    rho, p = 1.0, math.exp(-1.0)
    u = torch.tensor([[0.9, 0.0], [0.5, 0.5], [0.0, -0.8]], dtype=F64)
    g_bar = u.mean(dim=0).numpy()
    for normalize, scale in (("realized", 1 - (1 - p) ** 3), ("expected", 1.0)):
        design = RoundDesign.from_setting(s, "cdpb_i", rho, normalize=normalize)
        est = _rounds(u, design, "efficient", 3000, seed=31)
        se = est.std(axis=0, ddof=1) / math.sqrt(est.shape[0])
        assert np.all(np.abs(est.mean(axis=0) - scale * g_bar) <= 5 * se), normalize
        assert np.abs(est.mean(axis=0)[0] - g_bar[0]) > 5 * se[0] or scale == 1.0


def test_noise_free_sends_sqrt_a_times_g():
    """Our reading of (11)/(15): x = sqrt(a) g, so the server receives sqrt(rho) g and,
    without receiver noise, recovers the mean of the reliable updates exactly (a g would arrive
    as rho g / sqrt(h))."""
    u = _updates(6, 5)
    design = RoundDesign("noise_free", 0.7, sigma_z2=0.0)
    est, rec = aggregate_clientwise(u, FIXED_GAINS, design, _gen(0))
    reliable = FIXED_GAINS >= 0.7
    np.testing.assert_allclose(est.numpy(), u[reliable].mean(dim=0).numpy(), rtol=1e-12,
                               atol=1e-14)
    assert rec["sigma_q2"] == 0.0 and rec["n_participants"] == int(reliable.sum())


def test_records_of_every_scheme():
    n, rho = 40, 0.5
    s = CdpbSetting(K=n, q_IS=0.5)
    u = _updates(n, 3, seed=8)
    h = torch.empty(n, dtype=F64).exponential_(1.0, generator=_gen(9))
    reliable = int((h >= rho).sum())
    expect = {"cdpb_i": (reliable, 0), "cdpb_n": (reliable, n - reliable),
              "gamma_bar": (reliable, 0), "noise_free": (reliable, 0)}
    for strategy, (k_t, noisy) in expect.items():
        _, rec = aggregate(u, h, RoundDesign.from_setting(s, strategy, rho), _gen(1))
        assert (rec["n_participants"], rec["n_noise_only"]) == (k_t, noisy), strategy
        assert rec["power_violations"] == 0 and rec["max_tx_power"] <= s.P * (1 + 1e-12)
        assert rec["normalizer"] == k_t and not rec["skipped"]
        energy = k_t * s.P + noisy * s.P
        assert rec["tx_energy"] <= energy + 1e-9
    _, rec = aggregate(u, h, RoundDesign.from_setting(s, "is", rho), _gen(1))
    assert 0 < rec["n_participants"] < reliable and rec["n_noise_only"] == 0
    hmin = RoundDesign.from_setting(s, "hmin", 1.0 / n)
    h = h.clone()
    h[0] = 1e-3  # far below h_min = h_bar / K: this client cannot reach sqrt(rho) with power P
    _, rec = aggregate(u, h, hmin, _gen(1))
    assert rec["n_participants"] == n
    power = (1.0 / n) * u.pow(2).sum(dim=1) / h  # a ||g||^2 with a = rho / h, no noise left
    assert rec["power_violations"] == int((power > s.P).sum()) > 0
    _, rec = aggregate(u, h, RoundDesign.from_setting(s, "hmin", 1.0 / n, hmin_mode="realized"),
                       _gen(1))
    assert rec["rho"] == pytest.approx(float(h.min())) and rec["power_violations"] == 0
    assert rec["sigma_q2"] == pytest.approx(float((h - h.min()).sum()) + s.sigma_z2)


def test_cdpb_n_spends_full_power_and_idle_clients_none():
    s = CdpbSetting(K=6)
    u = torch.zeros(6, 2, dtype=F64)
    u[:, 0] = 1.0  # ||g|| = W: reliable clients use exactly P
    _, rec_n = aggregate(u, FIXED_GAINS, RoundDesign.from_setting(s, "cdpb_n", 0.8), _gen(0))
    _, rec_i = aggregate(u, FIXED_GAINS, RoundDesign.from_setting(s, "cdpb_i", 0.8), _gen(0))
    assert rec_n["tx_energy"] == pytest.approx(6 * s.P)
    assert rec_i["tx_energy"] == pytest.approx(4 * s.P)


def test_no_reliable_client_skips_the_round():
    u = _updates(4, 3)
    h = torch.full((4,), 0.1, dtype=F64)
    for simulation in ("clientwise", "efficient"):
        est, rec = aggregate(u, h, RoundDesign("cdpb_n", 0.5), _gen(0), simulation)
        assert rec["skipped"] and rec["n_participants"] == 0 and rec["n_noise_only"] == 4
        assert torch.count_nonzero(est) == 0


def test_seeded_rounds_are_reproducible():
    u, design = _updates(8, 4), RoundDesign("cdpb_mixed", 0.5, beta=0.5)
    for simulation in ("clientwise", "efficient"):
        a = _rounds(u, design, simulation, 3, seed=4)
        b = _rounds(u, design, simulation, 3, seed=4)
        np.testing.assert_array_equal(a, b)


def test_normalise_updates_clips_then_divides():
    deltas = torch.tensor([[3.0, 4.0], [0.03, 0.04], [0.0, 0.0]], dtype=F64)
    g = normalise_updates(deltas, 0.5).numpy()
    np.testing.assert_allclose(g, [[0.6, 0.8], [0.06, 0.08], [0.0, 0.0]], rtol=1e-15)
    with pytest.raises(ValueError, match="w_clip"):
        normalise_updates(deltas, 0.0)


@pytest.mark.parametrize("kwargs,name", [
    ({"strategy": "cdpb_i", "rho": 1.5}, "rho"), ({"strategy": "cdpb_i", "rho": 0.0}, "rho"),
    ({"strategy": "cdpb_mixed", "rho": 0.5}, "beta"),
    ({"strategy": "cdpb_i", "rho": 0.5, "normalize": "expected"}, "expected_participants"),
    ({"strategy": "cdpb_i", "rho": 0.5, "hmin_mode": "worst"}, "hmin_mode"),
    ({"strategy": "is", "rho": 0.5, "q_IS": 0.0}, "q_IS"),
])
def test_invalid_round_design_raises(kwargs, name):
    with pytest.raises(ValueError, match=name):
        RoundDesign(**kwargs)


def test_unclipped_updates_are_rejected():
    u = torch.ones(3, 2, dtype=F64)
    with pytest.raises(ValueError, match="norm"):
        aggregate(u, torch.ones(3, dtype=F64), RoundDesign("cdpb_i", 0.5), _gen(0))
    with pytest.raises(ValueError, match="simulation"):
        aggregate(u / 2, torch.ones(3, dtype=F64), RoundDesign("cdpb_i", 0.5), _gen(0), "fast")


def test_per_coordinate_reading_exceeds_the_power_budget_d_fold():
    """(11) a[||g||^2 + d sigma_r^2] <= P holds with equality-at-most under the total reading;
    read per coordinate, a noise-only client sends d P and a reliable one up to ~d P: the record's
    tx_power_ratio (max_k E||x_k||^2 / P) says so, and every transmitting client violates P."""
    d = 40
    u = _updates(6, d)
    for strategy in ("cdpb_n", "cdpb_i"):
        total = aggregate(u, FIXED_GAINS, RoundDesign(strategy, 0.5), _gen(1))[1]
        per = aggregate(u, FIXED_GAINS, RoundDesign(strategy, 0.5,
                                                     noise_variance="per_coordinate"), _gen(1))[1]
        assert total["tx_power_ratio"] <= 1.0 + 1e-12 and total["power_violations"] == 0
        assert per["tx_power_ratio"] > 0.5 * d
        transmitting = 6 if strategy == "cdpb_n" else int((FIXED_GAINS >= 0.5).sum())
        assert per["power_violations"] == transmitting
    noisy = aggregate(u, 0.1 * FIXED_GAINS, RoundDesign("cdpb_n", 1.0,   # h < h_th = 1: all noise
                                                        noise_variance="per_coordinate"), _gen(1))[1]
    assert noisy["n_participants"] == 0 and noisy["tx_power_ratio"] == pytest.approx(d)


def test_unknown_noise_variance_reading_is_rejected():
    with pytest.raises(ValueError, match="noise_variance"):
        RoundDesign("cdpb_i", 0.5, noise_variance="per_coord")
