"""DP as a perk: per-round aggregation of Vanilla FL, FL w/ clipping, AirFL-MIMO and AirFL-DP, with
common random numbers (our reading of Sec. II-B)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from airfl.papers.dp_perk import aggregation as mt
from airfl.papers.dp_perk.design import design_airfl_dp, perk_window
from airfl.papers.dp_perk.privacy import paper_order
from airfl.papers.dp_perk.uplink import plan_uplink, trial_generators
from airfl.privacy import cumulative_rdp, eps_from_rdp_classic

torch.set_num_threads(1)

DIM, R, DELTA, SIGMA2, EPS_TILDE = 2000, 0.5, 1e-5, 1e-13, 0.5
CLIP = math.sqrt(0.012 * DIM)


@pytest.fixture(scope="module")
def plan():
    return plan_uplink(12, R, 8, 6, CLIP, DIM, 2e-3, trial_generators(0, 0))


def _design(plan):
    return design_airfl_dp(plan.pi, eps_tilde=EPS_TILDE, delta=DELTA, dim=DIM, clip=CLIP,
                           sample_ratio=R, sigma2=SIGMA2, power_w=plan.power_w)


def _window(plan) -> tuple[float, float]:
    d = _design(plan)
    return perk_window(plan.pi, A=d.budget_A, power_w=plan.power_w, clip=CLIP, dim=DIM)


def _updates(t: int, dtype=torch.float32) -> torch.Tensor:
    """Scaled model differences [K, d], some rows above the clip norm."""
    g = torch.Generator().manual_seed(1000 + t)
    scale = 0.02 * (1 + t) * torch.arange(1, 7, dtype=torch.float64).unsqueeze(1)
    return (torch.randn(6, DIM, generator=g, dtype=torch.float64) * scale).to(dtype)


def _run(method: str, plan, design, seed: int = 5, dtype=torch.float32
         ) -> list[tuple[torch.Tensor, dict]]:
    noise = torch.Generator().manual_seed(seed)
    return [mt.AGGREGATORS[method](_updates(t, dtype), plan.round(t), design, noise)
            for t in range(plan.rounds)]


def test_dp_equals_mimo_bit_for_bit_below_the_threshold(plan):
    p_thr, _ = _window(plan)
    low = plan.at_power(0.5 * p_thr)
    design = _design(low)
    assert not design.binding
    dp, mimo = _run("airfl_dp", low, design), _run("airfl_mimo", low, design)
    for (u_dp, r_dp), (u_mimo, r_mimo) in zip(dp, mimo):
        assert torch.equal(u_dp, u_mimo) and r_dp["q"] == r_mimo["q"]
    # ... and the test can fail: just above the threshold some round differs
    high = plan.at_power(1.5 * p_thr)
    design_high = _design(high)
    assert design_high.binding
    pairs = zip(_run("airfl_dp", high, design_high), _run("airfl_mimo", high, design_high))
    assert any(not torch.equal(a[0], b[0]) for a, b in pairs)


def test_dp_does_not_change_with_power_above_full_binding(plan):
    _, p_full = _window(plan)
    runs = []
    for factor in (1.01, 30.0, 1e6):
        at = plan.at_power(factor * p_full)
        runs.append((_run("airfl_dp", at, _design(at)), _run("airfl_mimo", at, _design(at))))
    (dp0, mimo0), (dp1, mimo1), (dp2, _) = runs
    for (a, _r), (b, _s), (c, _u) in zip(dp0, dp1, dp2):
        assert torch.equal(a, b) and torch.equal(a, c)
    assert any(not torch.equal(a[0], b[0]) for a, b in zip(mimo0, mimo1))   # MIMO keeps moving


def test_update_is_clipped_mean_plus_the_drawn_noise(plan):
    design = _design(plan)
    t = 3
    updates = _updates(t, torch.float64)
    noise = torch.Generator().manual_seed(11)
    replay = torch.Generator().manual_seed(11)
    update, record = mt.airfl_dp(updates, plan.round(t), design, noise)
    clipped = updates / torch.clamp(torch.linalg.vector_norm(updates, dim=1, keepdim=True) / CLIP,
                                    min=1.0)
    z = torch.randn(DIM, generator=replay, dtype=torch.float64) * math.sqrt(
        design.q[t] ** 2 * SIGMA2 / 2)
    torch.testing.assert_close(update * 6, clipped.sum(0) + z, rtol=1e-12, atol=1e-12)
    assert record["noise_std_update"] == pytest.approx(math.sqrt(design.q[t] ** 2 * SIGMA2 / 2) / 6)
    assert 0 < record["clipped_fraction"] < 1
    vanilla, _ = mt.vanilla(updates)
    fl_clip, rec_clip = mt.fl_clip(updates, None, design)
    torch.testing.assert_close(vanilla, updates.mean(0), rtol=0, atol=0)
    torch.testing.assert_close(fl_clip, clipped.mean(0), rtol=1e-14, atol=1e-14)
    assert rec_clip["clipped_fraction"] == record["clipped_fraction"]


def test_records_feed_the_generic_accountant(plan):
    """The per-round events composed by airfl.privacy give the design's eps (D = inf)."""
    design = _design(plan)
    records = [r for _, r in _run("airfl_dp", plan, design)]
    order = paper_order(design.privacy_dp.eps_paper, DELTA)
    total = cumulative_rdp([r["privacy"] for r in records], [order])[-1]
    assert eps_from_rdp_classic([order], total, DELTA)[0] == pytest.approx(
        design.privacy_dp.eps_paper, rel=1e-12)
    assert design.privacy_dp.eps_paper <= EPS_TILDE * math.sqrt(DIM) * (1 + 1e-12)
    noiseless = [r for _, r in _run("fl_clip", plan, design)]
    assert np.isinf(cumulative_rdp([r["privacy"] for r in noiseless], [order])[-1]).all()
    for r in records + noiseless:
        json.dumps(r, allow_nan=False)


def test_records_report_transmit_power_within_budget(plan):
    design = _design(plan)
    assert design.binding
    runs = [_run(m, plan, design, dtype=torch.float64) for m in ("airfl_dp", "airfl_mimo")]
    for (_, r_dp), (_, r_mimo) in zip(*runs):
        assert r_mimo["tx_power_max_w"] <= plan.power_w * (1 + 1e-10)
        assert r_dp["tx_power_max_w"] <= r_mimo["tx_power_max_w"] * (1 + 1e-12)
        assert r_dp["q"] >= r_dp["pi"] and r_dp["phi"] == pytest.approx(1 / r_dp["q"] ** 2)


def test_shapes_dtypes_and_mismatched_design(plan):
    design = _design(plan)
    out, _ = mt.airfl_mimo(_updates(0), plan.round(0), design, torch.Generator().manual_seed(0))
    assert out.shape == (DIM,) and out.dtype == torch.float32 and out.device.type == "cpu"
    other = _design(plan.at_power(1e-9))
    with pytest.raises(ValueError, match="does not belong"):
        mt.airfl_dp(_updates(0), plan.round(0), other, torch.Generator().manual_seed(0))
