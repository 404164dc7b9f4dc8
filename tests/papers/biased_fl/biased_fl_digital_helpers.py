"""Shared fixtures of Biased FL's digital tests (not collected by pytest; the test files of
design/digital*.py and schemes/digital*.py import it by module name, since tests/ is not a
package): Sec. V's design inputs, and a small five-device channel for the schemes."""

from __future__ import annotations

import math

import numpy as np
import torch

from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.runtime.rng import RoundStreams

#: N0 = -161 dBm/Hz (Sec. V) and the MNIST softmax model's dimension.
N0 = 10.0 ** ((-161 - 30) / 10)
D_MODEL = 7850


def default_lam(n=10, radius=1200.0):
    """Sec. V's mean channel gains of n devices on a disc (our reading: quantile radii)."""
    r = radius * np.sqrt((np.arange(1, n + 1) - 0.5) / n)        # Sec. V disc, our quantile radii
    return 10.0 ** (-(50.0 + 22.0 * np.log10(r)) / 10.0)        # Sec. V log-distance gain


#: the design problem of Sec. IV-B at Sec. V's defaults (conftest's `designs` solves it once).
DESIGN_KW = dict(lam=default_lam(), G=0.5, d=D_MODEL, Es=1e-9, N0=N0, B=1e6, eta=0.05,
                 mu=0.01, kappa=0.01, T_max=0.25)

#: a small channel for the schemes: N devices, gradients of D entries.
N, D = 5, 6
LAM = torch.tensor([4e-11, 2e-11, 1e-11, 5e-12, 2e-12], dtype=torch.float64)
ES = 1e-9


def digital_stats(lam=LAM):
    """Channel statistics of mean gains `lam` at 1 MHz."""
    return ChannelStatistics(lam, float(lam.min()), 1e6, torch.arange(1, lam.numel() + 1) * 100.0,
                             energy_per_symbol=ES, noise_psd=N0)


def digital_state(t, seed=0, lam=LAM, power=None):
    """Round t: `power`, else an exponential draw from the round's own channel stream."""
    streams = RoundStreams(seed, "digital-test", 0, t)
    if power is None:
        power = lam * torch.empty(lam.numel(), dtype=torch.float64).exponential_(
            generator=streams("channel"))
    return RoundState(t, power, torch.full((lam.numel(),), 100), digital_stats(lam), streams)


def grads(n=N, d=D, seed=3):
    """n fixed Gaussian gradients of d entries."""
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def digital_context(n=N, d=D, lam=LAM, trial=0):
    """The design context of n devices over 10 rounds (100 samples each)."""
    return DesignContext(n, d, 10, torch.full((n,), 100), digital_stats(lam), trial=trial)


def mean_and_se(samples: torch.Tensor):
    """The mean over the first axis and its standard error."""
    return samples.mean(0), samples.std(0) / math.sqrt(samples.shape[0])
