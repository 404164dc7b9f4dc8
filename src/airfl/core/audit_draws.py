"""Draws of an audit statistic from a scheme's own aggregation code, batched.

The canary client's update is ``value * e_0`` (the worst case at the clip norm, in the first
coordinate) and every other client's update is 0, so the released update's first coordinate is
the projection on the canary direction, and every other coordinate carries noise only.

* :func:`linear_draws`, for mechanisms whose randomness, given the conditioning, is i.i.d. noise
  per coordinate on a linear release (the round's roles fixed): one call with the canary and one
  with a zero canary from the same generator state give the canary's signal exactly (their
  difference in coordinate 0), and the D - 1 noise-only coordinates of the call are D - 1
  independent draws of the noise: ``signal + out[1:]`` are D - 1 i.i.d. draws of the statistic
  for the price of two calls. This is what makes 1e5-1e6 draws take a fraction of a second.
* :func:`loop_draws`, for mechanisms whose randomness includes per-round roles (Poisson sampling,
  fading gains, coins: the amplification the paper claims): one call per draw, each with its own
  generators, so the draws are i.i.d. over the roles too (batching them over coordinates would
  share one role draw between many values and break the independence the bound needs).

The caller's release builds its generators from the call index it is given (e.g.
``RoundStreams(seed, "audit/<mechanism>/<world>", call, 0)``, :mod:`airfl.runtime.rng`), so a call
repeated with the same index replays the same draws.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from airfl.core.scheme import ChannelStatistics, RoundState
from airfl.runtime.rng import RoundStreams

#: Release = (canary row [D] or None for an absent canary, call index, D) -> released update [D].
Release = Callable[[torch.Tensor | None, int, int], torch.Tensor]


def canary_row(value: float, dim: int) -> torch.Tensor:
    """The canary's update value * e_0 in float64."""
    row = torch.zeros(dim, dtype=torch.float64)
    row[0] = value
    return row


def linear_draws(release: Release, value: float | None, draws: int, batch: int = 1 << 16
                 ) -> np.ndarray:
    """``draws`` i.i.d. values of the statistic (module docstring), ``batch`` coordinates a call.
    ``value`` None: the canary is absent (every coordinate of the release is a draw)."""
    out, done, call = [], 0, 0
    while done < draws:
        dim = min(batch, draws - done + 1) if value is not None else min(batch, draws - done)
        dim = max(dim, 2)
        if value is None:
            values = release(None, call, dim).double()
        else:
            with_canary = release(canary_row(value, dim), call, dim).double()
            zero = release(canary_row(0.0, dim), call, dim).double()
            signal = with_canary[0] - zero[0]          # exact: same generator state, linear release
            values = signal + with_canary[1:]          # noise-only coordinates (other clients 0)
        take = values[: draws - done]
        out.append(take.numpy())
        done += take.numel()
        call += 1
    return np.concatenate(out)


def linear_sampler(release: Release, present: float, absent: float
                   ) -> Callable[[str, int, int], np.ndarray]:
    """An audit's ``sample(world, draws, sub_seed)`` from a linear release
    (:func:`linear_draws`): the canary's value is ``present`` in the world "present" and
    ``absent`` otherwise; ``sub_seed`` moves the call indices (``sub_seed * 1_000_003 + call``)
    so that the two worlds, and the audit's repeats, never replay each other's draws."""
    def sample(world: str, draws: int, sub_seed: int) -> np.ndarray:
        value = present if world == "present" else absent
        return linear_draws(lambda row, call, width: release(row, sub_seed * 1_000_003 + call,
                                                             width), value, draws)
    return sample


def loop_draws(release_once: Callable[[float | None, int], float], value: float | None,
               draws: int) -> np.ndarray:
    """One call of the scheme's aggregation per draw; ``release_once(value, i)`` builds draw i's
    generators from its index (and the caller's seed) and returns coordinate 0 of the release."""
    return np.fromiter((release_once(value, i) for i in range(draws)), dtype=np.float64,
                       count=draws)


def audit_round_state(devices: int, seed: int, label: str, call: int,
                      gains: torch.Tensor | None = None, round_index: int = 1) -> RoundState:
    """A scheme's round state for an audit's release: unit path gains (`gains`: the round's
    |h|^2, default ones) and streams keyed by (seed, "audit/<label>", call, round_index), so a
    call index replays its draws (:func:`linear_draws`' pair of calls relies on it) and every
    round of a multi-round release has its own."""
    ones = torch.ones(devices, dtype=torch.float64)
    stats = ChannelStatistics(path_gain=ones, reference_gain=1.0, bandwidth_hz=1.0e6,
                              distances_m=ones.clone())
    return RoundState(round_index=round_index, channel_power=gains if gains is not None else
                      ones.clone(), data_sizes=torch.ones(devices), statistics=stats,
                      streams=RoundStreams(seed, f"audit/{label}", call, round_index))
