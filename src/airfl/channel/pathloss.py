"""Large-scale path loss and decibel/watt conversions.

Conventions (shared by every paper wing):

* A *path loss* ``PL`` is a positive number of dB; the matching *mean channel power gain* is
  ``Lambda = 10^(-PL/10)`` (``gain_from_db``), so ``E|h|^2 = Lambda`` under Rayleigh fading.
* Powers in dBm convert with ``P_W = 10^((P_dBm - 30)/10)``; a noise PSD in dBm/Hz converts the same
  way to W/Hz (= J).
* Every function accepts Python numbers or tensors (any shape, broadcast elementwise) and returns a
  float64 tensor.

Which paper uses which model:

* biased_fl: log-distance, 50 dB at 1 m, exponent 2.2: ``log_distance_db(r, 50, 2.2)``.
* dp_perk_airfl: free space at 2.4 GHz with c = 3e8 m/s, ``Lambda = (c/(4 pi f r))^2``:
  ``free_space_db(r, 2.4e9)``.
* lapa: ``PL = G_BS G_D (c/(4 pi f d))^3.76`` at 915 MHz, G_BS = 5 dBi (paper eq. 39):
  ``free_space_db(d, 915e6, exponent=3.76, antenna_gain_db=5.0)``.
* cdpb and ota_fd: no path loss (unit mean gain).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "SPEED_OF_LIGHT",
    "log_distance_db",
    "free_space_db",
    "db_to_linear",
    "linear_to_db",
    "dbm_to_watt",
    "watt_to_dbm",
    "gain_from_db",
]

#: Speed of light c = 3e8 m/s, as DP as a perk (Sec. V-A: c_l = 3e8) and LAPA (eq. 39) take it.
#: With it, free space at 1 km and 2.4 GHz is 100.046 dB: Lambda_min = 9.8946e-11 (DP as a perk).
SPEED_OF_LIGHT = 3.0e8


def _validated(x, name: str, *, low: float | None = None, strict: bool = False,
               dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Return ``x`` as a ``dtype`` tensor, raising ValueError if it is NaN or below ``low``.

    ``strict`` makes the bound exclusive (``x > low``). Shared by the channel modules.
    """
    t = torch.as_tensor(x, dtype=dtype)
    if torch.isnan(t).any():
        raise ValueError(f"{name} contains NaN")
    if low is not None:
        bad = (t <= low) if strict else (t < low)
        if bad.any():
            op = ">" if strict else ">="
            raise ValueError(f"{name} must be {op} {low}; got min {t.min().item():g}")
    return t


def log_distance_db(distance, *, pl0_db, exponent, d0: float = 1.0) -> torch.Tensor:
    """Log-distance path loss in dB: ``PL(d) = PL0 + 10 n log10(d / d0)``.

    ``pl0_db`` is the loss at the reference distance ``d0`` (metres), ``exponent`` the path-loss
    exponent ``n``. Distances must be positive (the model diverges at 0).
    """
    d = _validated(distance, "distance", low=0.0, strict=True)
    if d0 <= 0:
        raise ValueError(f"reference distance d0 must be > 0; got {d0}")
    pl0 = torch.as_tensor(pl0_db, dtype=torch.float64)
    n = _validated(exponent, "exponent", low=0.0)
    return pl0 + 10.0 * n * torch.log10(d / d0)  # PL = 50 + 10*2.2*log10(r/1 m)


def free_space_db(distance, *, carrier_hz, exponent: float = 2.0, antenna_gain_db: float = 0.0,
                  speed_of_light: float = SPEED_OF_LIGHT) -> torch.Tensor:
    """Free-space (Friis) path loss in dB, optionally with a general exponent and antenna gains.

    ``PL = 10 n log10(4 pi d f / c) - G_dB``; with ``n = 2`` and no gains this is Friis,
    ``20 log10(4 pi d f / c)``. ``antenna_gain_db`` is the sum of transmit and receive gains (dBi).
    """
    d = _validated(distance, "distance", low=0.0, strict=True)
    f = _validated(carrier_hz, "carrier_hz", low=0.0, strict=True)
    n = _validated(exponent, "exponent", low=0.0)
    if speed_of_light <= 0:
        raise ValueError(f"speed_of_light must be > 0; got {speed_of_light}")
    # Friis (DP as a perk, Sec. V-A): Lambda = (c/(4 pi f r))^2; LAPA eq. 39: G (c/(4 pi f d))^3.76
    return 10.0 * n * torch.log10(4.0 * math.pi * d * f / speed_of_light) - antenna_gain_db


def db_to_linear(db) -> torch.Tensor:
    """Power ratio from decibels: ``10^(dB/10)``."""
    return torch.pow(10.0, _validated(db, "db") / 10.0)


def linear_to_db(linear) -> torch.Tensor:
    """Decibels from a non-negative power ratio: ``10 log10(x)`` (``-inf`` at 0)."""
    return 10.0 * torch.log10(_validated(linear, "linear", low=0.0))


def dbm_to_watt(dbm) -> torch.Tensor:
    """Watts from dBm (also W/Hz from dBm/Hz): ``10^((dBm - 30)/10)``; 0 dBm = 1 mW."""
    return torch.pow(10.0, (_validated(dbm, "dbm") - 30.0) / 10.0)


def watt_to_dbm(watt) -> torch.Tensor:
    """dBm from non-negative watts: ``10 log10(W) + 30``."""
    return 10.0 * torch.log10(_validated(watt, "watt", low=0.0)) + 30.0


def gain_from_db(pl_db) -> torch.Tensor:
    """Mean channel power gain from a path loss in dB: ``Lambda = 10^(-PL/10)`` (biased_fl §2.3)."""
    return torch.pow(10.0, -_validated(pl_db, "pl_db") / 10.0)
