"""Each generic scheme against a property its source states (unbiasedness, energy, noise, outage)."""

from __future__ import annotations

import math

import pytest
import torch

import airfl.schemes  # noqa: F401
from airfl.channel.digital import shannon_rate
from airfl.channel.ota import inversion_energy
from airfl.core.aggregation import clip_by_norm
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.pipeline.registry import build_scheme
from airfl.privacy import RdpAccountant, event_from_dict
from airfl.runtime.rng import RoundStreams

N, D = 8, 50


def _statistics():
    gain = torch.linspace(1.0, 4.0, N, dtype=torch.float64)
    return ChannelStatistics(gain, reference_gain=1.0, bandwidth_hz=1e6, distances_m=torch.ones(N))


def _context():
    return DesignContext(N, D, 10, torch.arange(1, N + 1) * 10, _statistics())


def _state(t, channel_power=None, seed=0):
    streams = RoundStreams(seed, "test", 0, t)
    power = channel_power if channel_power is not None else \
        _statistics().path_gain * torch.empty(N, dtype=torch.float64).exponential_(
            generator=streams("channel"))
    return RoundState(t, power, torch.arange(1, N + 1) * 10, _statistics(), streams)


def _updates(seed=0):
    return torch.randn(N, D, generator=torch.Generator().manual_seed(seed)) * 0.1


def test_ideal_is_the_data_size_weighted_mean():
    scheme = build_scheme("ideal", {"scheme": "ideal_fedavg"})
    updates = _updates()
    estimate, record = scheme.aggregate(updates, _state(1), {})
    weights = torch.arange(1, N + 1, dtype=torch.float32) / torch.arange(1, N + 1).sum()
    assert torch.allclose(estimate, weights @ updates, atol=1e-7)
    assert record["privacy"] is None


def _ota(snr_db=0.0):
    return build_scheme("ota", {"scheme": "ota_truncated_inversion", "snr_db": snr_db,
                                "truncation_threshold": 0.5, "clip_norm": 1.0})


def test_ota_is_unbiased_for_the_mean_of_transmitting_devices():
    """Zhu et al. 2020: y / (b |S|) is unbiased for the mean of the aligned (clipped) updates."""
    scheme = _ota(snr_db=0.0)
    design = scheme.design(_context())
    power = torch.tensor([0.1, 2.0, 0.2, 3.0, 1.5, 0.01, 0.9, 5.0], dtype=torch.float64)
    updates = _updates() * 20                               # some rows exceed the clip norm
    clipped, _ = clip_by_norm(updates, 1.0)
    mask = power >= design["threshold_power"]
    target = clipped[mask].mean(dim=0)
    estimates = torch.stack([scheme.aggregate(updates, _state(t, power), design)[0]
                             for t in range(400)])
    noise_std = 1.0 / (design["amplitude"] * int(mask.sum()))
    error = (estimates.mean(dim=0) - target).abs().max()
    assert error < 5 * noise_std / math.sqrt(400) * 1.5       # max over D entries: allow margin
    assert estimates.std(dim=0).mean() == pytest.approx(noise_std, rel=0.05)


def test_ota_transmit_energy_meets_the_budget():
    """||x_m||^2 = b^2 ||g||^2 / |h|^2 <= d E_s for every transmitting device (spec eq. 8 form)."""
    scheme = _ota(snr_db=10.0)
    design = scheme.design(_context())
    energy_budget = D * 10.0 ** (10.0 / 10.0) / 1.0             # d * snr_edge / Lambda_edge, N0 = 1
    for t in range(50):
        state = _state(t)
        mask = state.channel_power >= design["threshold_power"]
        clipped, _ = clip_by_norm(_updates(t) * 30, 1.0)
        energy = inversion_energy(update_norm=torch.linalg.vector_norm(clipped, dim=1).double(),
                                  scale=design["amplitude"], channel_power=state.channel_power)
        assert bool((energy[mask] <= energy_budget * (1 + 1e-9)).all())


def test_ota_privacy_record_is_the_received_noise_over_the_sensitivity():
    scheme = _ota(snr_db=0.0)
    design = scheme.design(_context())
    _, record = scheme.aggregate(_updates(), _state(1), design)
    event = event_from_dict(record["privacy"][0])
    assert event.noise_multiplier == pytest.approx(1 / math.sqrt(D * 1.0 * 0.5))


def _digital(snr_db, rate=1.0, bits=8):
    return build_scheme("dig", {"scheme": "digital_quantized", "snr_db": snr_db, "bits": bits,
                                "rate_bps_hz": rate})


def test_digital_drops_exactly_the_devices_in_outage_and_charges_every_slot():
    scheme = _digital(0.0, rate=1.0)
    design = scheme.design(_context())
    power = torch.tensor([0.5, 1.5, 0.9, 3.0, 1.0, 0.2, 2.0, 0.99], dtype=torch.float64)
    _, record = scheme.aggregate(_updates(), _state(1, power), design)
    assert record["participants"] == int((shannon_rate(power) >= 1.0).sum())
    assert record["latency_s"] == pytest.approx(N * (64 + D * 8) / 1e6)


def test_digital_without_outage_is_unbiased_for_the_weighted_mean():
    scheme = _digital(60.0, bits=2)
    design = scheme.design(_context())
    updates = _updates()
    weights = torch.arange(1, N + 1, dtype=torch.float32) / torch.arange(1, N + 1).sum()
    estimates = torch.stack([scheme.aggregate(updates, _state(t), design)[0] for t in range(600)])
    spread = estimates.std(dim=0) / math.sqrt(600)
    assert ((estimates.mean(dim=0) - weights @ updates).abs() <= 5 * spread + 1e-7).all()


def test_dp_fedavg_noise_and_unbiasedness():
    """McMahan et al. 2018: (sum of sampled clipped updates + N(0, (zC)^2)) / (qN)."""
    scheme = build_scheme("dp", {"scheme": "gaussian_dp", "noise_multiplier": 0.8,
                                 "clip_norm": 0.5, "sampling_rate": 0.5, "delta": 1e-5})
    updates = _updates() * 10
    clipped, _ = clip_by_norm(updates, 0.5)
    estimates = torch.stack([scheme.aggregate(updates, _state(t), {})[0] for t in range(800)])
    target = clipped.mean(dim=0)                  # E[sampled sum] / (qN) = mean of clipped
    spread = estimates.std(dim=0) / math.sqrt(800)
    assert ((estimates.mean(dim=0) - target).abs() <= 5 * spread).all()
    _, record = scheme.aggregate(updates, _state(1), {})
    accountant = RdpAccountant().compose(record["privacy"][0], 100)
    assert 0 < accountant.get_epsilon(1e-5) < math.inf
    assert record["privacy"][0]["kind"] == "subsampled_gaussian"


def test_unknown_scheme_names_the_allowed_ones():
    with pytest.raises(ValueError, match="unknown scheme 'nope'; allowed: ") as info:
        build_scheme("x", {"scheme": "nope"})
    assert all(kind in str(info.value) for kind in ("digital_quantized", "gaussian_dp",
                                                    "ideal_fedavg", "ota_truncated_inversion"))
