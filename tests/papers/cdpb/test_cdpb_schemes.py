"""CDPB's strategies as training schemes: the designed rho, the aggregation through the core's
round state (common random numbers), W_clip scaling, and the per-round privacy record."""

from __future__ import annotations

import math

import pytest
import torch

from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.pipeline.registry import build_scheme
from airfl.papers.cdpb.analytic_figures import DEFAULTS
from airfl.papers.cdpb.design import strategy_rho
from airfl.papers.cdpb.privacy import privacy_inputs, strategy_rdp_round
from airfl.papers.cdpb.schemes import SETTING_KEYS
from airfl.papers.cdpb.setting import CdpbSetting
from airfl.privacy import event_from_dict, event_rdp
from airfl.runtime.rng import RoundStreams

K, D = 100, 50


def _scheme(strategy, **extra):
    return build_scheme(strategy, {"scheme": "cdpb", "strategy": strategy, "w_clip": 0.5,
                                   **{k: DEFAULTS[k] for k in SETTING_KEYS}, **extra})


def _context():
    stats = ChannelStatistics(torch.ones(K, dtype=torch.float64), 1.0, 1e6,
                              torch.zeros(K, dtype=torch.float64))
    return DesignContext(K, D, 10, torch.full((K,), 10), stats)


def _state(gains, t=1):
    stats = _context().channel
    return RoundState(t, gains, torch.full((K,), 10), stats, RoundStreams(7, "test/cdpb", 0, t))


@pytest.mark.parametrize("strategy", ["cdpb_i", "cdpb_n", "gamma_bar", "hmin", "is",
                                      "noise_free"])
def test_design_is_the_strategys_rho_and_the_record_its_round_rdp(strategy):
    scheme = _scheme(strategy)
    design = scheme.design(_context())
    params = {**DEFAULTS, "K": K}
    assert design["rho"] == pytest.approx(strategy_rho(params, strategy)[0], rel=1e-12)
    gains = torch.distributions.Exponential(1.0).sample((K,)).double()
    updates = torch.randn(K, D, generator=torch.Generator().manual_seed(1))
    _, record = scheme.aggregate(updates, _state(gains), design)
    (event,) = record["privacy"]                    # the paper's claim: Theorem 1 at sigma_q^2
    setting = CdpbSetting.from_dict(params)
    expected = float(strategy_rdp_round(setting, strategy, design["rho"]))
    assert float(event_rdp(event_from_dict(event), [2])[0]) == pytest.approx(expected, rel=1e-9)
    (simulated,) = record["privacy_simulated"]      # the noise simulated: sigma_q^2 / d (total)
    p, sigma_q2 = (float(v) for v in privacy_inputs(setting, strategy, design["rho"]))
    z2 = sigma_q2 / D / (design["rho"] * setting.W**2)
    assert float(event_rdp(event_from_dict(simulated), [2])[0]) == pytest.approx(
        _subsampled_gaussian_rdp2(p, z2), rel=1e-9)
    if strategy == "cdpb_i":
        assert design["tau_opt"] == 72 and design["algorithm3"]["feasible"]


