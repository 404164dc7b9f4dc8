"""OTA-FD's knowledge-sharing schemes (schemes.py): noiseless and local-only schemes, the
proposed scheme's budget and noise against the scheme without DP, the FL benchmarks (noiseless
FL as OTA-FL with DP without noise, unbiasedness with noise variance nu) and per-WD budgets
drawn once per trial."""

import numpy as np
import pytest
import torch
from test_ota_fd_distillation import COMMON, K, M, _setup

from airfl.core.aggregation import clip_by_norm
from airfl.core.scheme import RoundState
from airfl.runtime.rng import RoundStreams
from airfl.papers.ota_fd import distillation as tr
from airfl.papers.ota_fd.schemes import OtaFdScheme


def _scheme(method, **extra):
    return OtaFdScheme(method, method=method, **{**COMMON, **extra})


def test_noiseless_and_local_only_schemes():
    setup = _setup()
    counts = tr.class_counts(setup, K)
    counts[0, 0] = 5.0                                   # unequal shares
    q = torch.softmax(torch.randn(M, K, K, dtype=torch.float64,
                                  generator=torch.Generator().manual_seed(4)), -1)
    state = RoundState(1, torch.ones(M, dtype=torch.float64), setup.data.sizes,
                       setup.statistics, RoundStreams(0, "e", 0, 1),
                       extras={"class_counts": counts})
    r, _ = _scheme("fd_noiseless").aggregate(q.reshape(M, -1), state, {"T": 10})
    w = counts / counts.sum(0)
    assert r.view(K, K) == pytest.approx((w[:, :, None] * q).sum(0))
    assert _scheme("local_only").aggregate(q.reshape(M, -1), state, {"T": 10})[0] is None
    assert _scheme("local_only").gamma == 0.0 and not _scheme("local_only").shares


def test_proposed_scheme_meets_the_budget_and_is_noisier_than_without_dp():
    setup = _setup()
    counts = tr.class_counts(setup, K)
    q = torch.softmax(torch.randn(M, K, K, dtype=torch.float64,
                                  generator=torch.Generator().manual_seed(5)), -1)
    g = torch.Generator().manual_seed(3)
    for t in range(1, 6):
        streams = RoundStreams(0, "e", 0, t)
        power = torch.empty(M, dtype=torch.float64).exponential_(generator=g)
        state = RoundState(t, power, setup.data.sizes, setup.statistics, streams,
                           extras={"class_counts": counts})
        _, rec = _scheme("otafd_prop", eps=0.5).aggregate(q.reshape(M, -1), state, {"T": 100})
        _, free = _scheme("fd_ota_nodp").aggregate(q.reshape(M, -1), state, {"T": 100})
        assert rec["eps_real_ratio"] <= 1 + 1e-9
        assert rec["nu_median"] >= free["nu_median"]


D = 50
FL = dict(COMMON, clip_C=1.0)


def _method_scheme(method, **extra):
    return OtaFdScheme(method, method=method, **{**FL, **extra})


def _state(t, power, sizes):
    return RoundState(t, power, sizes, None, RoundStreams(0, "e", 0, t))


def _updates(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(M, D, generator=g, dtype=torch.float64) * torch.tensor([[0.5], [2.0], [3.0]])


def test_fl_noiseless_is_otafl_dp_without_noise():
    """The upper bound of OTA-FL with DP: the same clipping to C and weights B_i/B, no noise;
    OTA-FL at an inactive budget differs from it by its receiver noise only."""
    sizes = torch.tensor([10, 30, 60])
    u = _updates()
    assert (torch.linalg.vector_norm(u, dim=1) > 1.0).any()        # clipping bites
    r, record = _method_scheme("fl_noiseless").aggregate(u, _state(1, torch.ones(M), sizes),
                                                  {"T": 5, "dim": D})
    truth = torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64) @ clip_by_norm(u, 1.0)[0]
    assert r == pytest.approx(truth) and record["clipped_fraction"] > 0
    assert not torch.allclose(r, torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64) @ u)


@pytest.mark.parametrize("eps", [1e-3, 1e6])
def test_otafl_is_unbiased_with_noise_variance_nu_and_meets_its_budget(eps):
    """Monte Carlo over the receiver-noise stream: the mean of the received update is the
    B_i/B-weighted mean of the clipped updates (A21, c_i = B_i/B), its per-entry variance C^2 nu,
    and the realised eps (paper's formula, whole-update sensitivity 2C) <= eps, = eps in Case II."""
    sizes = torch.tensor([10, 30, 60])
    u = _updates(1)
    power = torch.tensor([0.3, 1.2, 2.0], dtype=torch.float64)
    truth = torch.tensor([0.1, 0.3, 0.6], dtype=torch.float64) @ clip_by_norm(u, 1.0)[0]
    scheme = _method_scheme("otafl_dp", eps=eps)
    draws, recs = [], []
    for t in range(1, 801):
        r, rec = scheme.aggregate(u, _state(t, power, sizes), {"T": 20, "dim": D})
        draws.append(r)
        recs.append(rec)
    draws = torch.stack(draws)
    nu = recs[0]["nu_median"]                 # same channel every draw: one nu
    z = (draws.mean(0) - truth) / np.sqrt(nu / len(draws))
    assert float(z.abs().max()) < 4.5
    assert float((draws.var(0) / nu - 1).abs().max()) < 0.25
    assert max(r["eps_real_ratio"] for r in recs) <= 1 + 1e-9
    case2 = recs[0]["case2_fraction"] == 1.0
    assert case2 == (eps < 1)                 # tiny eps: DP-limited; FL's huge eps: power-limited
    if case2:
        assert recs[0]["eps_real_ratio"] == pytest.approx(1.0, rel=1e-9)


def test_per_wd_budgets_are_drawn_once_per_trial_and_each_is_met():
    """X2's stated budgets eps_i ~ U(0.01, 1), delta_i ~ U(1e-9, 1e-7): one draw per trial
    (every round and method alike, CRN) and the realised eps_i of each WD <= its own eps_i."""
    sizes = torch.tensor([10, 30, 60])
    scheme = _method_scheme("otafl_dp", eps_uniform=[0.01, 1.0], delta_uniform=[1e-9, 1e-7])
    first = scheme.budgets(_state(1, torch.ones(M), sizes), M)
    again = scheme.budgets(_state(7, torch.ones(M), sizes), M)
    assert all((a == b).all() for a, b in zip(first, again))
    assert ((0.01 <= first[0]) & (first[0] <= 1.0)).all() and len(set(first[0])) == M
    assert ((1e-9 <= first[1]) & (first[1] <= 1e-7)).all()
    _, rec = scheme.aggregate(_updates(), _state(1, torch.ones(M), sizes), {"T": 50, "dim": D})
    assert rec["eps_real_ratio"] <= 1 + 1e-9
