"""Unit tests of airfl.channel against closed forms, reference values computed from the papers' settings and statistical laws.

Statistical checks use tolerances derived from the sample size (a number of standard errors, or a
KS p-value floor), never a value tuned to a seed.
"""

from __future__ import annotations

import math

import pytest
import scipy.stats
import torch

from airfl import channel as ch

Z = 5.0  # standard errors allowed in statistical checks


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- units, path loss
def test_dbm_watt_conversions():
    assert ch.dbm_to_watt(0.0).item() == pytest.approx(1e-3, rel=1e-12)
    assert ch.dbm_to_watt(30.0).item() == pytest.approx(1.0, rel=1e-12)
    assert ch.noise_psd_w_per_hz(-161.0).item() == pytest.approx(7.943e-20, rel=1e-4)
    assert ch.watt_to_dbm(1e-3).item() == pytest.approx(0.0, abs=1e-12)
    x = torch.tensor([-173.0, -100.0, 0.0, 23.0], dtype=torch.float64)
    torch.testing.assert_close(ch.watt_to_dbm(ch.dbm_to_watt(x)), x)
    torch.testing.assert_close(ch.linear_to_db(ch.db_to_linear(x)), x)
    assert ch.db_to_linear(3.0).item() == pytest.approx(1.9952623, rel=1e-7)
    assert ch.gain_from_db(100.0).item() == pytest.approx(1e-10, rel=1e-12)
    assert ch.dbm_to_watt(0.0).dtype == torch.float64


def test_noise_power_and_energy_per_symbol():
    # dp_perk_airfl §2.2: -173 dBm/Hz x 20 MHz = -99.99 dBm ~ 1.0e-13 W
    sigma2 = ch.noise_power_w(-173.0, 20e6)
    assert ch.watt_to_dbm(sigma2).item() == pytest.approx(-99.99, abs=0.005)
    # biased_fl §2.5: E_s = 1 mW / 1 MHz = 1e-9 J and E_s/N0 = 101.0 dB
    es = ch.energy_per_symbol(1e-3, 1e6)
    assert es.item() == pytest.approx(1e-9, rel=1e-12)
    assert ch.linear_to_db(es / ch.noise_psd_w_per_hz(-161.0)).item() == pytest.approx(101.0, abs=0.05)


def test_log_distance_at_reference_and_slope():
    assert ch.log_distance_db(1.0, pl0_db=50.0, exponent=2.2).item() == pytest.approx(50.0)
    assert ch.log_distance_db(10.0, pl0_db=50.0, exponent=2.2, d0=10.0).item() == pytest.approx(50.0)
    assert ch.log_distance_db(1000.0, pl0_db=50.0, exponent=2.2).item() == pytest.approx(50.0 + 66.0)


def test_free_space_friis():
    # 20 log10(4 pi 1000 2.4e9 / 3e8) = 100.046 dB; dp_perk_airfl §2.2 Lambda_min = 9.8946e-11
    pl = ch.free_space_db(1000.0, carrier_hz=2.4e9)
    assert pl.item() == pytest.approx(100.05, abs=0.01)
    assert ch.gain_from_db(pl).item() == pytest.approx(9.8946e-11, rel=1e-4)
    # generalised exponent and antenna gain (lapa eq. 39): G (c/(4 pi f d))^3.76
    d, f = 60.0, 915e6
    lapa = ch.gain_from_db(ch.free_space_db(d, carrier_hz=f, exponent=3.76, antenna_gain_db=5.0)).item()
    direct = 10 ** 0.5 * (3e8 / (4 * math.pi * f * d)) ** 3.76
    assert lapa == pytest.approx(direct, rel=1e-10)


@pytest.mark.parametrize("call", [
    lambda: ch.log_distance_db(-1.0, pl0_db=50.0, exponent=2.2),
    lambda: ch.log_distance_db(0.0, pl0_db=50.0, exponent=2.2),
    lambda: ch.free_space_db(torch.tensor([10.0, -5.0]), carrier_hz=2.4e9),
    lambda: ch.watt_to_dbm(-1.0),
    lambda: ch.noise_power_w(-161.0, 0.0),
    lambda: ch.shannon_rate(-0.5),
    lambda: ch.outage(1.0, -1.0),
    lambda: ch.upload_latency(100.0, rate=-1.0, bandwidth_hz=1e6),
    lambda: ch.quantile_radii(0, radius=100.0),
    lambda: ch.uniform_disc(5, radius=-3.0, generator=gen()),
    lambda: ch.uniform_disc(5, radius=3.0, generator=gen(), min_radius=4.0),
    lambda: ch.rayleigh_power(torch.tensor([1.0, -1.0]), 3, gen()),
    lambda: ch.stochastic_quantize(torch.ones(2, 3), 0, gen()),
    lambda: ch.stochastic_quantize(torch.ones(2, 3), torch.tensor([2, 3, 4]), gen()),
    lambda: ch.stochastic_quantize(torch.tensor([[1.0, float("nan")]]), 4, gen()),
    lambda: ch.payload_bits(10, 2.5),
    lambda: ch.fixed_coordinates([1.0, 2.0]),
])
def test_bad_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


