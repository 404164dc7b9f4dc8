"""The stateful RDP accountant, per-round epsilon curves, and noise calibration.

Events (:mod:`.events`) say what a mechanism did; :func:`event_rdp` turns any of them into
an RDP vector through a small table (no isinstance chain); the accountant only adds vectors
([M17] Prop. 1) and converts at the end (:mod:`.conversion`).

[M17]  I. Mironov, "Rényi Differential Privacy", CSF 2017, arXiv:1702.07476 (v3).
[vEH14] T. van Erven, P. Harremoës, "Rényi Divergence and Kullback-Leibler Divergence",
        IEEE Trans. Inf. Theory 60(7), 2014, Thm. 3 (Rényi divergence is nondecreasing in order).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .conversion import delta_from_rdp, delta_from_rdp_classic, eps_from_rdp, eps_from_rdp_classic
from .events import (ComposedEvent, Event, GaussianEvent, RdpCurveEvent, SubsampledGaussianEvent,
                     event_from_dict)
from .rdp import DEFAULT_ORDERS, as_orders, compose, rdp_gaussian, rdp_subsampled_gaussian

#: conversion name -> (eps_from_rdp-like, delta_from_rdp-like)
CONVERSIONS: dict[str, tuple[Callable, Callable]] = {
    "improved": (eps_from_rdp, delta_from_rdp),
    "classic": (eps_from_rdp_classic, delta_from_rdp_classic),
}


def _conversion(name: str) -> tuple[Callable, Callable]:
    if name not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {sorted(CONVERSIONS)}, got {name!r}")
    return CONVERSIONS[name]


def _rdp_of_curve(event: RdpCurveEvent, orders: np.ndarray) -> np.ndarray:
    """A stored RDP curve read at other orders, conservatively.

    At order a we take the stored value at the smallest stored order >= a (exact when the
    orders match). Valid because Rényi divergence is nondecreasing in the order ([vEH14]
    Thm. 3), so an eps(b)-RDP guarantee implies eps(b)-RDP at every a <= b. Orders above
    the largest stored one get inf.
    """
    stored = np.asarray(event.orders)
    values = np.append(np.asarray(event.rdp), np.inf)
    return values[np.searchsorted(stored, orders, side="left")]


def _rdp_of_composed(event: ComposedEvent, orders: np.ndarray) -> np.ndarray:
    """Sum of the parts' RDP vectors times their counts ([M17] Prop. 1)."""
    if not event.events:
        return np.zeros_like(orders)
    return compose([event_rdp(e, orders) for e in event.events], event.counts)


_RDP_OF: dict[type, Callable[[Any, np.ndarray], np.ndarray]] = {
    GaussianEvent: lambda e, orders: rdp_gaussian(e.noise_multiplier, orders),
    SubsampledGaussianEvent: lambda e, orders: rdp_subsampled_gaussian(
        e.sampling_rate, e.noise_multiplier, orders),
    RdpCurveEvent: _rdp_of_curve,
    ComposedEvent: _rdp_of_composed,
}


def _as_event(event: Event | Mapping[str, Any] | Sequence | None) -> Event:
    """An event from an event, its dict, a list of them (composed), or None (no leak)."""
    if event is None:
        return GaussianEvent(math.inf)
    if isinstance(event, Mapping):
        return event_from_dict(event)
    if isinstance(event, (list, tuple)):
        return ComposedEvent(tuple(_as_event(e) for e in event))
    if type(event) not in _RDP_OF:
        raise ValueError(f"not a privacy event: {event!r}")
    return event


def event_rdp(event: Event | Mapping[str, Any], orders: Iterable[float] = DEFAULT_ORDERS) -> np.ndarray:
    """RDP vector of one event (or its dict) at the given orders."""
    ev = _as_event(event)
    return _RDP_OF[type(ev)](ev, as_orders(orders))


