"""Shared fixtures of Biased FL's OTA scheme tests (not collected by pytest; the test files of
schemes/ota.py and schemes/ota_baselines.py import it by module name, since tests/ is not a
package): a five-device channel, its rounds, unit-norm gradients and a scheme by kind."""

from __future__ import annotations

import math

import torch

from airfl.channel.fading import rayleigh_power
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.pipeline.registry import build_scheme
from airfl.runtime.rng import RoundStreams

#: Sec. V's radio: E_s and N0 = -161 dBm/Hz; the step size and the objective's weights.
ES, N0 = 1e-9, 10.0 ** ((-161.0 - 30.0) / 10.0)
ETA, MU, KAPPA = 0.05, 0.01, 0.01

#: a small channel for the schemes: NS devices, gradients of DS entries bounded by G_S.
NS, DS = 5, 12
LAM_S = torch.tensor([2.0, 1.0, 0.5, 0.25, 0.1], dtype=torch.float64)
DIST_S = torch.tensor([100.0, 300.0, 600.0, 800.0, 950.0], dtype=torch.float64)
STATS = ChannelStatistics(LAM_S, reference_gain=0.1, bandwidth_hz=2e5, distances_m=DIST_S,
                          energy_per_symbol=0.5, noise_psd=1e-3)
G_S = 1.0


def ota_context(rounds=20, future=None):
    """The design context of the small channel (100 samples per device)."""
    return DesignContext(NS, DS, rounds, torch.full((NS,), 100), STATS, trial=0,
                         future_channel_power=future)


def ota_state(t, seed=0, stats=STATS):
    """Round t with a Rayleigh draw from the round's own channel stream."""
    streams = RoundStreams(seed, "biased_ota_test", 0, t)
    power = rayleigh_power(stats.path_gain, 1, streams("channel"))[0]
    return RoundState(t, power, torch.full((NS,), 100), stats, streams)


def unit_gradients(scale=1.0):
    """NS fixed gradients of norm scale * G_S."""
    g = torch.randn(NS, DS, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    return g / torch.linalg.vector_norm(g, dim=1, keepdim=True) * scale * G_S


def make_scheme(kind, **params):
    """The registered scheme `kind` with G = G_S and `params`."""
    return build_scheme(kind, {"scheme": kind, "G": G_S, **params})


def mean_estimate(scheme, design, updates, rounds):
    """The mean of `rounds` aggregates of `updates` and its standard error."""
    est = torch.stack([scheme.aggregate(updates, ota_state(t), design)[0]
                       for t in range(1, rounds + 1)])
    return est.mean(0), est.std(0) / math.sqrt(rounds)
