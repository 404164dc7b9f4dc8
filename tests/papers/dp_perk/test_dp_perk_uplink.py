"""AirFL-DP's SIMO uplink (uplink.py, paper Sec. II-B, eqs. (7)-(10)): the channel plan's
shapes, laws and reproducibility, distance modes, transmit power within budget, the effective
receiver noise against the physical channel, given path gains."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from airfl.papers.dp_perk import beamforming as bf
from airfl.papers.dp_perk import uplink as ul


torch.set_num_threads(1)

DIM, CLIP = 1000, math.sqrt(0.012 * 1000)


def _inner(w: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
    """w^H h_i for every column: [..., K]."""
    return (w.conj().unsqueeze(-2) @ H).squeeze(-2)


@pytest.fixture(scope="module")
def plan():
    return ul.plan_uplink(12, 0.5, 8, 6, CLIP, DIM, 2e-3, ul.trial_generators(0, 0))


# ------------------------------------------------------------------------------------------
# Channel plan
# ------------------------------------------------------------------------------------------

def test_plan_shapes_and_laws(plan):
    T, K, m, n = 6, 6, 8, 12
    assert plan.active.shape == (T, K) and plan.channels.shape == (T, m, K)
    assert plan.channels_all.shape == (T, m, n) and plan.w0.shape == (T, m)
    assert plan.pi.shape == (T,) and plan.pi.dtype == torch.float64
    for row in plan.active:
        assert len(set(row.tolist())) == K and row.min() >= 0 and row.max() < n
        assert torch.equal(row, row.sort().values)
    assert bool((plan.distances >= 1.0).all() and (plan.distances <= 1000.0).all())
    # free space at 1 km and 2.4 GHz: Lambda_min = 9.8946e-11
    assert float(ul.pathloss(1000.0)) == pytest.approx(9.8946e-11, rel=1e-4)
    snr = float(ul.snr_wc_db(2e-3, float(ul.pathloss(1000.0)), 1e-13))
    assert snr == pytest.approx(2.96, abs=0.01)
    torch.testing.assert_close(plan.round(2).channels, plan.channels[2], rtol=0, atol=0)
    assert torch.equal(plan.pi, torch.linalg.vector_norm(plan.w0, dim=-1))


def test_plan_is_reproducible_and_streams_are_separate():
    kw = dict(n_devices=12, sample_ratio=0.5, antennas=8, rounds=4, clip=CLIP, dim=DIM,
              power_w=2e-3)
    a = ul.plan_uplink(**kw, generators=ul.trial_generators(3, 1))
    b = ul.plan_uplink(**kw, generators=ul.trial_generators(3, 1))
    assert torch.equal(a.channels_all, b.channels_all) and torch.equal(a.pi, b.pi)
    other = ul.trial_generators(3, 1)
    other["sampling"] = ul.trial_generators(4, 1)["sampling"]
    c = ul.plan_uplink(**kw, generators=other)
    assert torch.equal(a.channels_all, c.channels_all) and not torch.equal(a.active, c.active)


def test_distance_modes_and_zf_columns():
    gens = ul.trial_generators(0, 0)
    shared = ul.device_distances(7, gens["placement"], mode="shared")
    assert torch.unique(shared).numel() == 1
    assert torch.equal(ul.device_distances(7, gens["placement"], mode="edge"),
                       torch.full((7,), 1000.0, dtype=torch.float64))
    full = ul.plan_uplink(6, 0.5, 8, 3, CLIP, DIM, 2e-3, ul.trial_generators(0, 0),
                          zf_columns="all")
    inner = _inner(full.w0.unsqueeze(-2).expand(-1, 1, -1)[:, 0], full.channels_all)
    torch.testing.assert_close(inner, torch.full_like(inner, full.gamma), rtol=1e-10, atol=0)
    with pytest.raises(ValueError, match="sample_ratio"):
        ul.active_count(7, 0.5)
    with pytest.raises(ValueError, match="distance_mode"):
        ul.device_distances(3, gens["placement"], mode="ring")


def test_at_power_scales_the_combiner(plan):
    other = plan.at_power(plan.power_w / 4)
    torch.testing.assert_close(other.pi, 2 * plan.pi, rtol=1e-15, atol=0)
    assert other.gamma == pytest.approx(bf.power_threshold(CLIP, DIM, plan.power_w / 4), rel=1e-15)
    inner = _inner(other.w0[1], other.channels[1])
    assert float(inner.abs().min()) == pytest.approx(other.gamma, rel=1e-10)


# ------------------------------------------------------------------------------------------
# (P1) combiners


# ------------------------------------------------------------------------------------------
# Transmit scaling and the effective noise
# ------------------------------------------------------------------------------------------

def test_transmit_power_meets_the_budget(plan):
    ch = plan.round(0)
    norms = torch.full((ch.channels.shape[-1],), CLIP, dtype=torch.float64)   # worst case
    for scale in (1.0, 3.0):                                                  # q = pi and q > pi
        s = ul.transmit_scalars(scale * ch.w0, ch.channels)
        power = ul.transmit_power(norms, s, DIM)
        assert float(power.max()) <= plan.power_w / scale ** 2 * (1 + 1e-10)
        # ZF makes every constraint tight: the worst case uses exactly the budget
        assert float(power.max()) == pytest.approx(plan.power_w / scale ** 2, rel=1e-10)


def _variance_bounds(n: int, p: float = 1e-6) -> tuple[float, float]:
    """Two-sided chi-square acceptance region of s^2/var for n samples at false-alarm p."""
    return (stats.chi2.ppf(p / 2, n - 1) / (n - 1), stats.chi2.ppf(1 - p / 2, n - 1) / (n - 1))


def test_effective_noise_formula_against_the_physical_channel():
    """(8)-(9) simulated literally: Re(w^H y) - sum Delta_i ~ N(0, ||w||^2 sigma^2 / 2).

    Acceptance: the sample variance over d i.i.d. entries lies in the two-sided chi-square region
    at p = 1e-6, and the mean within 5.3 standard errors (p ~ 1e-7); the real_full variance (twice
    as large) must be rejected by the same test.
    """
    g = torch.Generator().manual_seed(1)
    d, sigma2 = 40_000, 1e-13
    plan = ul.plan_uplink(6, 0.5, 4, 1, CLIP, d, 2e-3, ul.trial_generators(2, 0))
    ch = plan.round(0)
    clipped = torch.randn(3, d, generator=g, dtype=torch.float64)
    estimate = ul.physical_aggregate(clipped, ch.channels, ch.w0, sigma2, g)
    noise = estimate.real - clipped.sum(0)
    lo, hi = _variance_bounds(d)
    for model, should_pass in [("complex_real_part", True), ("real_full", False)]:
        var = ul.effective_noise_variance(ch.pi, sigma2, model)
        ratio = float(noise.var() / var)
        assert bool(lo <= ratio <= hi) is should_pass, (model, ratio)
    var = ul.effective_noise_variance(ch.pi, sigma2, "complex_real_part")
    assert abs(float(noise.mean())) <= 5.3 * math.sqrt(var / d)
    # noiseless: perfect inversion returns the sum exactly (signal part of (9) is sum Delta_i)
    clean = ul.physical_aggregate(clipped, ch.channels, ch.w0, 0.0, g)
    torch.testing.assert_close(clean.real, clipped.sum(0), rtol=1e-10, atol=1e-10)
    assert float(clean.imag.abs().max()) < 1e-10


def test_fast_noise_path_is_reproducible_and_has_the_right_law():
    d = 50_000
    z1 = ul.effective_noise(d, 3.0, 2.0, "real_full", torch.Generator().manual_seed(9))
    z2 = ul.effective_noise(d, 3.0, 2.0, "real_full", torch.Generator().manual_seed(9))
    assert torch.equal(z1, z2) and z1.dtype == torch.float32 and z1.shape == (d,)
    lo, hi = _variance_bounds(d)
    assert lo <= float(z1.double().var()) / 18.0 <= hi
    half = ul.effective_noise(d, 3.0, 2.0, "complex_real_part", torch.Generator().manual_seed(9),
                              dtype=torch.float64)
    torch.testing.assert_close(half, z1.double() / math.sqrt(2.0), rtol=1e-6, atol=0)
    with pytest.raises(ValueError, match="noise_model"):
        ul.effective_noise_variance(1.0, 1.0, "imaginary")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_plan_on_cuda_matches_cpu():
    kw = dict(n_devices=12, sample_ratio=0.5, antennas=8, rounds=4, clip=CLIP, dim=DIM,
              power_w=2e-3)
    cpu = ul.plan_uplink(**kw, generators=ul.trial_generators(0, 0))
    gpu = ul.plan_uplink(**kw, generators=ul.trial_generators(0, 0), device="cuda")
    assert gpu.w0.device.type == "cuda"
    torch.testing.assert_close(gpu.pi, cpu.pi, rtol=1e-10, atol=0)
    opt = bf.zf_opt_beamformer(gpu.channels, gpu.gamma)
    assert opt.device.type == "cuda"


def test_a_plan_on_given_path_gains_draws_from_them_as_from_its_own():
    """path_gain (the design context's Lambda_i) in place of its own placement and free-space
    law: given its own gains, the same active sets, channels and combiners bit for bit (the
    placement stream is not read, the others are the trial's); given other gains, the channels
    scale by sqrt(Lambda'/Lambda) column by column."""
    own = ul.plan_uplink(12, 0.5, 8, 6, CLIP, DIM, 2e-3, ul.trial_generators(0, 0))
    given = ul.plan_uplink(12, 0.5, 8, 6, CLIP, DIM, 2e-3, ul.trial_generators(0, 0),
                           path_gain=own.pathloss, distances_m=own.distances)
    for field in ("distances", "pathloss", "active", "channels_all", "w0", "pi"):
        assert torch.equal(getattr(own, field), getattr(given, field)), field
    other = torch.linspace(1e-10, 1e-8, 12, dtype=torch.float64)
    moved = ul.plan_uplink(12, 0.5, 8, 6, CLIP, DIM, 2e-3, ul.trial_generators(0, 0),
                           path_gain=other, distances_m=torch.arange(1.0, 13.0))
    assert torch.equal(moved.pathloss, other) and torch.equal(moved.active, own.active)
    ratio = (other / own.pathloss).sqrt()
    assert torch.allclose(moved.channels_all, own.channels_all * ratio, rtol=1e-12)


@pytest.mark.parametrize("gain, distances, message", [
    (torch.ones(5), torch.ones(12), r"shape \(12,\)"),
    (torch.ones(12), None, "path_gain needs distances_m"),
    (torch.zeros(12), torch.ones(12), "finite and > 0"),
])
def test_bad_given_path_gains_stop(gain, distances, message):
    with pytest.raises(ValueError, match=message):
        ul.plan_uplink(12, 0.5, 8, 6, CLIP, DIM, 2e-3, ul.trial_generators(0, 0),
                       path_gain=gain, distances_m=distances)