# ----------------------------------------------------------------------------- geometry
def test_quantile_radii_and_mean_snr_match_the_biased_fl_setting():
    # OTA (R = 3000 m) and digital (R = 1200 m) radii and mean SNRs
    cases = {
        3000.0: ([671, 1162, 1500, 1775, 2012, 2225, 2419, 2598, 2766, 2924],
                 [-11.2, -16.4, -18.9, -20.5, -21.7, -22.6, -23.4, -24.1, -24.7, -25.3]),
        1200.0: ([268, 465, 600, 710, 805, 890, 967, 1039, 1106, 1170],
                 [-2.4, -7.7, -10.1, -11.7, -12.9, -13.9, -14.7, -15.4, -16.0, -16.5]),
    }
    for radius, (radii, snr_db) in cases.items():
        r = ch.quantile_radii(10, radius=radius)
        assert r.dtype == torch.float64 and r.shape == (10,)
        assert torch.all((r - torch.tensor(radii, dtype=torch.float64)).abs() <= 0.5)
        lam = ch.gain_from_db(ch.log_distance_db(r, pl0_db=50.0, exponent=2.2))
        snr = ch.linear_to_db(ch.mean_snr(power_w=1e-3, path_gain=lam, n0_dbm_per_hz=-161.0, bandwidth_hz=1e6))
        assert torch.all((snr - torch.tensor(snr_db, dtype=torch.float64)).abs() <= 0.05 + 1e-9)


def test_quantile_radii_batched_and_annulus():
    r = ch.quantile_radii(4, radius=torch.tensor([100.0, 200.0]))
    assert r.shape == (2, 4)
    torch.testing.assert_close(r[1], 2 * r[0])
    a = ch.quantile_radii(4, radius=100.0, min_radius=10.0)
    cdf = (a ** 2 - 100.0) / (100.0 ** 2 - 100.0)
    torch.testing.assert_close(cdf, (torch.arange(1, 5, dtype=torch.float64) - 0.5) / 4)


@pytest.mark.parametrize("min_radius", [0.0, 100.0])
def test_uniform_disc_radial_law_ks(min_radius):
    radius = 1000.0
    r = ch.uniform_disc(20000, radius=radius, generator=gen(3), min_radius=min_radius)
    assert r.dtype == torch.float64 and r.shape == (20000,)
    assert r.min() >= min_radius and r.max() <= radius
    cdf = lambda x: (x ** 2 - min_radius ** 2) / (radius ** 2 - min_radius ** 2)  # noqa: E731
    assert scipy.stats.kstest(r.numpy(), cdf).pvalue > 1e-4


def test_uniform_disc_deterministic_batched_and_coords():
    a = ch.uniform_disc(10, radius=3000.0, generator=gen(7), batch_shape=(3,))
    b = ch.uniform_disc(10, radius=3000.0, generator=gen(7), batch_shape=(3,))
    assert a.shape == (3, 10) and torch.equal(a, b)
    assert not torch.equal(a, ch.uniform_disc(10, radius=3000.0, generator=gen(8), batch_shape=(3,)))
    xy = ch.uniform_disc(10, radius=3000.0, generator=gen(7), batch_shape=(3,), return_coords=True)
    assert xy.shape == (3, 10, 2)
    torch.testing.assert_close(ch.distance_to_bs(xy), a)  # same radii with and without coords
    per_trial = ch.uniform_disc(5, radius=torch.tensor([10.0, 1000.0]), generator=gen(1))
    assert per_trial.shape == (2, 5) and per_trial[0].max() <= 10.0