class RdpAccountant:
    """Composes events into one RDP vector and converts it to (eps, delta).

    Heterogeneous rounds are composed one event at a time, or with ``count`` for repeats.
    """

    def __init__(self, orders: Iterable[float] = DEFAULT_ORDERS):
        self._orders = as_orders(orders)
        self._rdp = np.zeros_like(self._orders)

    @property
    def orders(self) -> np.ndarray:
        return self._orders.copy()

    @property
    def rdp(self) -> np.ndarray:
        """Current total RDP at each order (a copy)."""
        return self._rdp.copy()

    def compose(self, event: Event | Mapping[str, Any], count: int = 1) -> "RdpAccountant":
        """Add ``count`` runs of ``event`` ([M17] Prop. 1). Returns self for chaining."""
        n = operator.index(count)
        if n < 0:
            raise ValueError(f"count must be >= 0, got {n}")
        if n > 0:
            self._rdp = self._rdp + n * event_rdp(event, self._orders)
        return self

    def get_epsilon_and_order(self, delta: float, conversion: str = "improved") -> tuple[float, float]:
        """(eps, optimal order) at ``delta``; conversion "improved" (default) or "classic"."""
        return _conversion(conversion)[0](self._orders, self._rdp, delta)

    def get_epsilon(self, delta: float, conversion: str = "improved") -> float:
        return self.get_epsilon_and_order(delta, conversion)[0]

    def get_delta_and_order(self, eps: float, conversion: str = "improved") -> tuple[float, float]:
        """(delta, optimal order) at ``eps``; conversion "improved" (default) or "classic"."""
        return _conversion(conversion)[1](self._orders, self._rdp, eps)

    def get_delta(self, eps: float, conversion: str = "improved") -> float:
        return self.get_delta_and_order(eps, conversion)[0]


def cumulative_rdp(events_per_round: Sequence, orders: Iterable[float] = DEFAULT_ORDERS) -> np.ndarray:
    """``[T, K]`` total RDP after each round; identical rounds are computed once.

    Each round is an event, its dict, a list of them (all happened that round) or None.
    """
    alphas = as_orders(orders)
    cache: dict[Event, np.ndarray] = {}
    rows = []
    for entry in events_per_round:
        ev = _as_event(entry)
        if ev not in cache:
            cache[ev] = _RDP_OF[type(ev)](ev, alphas)
        rows.append(cache[ev])
    if not rows:
        return np.zeros((0, alphas.size))
    return np.cumsum(np.stack(rows), axis=0)  # [M17] Prop. 1, round by round


def epsilon_curve(events_per_round: Sequence, delta: float,
                  orders: Iterable[float] = DEFAULT_ORDERS,
                  conversion: str = "improved") -> np.ndarray:
    """eps after each round (cumulative), shape ``[T]``: the privacy stage's per-round loss."""
    alphas = as_orders(orders)
    total = cumulative_rdp(events_per_round, alphas)
    if total.shape[0] == 0:
        return np.zeros(0)
    return np.asarray(_conversion(conversion)[0](alphas, total, delta)[0], dtype=np.float64)


def _check_calibration(target_eps: float, delta: float, rounds: int, sampling_rate: float) -> None:
    if not target_eps > 0 or math.isinf(target_eps):
        raise ValueError(f"target_eps must be finite and > 0, got {target_eps}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must satisfy 0 < delta < 1, got {delta}")
    if operator.index(rounds) < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not 0 < sampling_rate <= 1:
        raise ValueError(f"sampling_rate must satisfy 0 < q <= 1, got {sampling_rate}")


def gaussian_noise_for_epsilon(target_eps: float, delta: float, rounds: int,
                               sampling_rate: float = 1.0,
                               orders: Iterable[float] = DEFAULT_ORDERS,
                               conversion: str = "improved", rtol: float = 1e-4) -> float:
    """Smallest noise multiplier (to relative ``rtol``) whose eps after ``rounds`` is <= target.

    Bisection in log sigma on a bracket [lo, hi] with eps(lo) > target >= eps(hi); returns
    ``hi``, so the answer never overshoots the target. eps is nonincreasing in sigma because
    every RDP order is.
    """
    _check_calibration(target_eps, delta, rounds, sampling_rate)
    alphas = as_orders(orders)
    to_eps = _conversion(conversion)[0]

    def eps_of(sigma: float) -> float:
        rdp = rounds * rdp_subsampled_gaussian(sampling_rate, sigma, alphas)
        return to_eps(alphas, rdp, delta)[0]

    lo, hi = _bracket(eps_of, target_eps)
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if eps_of(mid) <= target_eps else (mid, hi)
    return hi


def _bracket(eps_of: Callable[[float], float], target: float) -> tuple[float, float]:
    """(lo, hi) with eps_of(lo) > target >= eps_of(hi), by doubling / halving from 1."""
    hi = 1.0
    for _ in range(200):
        if eps_of(hi) <= target:
            break
        hi *= 2.0
    else:
        raise ValueError(f"no noise multiplier up to {hi:g} reaches eps {target}")
    lo = hi / 2.0
    for _ in range(200):
        if eps_of(lo) > target:
            return lo, hi
        hi, lo = lo, lo / 2.0
    raise ValueError(f"eps stays below {target} for every noise multiplier down to {lo:g}")