def test_noise_free_with_every_client_reliable_is_the_clipped_mean_times_w_clip():
    scheme = _scheme("noise_free", sigma_z2=0.0)
    design = scheme.design(_context())
    updates = torch.randn(K, D, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    estimate, record = scheme.aggregate(updates, _state(torch.full((K,), 1e6,
                                                                   dtype=torch.float64)), design)
    norms = torch.linalg.vector_norm(updates, dim=1, keepdim=True)
    clipped = updates * torch.clamp(0.5 / norms, max=1.0)
    assert record["participants"] == K
    assert torch.allclose(estimate, clipped.mean(dim=0), atol=1e-12)


def test_strategies_of_one_round_see_the_same_gains_and_coins():
    """Common random numbers: IS participants are CDPB-i's reliable clients that pass the same
    coins (IS uses CDPB-i's rho), and CDPB-i and Noise-Free pick the same clients."""
    gains = torch.distributions.Exponential(1.0).sample((K,)).double()
    updates = torch.randn(K, D, generator=torch.Generator().manual_seed(3))
    counts = {}
    for strategy in ("cdpb_i", "noise_free", "is"):
        scheme = _scheme(strategy)
        _, record = scheme.aggregate(updates, _state(gains), scheme.design(_context()))
        counts[strategy] = record["participants"]
    assert counts["cdpb_i"] == counts["noise_free"] > counts["is"] > 0


def test_changing_distribution_is_shared_by_both_variants_and_costs_a_recomputation():
    """Fig. 8 (our reconstruction): h_bar is drawn once per period from the trial's stream,
    alike for CDPB-i and CDPB-n; the server's Algorithm-3 recomputation costs kappa |T_s| time
    units at the first round of each period only, kappa = 1/|T_i(h_bar = 1)|."""
    from airfl.papers.cdpb.design import design_from_params

    setting = {k: DEFAULTS[k] for k in SETTING_KEYS}
    setting.update(P=10.0, gamma_bar=0.1)
    records = {}
    for strategy in ("cdpb_i", "cdpb_n"):
        scheme = build_scheme(strategy, {"scheme": "cdpb", "strategy": strategy, "w_clip": 0.5,
                                         "change_every": 3, "h_bar_range": [0.5, 1.5],
                                         **setting})
        context = _context()
        context.num_devices = 10
        design = scheme.design(context)
        updates = torch.randn(10, D, generator=torch.Generator().manual_seed(4))
        gains = torch.ones(10, dtype=torch.float64)
        records[strategy] = [scheme.aggregate(updates, RoundState(
            t, gains, torch.full((10,), 10), context.channel,
            RoundStreams(7, "test/cdpb8", 0, t)), design)[1] for t in range(1, 8)]
    kappa = 1.0 / len(design_from_params({**setting, "K": 10, "h_bar": 1.0},
                                         "cdpb_i").feasible_set)
    h_i = [r["h_bar"] for r in records["cdpb_i"]]
    assert h_i == [r["h_bar"] for r in records["cdpb_n"]]
    assert h_i[0] == h_i[1] == h_i[2] != h_i[3] == h_i[4] == h_i[5] != h_i[6]
    assert all(0.5 <= h <= 1.5 for h in h_i)
    for strategy, rows in records.items():
        assert [r["recomputed"] for r in rows] == [True, False, False, True, False, False, True]
        for r in rows:
            expected = 1.0 + (kappa * r["T_size"] if r["recomputed"] else 0.0)
            assert r["latency_s"] == pytest.approx(expected)
            design = design_from_params({**setting, "K": 10, "h_bar": r["h_bar"]}, strategy)
            assert r["rho"] == pytest.approx(design.rho_opt) and r["T_size"] == len(
                design.feasible_set)


def _theorem1(p: float, variance: float, alpha: int = 2, W: float = 1.0) -> float:
    """Theorem 1 (37), written out here: ln2/(alpha-1) + alpha/(alpha-1) ln(1 + p e^{(alpha-1)
    W^2 / sigma^2}) for a Gaussian mechanism of variance sigma^2."""
    return math.log(2.0) / (alpha - 1) + alpha / (alpha - 1) * math.log1p(
        p * math.exp((alpha - 1) * W**2 / variance))


@pytest.mark.parametrize("strategy", ["cdpb_i", "cdpb_n"])
def test_records_hold_theorem1_claimed_and_the_mechanism_simulated(strategy):
    """`privacy` is the paper's claim, Theorem 1 at sigma_q^2 (
    expected inputs, computed here from (53), (56), (60)) under either noise reading;
    `privacy_simulated` is the Poisson-subsampled Gaussian the round simulates, at the
    per-coordinate variance sigma_q^2 (per coordinate) or sigma_q^2 / d (total)."""
    d, s = 8, CdpbSetting.from_dict({**DEFAULTS, "K": K})
    gains = torch.distributions.Exponential(1.0).sample((K,)).double()
    updates = torch.randn(K, d, generator=torch.Generator().manual_seed(3))
    claimed, simulated, rho = {}, {}, None
    for reading in ("total", "per_coordinate"):
        scheme = _scheme(strategy, noise_variance=reading)
        design = scheme.design(_context())
        rho = design["rho"]
        _, record = scheme.aggregate(updates, _state(gains), design)
        claimed[reading] = float(event_rdp(event_from_dict(record["privacy"][0]), [2])[0])
        simulated[reading] = float(event_rdp(event_from_dict(record["privacy_simulated"][0]),
                                             [2])[0])
    p = math.exp(-rho * s.W**2 / (s.P * s.h_bar))                            # (53)
    sigma_q2 = (s.K * s.P * s.h_bar * p if strategy == "cdpb_i"                # (60)
                else s.K * (s.P * s.h_bar - rho * s.W**2 * p)) + s.sigma_z2     # (56)
    for reading, variance in (("per_coordinate", sigma_q2), ("total", sigma_q2 / d)):
        assert claimed[reading] == pytest.approx(_theorem1(p, sigma_q2), rel=1e-12)
        assert simulated[reading] == pytest.approx(
            _subsampled_gaussian_rdp2(p, variance / (rho * s.W**2)), rel=1e-9)
    assert simulated["total"] > simulated["per_coordinate"]


def _subsampled_gaussian_rdp2(p: float, z2: float) -> float:
    """RDP at order 2 of the Poisson-subsampled Gaussian of noise multiplier^2 z2 (Mironov,
    Talwar, Zhang 2019, integer alpha): ln[(1-p)^2 + 2p(1-p) + p^2 e^{1/z^2}], written out."""
    terms = [2 * math.log(p) + 1.0 / z2]                     # in logs: e^{1/z^2} overflows
    if p < 1:
        terms.append(math.log((1 - p) ** 2 + 2 * p * (1 - p)))
    top = max(terms)
    return top + math.log(sum(math.exp(x - top) for x in terms))