def test_distances_fixed_coordinates_and_box():
    c = ch.fixed_coordinates([[3.0, 4.0], [0.0, -2.0]])
    torch.testing.assert_close(ch.distance_to_bs(c), torch.tensor([5.0, 2.0], dtype=torch.float64))
    pts = ch.uniform_box(50, [-10.0, -5.0, 0.0], [0.0, 5.0, 0.0], gen(2))
    assert pts.shape == (50, 3) and torch.all(pts[:, 2] == 0)
    assert torch.all(pts[:, 0] <= 0) and torch.all(pts[:, 0] >= -10)
    d = ch.distance_to_bs(pts, bs_position=[-50.0, 0.0, 10.0])  # lapa §2.3 BS position
    expect = torch.sqrt((pts[:, 0] + 50) ** 2 + pts[:, 1] ** 2 + 100.0)
    torch.testing.assert_close(d, expect)


# ----------------------------------------------------------------------------- fading
def test_rayleigh_power_mean_and_exponential_tail():
    lam = torch.tensor([1e-11, 3e-12, 2.0], dtype=torch.float64)
    n = 100_000
    p = ch.rayleigh_power(lam, n, gen(11))
    assert p.shape == (n, 3) and p.dtype == torch.float64
    e = p / lam  # should be Exp(1): mean 1, sd 1
    assert torch.all((e.mean(0) - 1.0).abs() <= Z / math.sqrt(n))
    for x in (0.1, 1.0, 3.0):
        q = math.exp(-x)
        se = math.sqrt(q * (1 - q) / n)
        freq = (e >= x).double().mean(0)
        assert torch.all((freq - q).abs() <= Z * se), (x, freq)
        tail = ch.rayleigh_tail(x * lam, lam)
        torch.testing.assert_close(tail, torch.full((3,), q, dtype=torch.float64))


def test_rayleigh_siso_complex_moments_and_consistency():
    lam = torch.tensor([0.5, 4.0], dtype=torch.float64)
    n = 100_000
    h = ch.rayleigh_siso(lam, n, gen(5))
    assert h.shape == (n, 2) and h.dtype == torch.complex128
    pw = h.abs() ** 2
    assert torch.all((pw.mean(0) / lam - 1).abs() <= Z / math.sqrt(n))
    # circular symmetry: each real part has variance Lambda/2 (sd of the estimate ~ Lambda/2 sqrt(2/n))
    assert torch.all((h.real.var(0) / (lam / 2) - 1).abs() <= Z * math.sqrt(2 / n))
    assert torch.all((h.imag.var(0) / (lam / 2) - 1).abs() <= Z * math.sqrt(2 / n))
    assert torch.all(h.real.mean(0).abs() <= Z * torch.sqrt(lam / 2 / n))
    # same generator state -> |h|^2 from rayleigh_power equals |rayleigh_siso|^2; bit-identical per seed
    torch.testing.assert_close(ch.rayleigh_power(lam, n, gen(5)), pw)
    assert torch.equal(ch.rayleigh_siso(lam, n, gen(5)), h)
    h64 = ch.rayleigh_siso(lam, n, gen(5), dtype=torch.complex64)
    assert h64.dtype == torch.complex64
    torch.testing.assert_close(h64.to(torch.complex128), h, rtol=1e-6, atol=1e-6)


def test_rayleigh_mimo_shape_and_column_power():
    lam = torch.tensor([1.0, 0.01, 25.0], dtype=torch.float64)
    m, t = 16, 4000
    H = ch.rayleigh_mimo(lam, m, t, gen(9))
    assert H.shape == (t, m, 3) and H.dtype == torch.complex128
    col = (H.abs() ** 2).mean(dim=(0, 1))  # per-device mean power over rounds and antennas
    assert torch.all((col / lam - 1).abs() <= Z / math.sqrt(t * m))
    # one antenna reproduces the SISO draws; batched path gains add a leading axis after T
    h1 = ch.rayleigh_mimo(lam, 1, 7, gen(4))[:, 0, :]
    torch.testing.assert_close(h1, ch.rayleigh_siso(lam, 7, gen(4)))
    Hb = ch.rayleigh_mimo(lam.expand(2, 3), 5, 7, gen(4))
    assert Hb.shape == (7, 2, 5, 3)


