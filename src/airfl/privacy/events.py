"""Records of what a privacy mechanism did, kept apart from the accounting.

A scheme's aggregate step writes one of these per round (as ``event.to_dict()`` inside its
round record); the privacy stage reads them back with :func:`event_from_dict` and hands them
to :mod:`airfl.privacy.accountant`, so privacy is computed without re-simulating training.
This mirrors dp_accounting's split between ``DpEvent`` (what happened) and
``PrivacyAccountant`` (how to compose it).

All noise multipliers are ``std / L2-sensitivity``. ``inf`` means "no information about any
individual left the mechanism this round" (e.g. a client that did not transmit) and costs 0.
Infinite values are written as the string ``"inf"`` by ``to_dict`` so the dicts are strict JSON.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Union


def _encode(value: float) -> float | str:
    """Float for JSON: infinities become the string "inf" (strict JSON has no Infinity)."""
    return "inf" if math.isinf(value) else float(value)


def _as_float(name: str, value: Any) -> float:
    """``float(value)`` or a ValueError naming the field; accepts "inf" strings from JSON."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(out):
        raise ValueError(f"{name} must not be NaN")
    return out


def _noise_multiplier(value: Any) -> float:
    """Validated noise multiplier: > 0, with inf meaning no leak."""
    sigma = _as_float("noise_multiplier", value)
    if sigma <= 0:
        raise ValueError(f"noise_multiplier must be > 0 (inf means no leak), got {sigma}")
    return sigma


def _sampling_rate(value: Any) -> float:
    """Validated Poisson sampling rate q with 0 < q <= 1."""
    q = _as_float("sampling_rate", value)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling_rate must satisfy 0 < q <= 1, got {q}")
    return q


def _field(d: Mapping[str, Any], name: str) -> Any:
    """``d[name]`` or a ValueError naming the missing field and the event kind."""
    if name not in d:
        raise ValueError(f"event dict of kind {d.get('kind')!r} is missing field {name!r}")
    return d[name]


@dataclass(frozen=True)
class GaussianEvent:
    """Gaussian mechanism on the full data set: noise std = noise_multiplier * sensitivity."""

    noise_multiplier: float
    kind: ClassVar[str] = "gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", _noise_multiplier(self.noise_multiplier))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "noise_multiplier": _encode(self.noise_multiplier)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "GaussianEvent":
        return cls(noise_multiplier=_field(d, "noise_multiplier"))


@dataclass(frozen=True)
class SubsampledGaussianEvent:
    """Gaussian mechanism on a Poisson subsample (each record kept w.p. sampling_rate).

    Neighbouring relation: add/remove one record (the one dp_accounting's
    ``PoissonSampledDpEvent`` uses by default).
    """

    sampling_rate: float
    noise_multiplier: float
    kind: ClassVar[str] = "subsampled_gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_rate", _sampling_rate(self.sampling_rate))
        object.__setattr__(self, "noise_multiplier", _noise_multiplier(self.noise_multiplier))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sampling_rate": float(self.sampling_rate),
            "noise_multiplier": _encode(self.noise_multiplier),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SubsampledGaussianEvent":
        return cls(sampling_rate=_field(d, "sampling_rate"),
                   noise_multiplier=_field(d, "noise_multiplier"))


@dataclass(frozen=True)
class RdpCurveEvent:
    """A precomputed RDP guarantee: eps(alpha) = rdp[k] at alpha = orders[k].

    Used for mechanisms whose RDP a paper wing computes itself (e.g. an over-the-air bound).
    Orders must be strictly increasing and > 1; values >= 0 (inf allowed).
    """

    orders: tuple[float, ...]
    rdp: tuple[float, ...]
    kind: ClassVar[str] = "rdp_curve"

    def __post_init__(self) -> None:
        orders = tuple(_as_float("orders", a) for a in self.orders)
        rdp = tuple(_as_float("rdp", r) for r in self.rdp)
        if not orders or len(orders) != len(rdp):
            raise ValueError(f"rdp must have one value per order: {len(rdp)} values, "
                             f"{len(orders)} orders")
        if orders[0] <= 1 or any(b <= a for a, b in zip(orders, orders[1:])):
            raise ValueError("orders must be strictly increasing and > 1")
        if min(rdp) < 0:
            raise ValueError(f"rdp values must be >= 0, got min {min(rdp)}")
        object.__setattr__(self, "orders", orders)
        object.__setattr__(self, "rdp", rdp)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "orders": [_encode(a) for a in self.orders],
                "rdp": [_encode(r) for r in self.rdp]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RdpCurveEvent":
        return cls(orders=tuple(_field(d, "orders")), rdp=tuple(_field(d, "rdp")))


@dataclass(frozen=True)
class ComposedEvent:
    """Sequential composition: each ``events[k]`` happened ``counts[k]`` times (default 1)."""

    events: tuple["Event", ...]
    counts: tuple[int, ...] | None = None
    kind: ClassVar[str] = "composed"

    def __post_init__(self) -> None:
        events = tuple(self.events)
        counts = (1,) * len(events) if self.counts is None else tuple(self.counts)
        if not all(isinstance(e, EVENT_TYPES) for e in events):
            raise ValueError("events must all be privacy events from airfl.privacy.events")
        if len(counts) != len(events):
            raise ValueError(f"counts must have one entry per event: {len(counts)} != {len(events)}")
        object.__setattr__(self, "events", events)
        object.__setattr__(self, "counts", tuple(_count(c) for c in counts))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "events": [e.to_dict() for e in self.events],
                "counts": list(self.counts)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ComposedEvent":
        return cls(events=tuple(event_from_dict(e) for e in _field(d, "events")),
                   counts=d.get("counts"))


def _count(value: Any) -> int:
    """A composition count: a non-negative integer."""
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"counts must be non-negative integers, got {value!r}") from None
    if n < 0:
        raise ValueError(f"counts must be non-negative integers, got {n}")
    return n


Event = Union[GaussianEvent, SubsampledGaussianEvent, RdpCurveEvent, ComposedEvent]
EVENT_TYPES = (GaussianEvent, SubsampledGaussianEvent, RdpCurveEvent, ComposedEvent)
_BY_KIND = {cls.kind: cls for cls in EVENT_TYPES}


def event_from_dict(d: Mapping[str, Any]) -> Event:
    """Rebuild an event from ``event.to_dict()`` (or its JSON round trip)."""
    if not isinstance(d, Mapping) or "kind" not in d:
        raise ValueError(f"event dict needs a 'kind' key, got {d!r}")
    if d["kind"] not in _BY_KIND:
        raise ValueError(f"unknown event kind {d['kind']!r}; known: {sorted(_BY_KIND)}")
    return _BY_KIND[d["kind"]].from_dict(d)
