"""LAPA's radio (radio.py): the layout of Sec. V-A, the calibration that puts the median device
at the target SNR, and the BPSK SNR thresholds that invert the SER (eq. 22)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from airfl.papers.lapa.radio import (bpsk_ser, bpsk_snr_threshold, channel_noise_std, draw_radio,
                                     layout_generator, symbol_snr)


@pytest.fixture(scope="module")
def radio():
    with open("params.yaml") as f:
        return yaml.safe_load(f)["lapa"]["radio"]


def test_layout_matches_section_v_a(radio):
    drawn = draw_radio(radio, clip=10.0, dim=21840, generator=layout_generator(0, 0))
    region1, region2 = drawn.positions[drawn.region == 1], drawn.positions[drawn.region == 2]
    assert len(region1) == 7 and len(region2) == 8
    assert np.all((-10 <= region1[:, 0]) & (region1[:, 0] <= 0))
    assert np.all((10 <= region2[:, 0]) & (region2[:, 0] <= 20))
    assert np.all(np.abs(drawn.positions[:, 1]) <= 5) and np.all(drawn.positions[:, 2] == 0)
    expected = np.linalg.norm(drawn.positions - np.array([-50.0, 0.0, 10.0]), axis=1)
    np.testing.assert_allclose(drawn.distances_m, expected)
    # eq. 39: PL = G_BS G_D (c / (4 pi f d))^3.76, G_BS = 5 dBi
    pl = 10 ** 0.5 * (3e8 / (4 * math.pi * 9.15e8 * expected)) ** 3.76
    np.testing.assert_allclose(drawn.path_gain, pl, rtol=1e-10)
    # the same (seed, trial) gives the same layout, bit for bit
    again = draw_radio(radio, clip=10.0, dim=21840, generator=layout_generator(0, 0))
    assert np.array_equal(again.channel_norm2, drawn.channel_norm2)


def test_calibration_puts_the_median_device_at_the_target_snr(radio):
    drawn = draw_radio(radio, clip=10.0, dim=21840, generator=layout_generator(0, 3))
    snr = symbol_snr(channel_norm2=drawn.channel_norm2, power_w=1.0, clip=10.0, dim=21840,
                     noise_w=1e-3)
    assert 10 * math.log10(np.median(snr)) == pytest.approx(1.5, abs=1e-9)
    # gamma_sym = (s_ref / sigma_ch)^2
    sigma = channel_noise_std(channel_norm2=drawn.channel_norm2, power_w=1.0, noise_w=1e-3)
    np.testing.assert_allclose((10.0 / math.sqrt(21840) / sigma) ** 2, snr, rtol=1e-12)


def test_bpsk_snr_thresholds_invert_the_ser():
    for ser, gamma in ((1e-1, 0.821), (1e-2, 2.706), (1e-3, 4.775)):
        assert bpsk_snr_threshold(ser) == pytest.approx(gamma, abs=1e-3)
        assert float(bpsk_ser(bpsk_snr_threshold(ser))) == pytest.approx(ser, rel=1e-9)