# ----------------------------------------------------------------------------- noise
def test_awgn_variance_real_and_complex():
    n = 200_000
    real = ch.awgn((n,), 2.0, gen(1))
    assert real.dtype == torch.float64
    assert abs(real.var().item() / 2.0 - 1) <= Z * math.sqrt(2 / n)
    cplx = ch.awgn((n,), 2.0, gen(1), complex=True)
    assert cplx.dtype == torch.complex128
    assert abs((cplx.abs() ** 2).mean().item() / 2.0 - 1) <= Z / math.sqrt(n)
    assert abs(cplx.real.var().item() / 1.0 - 1) <= Z * math.sqrt(2 / n)
    per_round = ch.awgn((3, n), torch.tensor([[1.0], [4.0], [0.0]]), gen(2))
    v = per_round.var(dim=1)
    assert abs(v[0].item() - 1) <= Z * math.sqrt(2 / n) and abs(v[1].item() / 4 - 1) <= Z * math.sqrt(2 / n)
    assert torch.all(per_round[2] == 0)


# ----------------------------------------------------------------------------- digital
def test_rates_capacity_and_latency():
    assert ch.shannon_rate(3.0).item() == pytest.approx(2.0)
    assert ch.capacity_bits(1.0, bandwidth_hz=1e6, duration_s=0.5).item() == pytest.approx(5e5)
    assert ch.upload_latency(1e6, rate=2.0, bandwidth_hz=1e6).item() == pytest.approx(0.5)
    out = ch.outage(torch.tensor([0.5, 1.0, 3.0]), 1.0)
    assert out.tolist() == [True, False, False]


def test_outage_frequency_matches_rayleigh_closed_form():
    n = 200_000
    mean_snr = torch.tensor([0.1, 1.0, 10.0], dtype=torch.float64)
    snr = ch.rayleigh_power(mean_snr, n, gen(21))  # instantaneous SNR = mean SNR x Exp(1)
    for rate in (0.5, 2.0):
        p = ch.outage_probability_rayleigh(mean_snr, rate)
        freq = ch.outage(snr, rate).double().mean(0)
        se = torch.sqrt(p * (1 - p) / n)
        assert torch.all((freq - p).abs() <= Z * se + 1e-12), (rate, freq, p)
    assert ch.outage_probability_rayleigh(1.0, 0.0).item() == 0.0


def test_tdma_round_latency_hand_example():
    bits = torch.tensor([1000.0, 2000.0, 500.0])
    rates = torch.tensor([1.0, 2.0, 0.5])
    mask = torch.tensor([[True, True, True], [False, True, False], [False, False, False]])
    lat = ch.tdma_round_latency(bits, rates, bandwidth_hz=1000.0, transmitting=mask)
    # slots: 1000/(1000*1) = 1 s, 2000/(1000*2) = 1 s, 500/(1000*0.5) = 1 s
    torch.testing.assert_close(lat, torch.tensor([3.0, 1.0, 0.0], dtype=torch.float64))
    # capacity mode: per-round rates, a silent device with rate 0 costs nothing
    per_round = torch.tensor([[1.0, 1.0, 0.0], [4.0, 4.0, 4.0]])
    m2 = torch.tensor([[True, False, False], [True, True, True]])
    lat2 = ch.tdma_round_latency(bits, per_round, bandwidth_hz=1000.0, transmitting=m2)
    torch.testing.assert_close(lat2, torch.tensor([1.0, 0.25 + 0.5 + 0.125], dtype=torch.float64))
    with pytest.raises(ValueError):
        ch.tdma_round_latency(bits, per_round, bandwidth_hz=1000.0, transmitting=torch.ones(2, 3, dtype=torch.bool))


# ----------------------------------------------------------------------------- quantization
def _quantize_many(x: torch.Tensor, bits, draws: int, seed: int) -> torch.Tensor:
    rows = x.shape[0]
    rep = x.expand(draws, *x.shape)
    b = bits if isinstance(bits, int) else bits.expand(draws, rows)
    return ch.stochastic_quantize(rep, b, gen(seed))


def test_quantizer_unbiased_and_variance_bound():
    x = torch.randn(3, 40, generator=gen(30), dtype=torch.float64) * torch.tensor([[1.0], [0.01], [50.0]])
    bits = torch.tensor([1, 2, 3])
    draws = 20_000
    q = _quantize_many(x, bits, draws, seed=31)
    # exact per-entry variance of stochastic rounding: s^2 Delta^2 f (1 - f)
    s = x.abs().amax(dim=1, keepdim=True)
    levels = (2.0 ** bits.double() - 1).unsqueeze(1)
    pos = (x / s + 1) * levels / 2
    f = pos - torch.floor(pos)
    var = s ** 2 * (2 / levels) ** 2 * f * (1 - f)
    err = (q.mean(0) - x).abs()
    assert torch.all(err <= Z * torch.sqrt(var / draws) + 1e-12 * s)
    emp_total = ((q - x) ** 2).mean(0).sum(dim=1)
    bound = ch.quantization_variance_bound(x, bits)
    assert bound.shape == (3,)
    assert torch.all(emp_total <= bound)
    # the empirical total matches the exact variance within its own sampling error
    exact_total = var.sum(dim=1)
    se_total = torch.sqrt((((q - x) ** 2).var(0)).sum(dim=1) / draws)
    assert torch.all((emp_total - exact_total).abs() <= Z * se_total + 1e-15)


def test_quantizer_grid_exactness_zero_rows_and_high_precision():
    r = 3
    delta = 2 / (2 ** r - 1)
    k = torch.tensor([[0, 1, 3, 7, 6], [7, 2, 5, 4, 0]], dtype=torch.float64)
    x = 2.5 * (-1 + k * delta)  # on the grid, ||x||_inf = 2.5
    torch.testing.assert_close(ch.stochastic_quantize(x, r, gen(0)), x, rtol=0, atol=1e-12)
    z = torch.zeros(4, 6, dtype=torch.float64)
    z[1] = torch.linspace(-1, 1, 6, dtype=torch.float64)
    out = ch.stochastic_quantize(z, 2, gen(1))
    assert torch.all(out[[0, 2, 3]] == 0)
    y = torch.randn(5, 1000, generator=gen(2), dtype=torch.float64)
    yq = ch.stochastic_quantize(y, 16, gen(3))
    s = y.abs().amax(dim=1, keepdim=True)
    assert torch.all((yq - y).abs() <= s * 2 / (2 ** 16 - 1) * (1 + 1e-9))
    assert ch.stochastic_quantize(y.float(), 4, gen(3)).dtype == torch.float32
    assert torch.equal(ch.stochastic_quantize(y, 4, gen(3)), ch.stochastic_quantize(y, 4, gen(3)))


def test_quantizer_per_row_bits_land_on_each_rows_grid():
    bits = torch.tensor([1, 2, 4, 8])
    x = torch.randn(4, 300, generator=gen(40), dtype=torch.float64)
    q = ch.stochastic_quantize(x, bits, gen(41))
    s = x.abs().amax(dim=1, keepdim=True)
    levels = (2.0 ** bits.double() - 1).unsqueeze(1)
    idx = (q / s + 1) * levels / 2  # grid index, must be an integer in [0, 2^r - 1]
    assert torch.all((idx - idx.round()).abs() <= 1e-9)
    assert torch.all(idx.round() >= 0) and torch.all(idx.round() <= levels)
    assert len(torch.unique(q[0])) <= 2  # one bit: only +-s
    # each entry is one of the two neighbouring grid points of x
    assert torch.all((q - x).abs() <= s * 2 / levels * (1 + 1e-12))


def test_payload_bits():
    assert ch.payload_bits(7850, 8) == 64 + 7850 * 8
    assert ch.payload_bits(10, 3, header_bits=0) == 30
    got = ch.payload_bits(7850, torch.tensor([1, 15]))
    assert got.dtype == torch.int64 and got.tolist() == [64 + 7850, 64 + 7850 * 15]


# ----------------------------------------------------------------------------- over the air
def test_truncated_inversion_respects_energy_budget():
    # biased_fl eqs. 7-8: ||g|| <= G and |h| >= G gamma / sqrt(d E_s)  =>  ||gamma g / h||^2 <= d E_s
    d, es, G = 7850, 1e-9, 20.0
    lam = ch.gain_from_db(ch.log_distance_db(ch.quantile_radii(10, radius=3000.0), pl0_db=50.0, exponent=2.2))
    gamma = torch.sqrt(d * lam * es / (2 * G ** 2))  # gamma^NV (biased_fl §2.5)
    power = ch.rayleigh_power(lam, 5000, gen(50))
    g_norm = G * torch.rand(power.shape, generator=gen(51), dtype=torch.float64)
    g_norm[0] = G  # include the worst case ||g|| = G
    th = ch.inversion_threshold_power(grad_bound=G, scale=gamma, dim=d, energy_per_symbol=es)
    mask = ch.truncated_inversion_mask(power, th)
    assert mask.shape == (5000, 10) and mask.dtype == torch.bool
    amplitude_rule = power.sqrt() >= G * gamma / math.sqrt(d * es)
    assert torch.equal(mask, amplitude_rule)
    energy = ch.inversion_energy(update_norm=g_norm, scale=gamma, channel_power=power)
    assert torch.all(energy[mask] <= d * es * (1 + 1e-12))
    assert (energy[~mask] > d * es).any()  # truncation is what enforces the budget
    # at gamma^NV every device participates with probability e^{-1/2} (biased_fl §2.5)
    freq = mask.double().mean(0)
    p = math.exp(-0.5)
    assert torch.all((freq - p).abs() <= Z * math.sqrt(p * (1 - p) / 5000))
    torch.testing.assert_close(ch.rayleigh_tail(th, lam), torch.full((10,), p, dtype=torch.float64))


def test_quantizer_on_selected_rows_matches_the_full_call_and_draws_the_same():
    """rows=mask: the selected rows are bit-identical to quantizing every row, the others are
    0, and the generator advances as in the full call (the next draw agrees)."""
    x = torch.randn(6, 500, generator=gen(4), dtype=torch.float64)
    bits = torch.tensor([1, 2, 3, 4, 8, 16])
    mask = torch.tensor([False, True, False, False, True, False])
    full_gen, rows_gen = gen(5), gen(5)
    full = ch.stochastic_quantize(x, bits, full_gen)
    some = ch.stochastic_quantize(x, bits, rows_gen, rows=mask)
    assert torch.equal(some[mask], full[mask]) and torch.all(some[~mask] == 0)
    assert torch.equal(torch.rand(3, generator=full_gen), torch.rand(3, generator=rows_gen))
    none = ch.stochastic_quantize(x, bits, gen(5), rows=torch.zeros(6, dtype=torch.bool))
    assert torch.all(none == 0)
    with pytest.raises(ValueError, match="rows"):
        ch.stochastic_quantize(x, bits, gen(5), rows=torch.ones(5, dtype=torch.bool))
    x[0, 0] = float("nan")                               # an unselected row is still checked
    with pytest.raises(ValueError, match="finite"):
        ch.stochastic_quantize(x, bits, gen(5), rows=mask)


def test_stochastic_quantize_with_given_uniforms_equals_drawing_them():
    """`noise=` (the uniforms drawn elsewhere, e.g. shared by the runs of a trial) gives the
    bits of the generator path, with and without a row mask; a wrong shape is refused."""
    from airfl.channel.quantization import stochastic_quantize

    x = torch.randn(4, 50, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    bits, rows = torch.tensor([1, 2, 3, 4]), torch.tensor([True, False, True, False])
    noise = torch.rand(x.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    for mask in (None, rows):
        drawn = stochastic_quantize(x, bits, torch.Generator().manual_seed(5), rows=mask)
        assert torch.equal(stochastic_quantize(x, bits, None, rows=mask, noise=noise), drawn)
    with pytest.raises(ValueError, match="noise must be float64 of shape"):
        stochastic_quantize(x, bits, None, noise=noise[:2])


def test_grid_indices_follow_the_stochastic_rounding_rule():
    """k = floor(pos) + 1{U < pos - floor(pos)}, pos = (x/s + 1)(2^r - 1)/2, on the
    grid 0..2^r - 1 even at x = +-s, for float32 and float64 rows."""
    from airfl.channel.quantization import grid_indices

    g = gen(60)
    x = torch.randn(4, 500, generator=g, dtype=torch.float64)
    x[:, 0], x[:, 1] = x.abs().amax(dim=1), -x.abs().amax(dim=1)  # the ends of each row
    bits = torch.tensor([1, 3, 8, 16], dtype=torch.float64)
    levels = (torch.exp2(bits) - 1).unsqueeze(1)
    noise = torch.rand(4, 500, generator=g, dtype=torch.float64)
    s = x.abs().amax(dim=1, keepdim=True)
    for rows in (x, x.float()):
        k = grid_indices(rows, rows.abs().amax(dim=1, keepdim=True).double(), levels, noise)
        pos = (rows.double() / s + 1) * levels / 2
        ref = torch.floor(pos) + (noise < pos - torch.floor(pos)).double()
        ref = torch.minimum(ref, levels)                          # pos = 2^r - 1 stays there
        assert torch.equal(k, ref) and k.dtype == torch.float64
        assert k.min() >= 0 and torch.all(k <= levels)
