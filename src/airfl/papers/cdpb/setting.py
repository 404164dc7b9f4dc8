"""Validated parameters of the CDPB analytic core, and the names of the compared strategies.

Paper: Kim, Seo, Choi, "Privacy-Enhanced Over-the-Air Federated Learning via Client-Driven Power
Balancing". 

Units: normalised gradients (W = 1 by default, but W is kept in every formula),
channel statistics through the mean power gain ``h_bar = E[h]`` (the paper's App.-C sigma_k^2
equals h_bar / 2), RDP in nats. Every invalid value raises a ValueError that names the parameter
and says why it is invalid.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

#: The RDP bounds the core implements; only paper_thm1 is used for figures.
RDP_BOUNDS = ("paper_thm1", "wang_thm9", "no_amplification", "dimension_corrected")

#: strategy name -> (mechanism, portion beta of unreliable clients that send noise).
#: None: beta must be given. gamma_bar uses the idle mechanism by default (n optional).
STRATEGIES: dict[str, tuple[str, float | None]] = {
    "cdpb_i": ("cdpb", 0.0),
    "cdpb_n": ("cdpb", 1.0),
    "cdpb_mixed": ("cdpb", None),
    "gamma_bar": ("cdpb", 0.0),
    "hmin": ("hmin", 0.0),
    "is": ("is", 0.0),
    "noise_free": ("noise_free", 0.0),
}

#: Strategies whose beta may be chosen by the caller.
_FREE_BETA = ("cdpb_mixed", "gamma_bar")


def mechanism(strategy: str, beta: float | None = None) -> tuple[str, float]:
    """(mechanism, beta) of a strategy name.

    cdpb_i is beta = 0 and cdpb_n is beta = 1 by definition; cdpb_mixed needs beta;
    gamma_bar defaults to the idle mechanism but accepts beta ("n is an option").
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {sorted(STRATEGIES)}, got {strategy!r}")
    kind, fixed = STRATEGIES[strategy]
    if strategy in _FREE_BETA and beta is not None:
        return kind, check_beta(beta)
    if fixed is None:
        raise ValueError(f"beta is required for strategy {strategy!r} (the portion of unreliable "
                         "clients that send noise)")
    if beta is not None and float(beta) != fixed:
        raise ValueError(f"beta={beta} contradicts strategy {strategy!r}, which has beta={fixed}")
    return kind, fixed


def check_beta(beta: Any) -> float:
    """beta in [0, 1]: a Bernoulli probability."""
    value = _real("beta", beta)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"beta must lie in [0, 1] (a coin probability), got {beta}")
    return value


def check_tau(tau: Any) -> np.ndarray:
    """Round counts as an int array, each >= 1 (tau counts global rounds)."""
    arr = np.asarray(tau)
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        raise ValueError(f"tau must be positive integers (numbers of rounds), got {tau!r}")
    out = arr.astype(np.int64)
    if arr.dtype.kind == "f" and not np.array_equal(out, arr):
        raise ValueError(f"tau must be positive integers (numbers of rounds), got {tau!r}")
    if out.min() < 1:
        raise ValueError(f"tau must be >= 1 (a number of global rounds), got min {out.min()}")
    return out


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _positive(name: str, value: Any, why: str) -> float:
    out = _real(name, value)
    if not 0.0 < out < math.inf:
        raise ValueError(f"{name} must be finite and > 0 ({why}), got {value!r}")
    return out


def _integer(name: str, value: Any, low: int, why: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != int(value):
        raise ValueError(f"{name} must be an integer ({why}), got {value!r}")
    if int(value) < low:
        raise ValueError(f"{name} must be >= {low} ({why}), got {value!r}")
    return int(value)


@dataclass(frozen=True)
class CdpbSetting:
    """The analytic parameters (defaults: the paper's Appendix A; MISSING: our choice)."""

    K: int = 100                # total number of clients [PAPER §V]
    P: float = 1.0              # per-client power budget [MISSING -> 1]
    h_bar: float = 1.0          # mean channel power gain E[h] [MISSING -> 1]
    W: float = 1.0              # gradient-norm bound (normalised units)
    M: float = 1.0              # smoothness [MISSING -> 1]
    G: float = 0.25             # gradient second-moment bound [MISSING -> 0.25]
    mu: float = 1.0             # strong convexity [MISSING -> 1]
    alpha: int = 2              # Renyi order [MISSING -> 2]
    sigma_z2: float = 0.01      # receiver noise, total power over d entries [MISSING -> 0.01]
    lam1: float = 1.0           # utility weight of gamma [PAPER §V]
    lam2: float = 1.0e-5        # utility weight of eps [PAPER §V]
    gamma_bar: float = 0.01     # acceptable convergence error [PAPER §V]
    eps_bar: float = 100.0      # RDP budget, nats [PAPER §V]
    q_IS: float = 0.9           # IS baseline sampling probability [MISSING -> 0.9, Fig. 5]
    rdp_bound: str = "paper_thm1"
    model_dim: int | None = None  # d; only the dimension_corrected bound needs it

    def __post_init__(self) -> None:
        checked = {
            "K": _integer("K", self.K, 1, "a number of clients"),
            "P": _positive("P", self.P, "a transmit power budget"),
            "h_bar": _positive("h_bar", self.h_bar, "the mean of an exponential channel gain"),
            "W": _positive("W", self.W, "the clipping bound of the gradients"),
            "M": _positive("M", self.M, "a smoothness constant, assumption A1"),
            "G": _positive("G", self.G, "a gradient second-moment bound, assumption A3"),
            "mu": _positive("mu", self.mu, "a strong-convexity constant, assumption A2"),
            "alpha": _integer("alpha", self.alpha, 2, "Lemma 3 / Theorem 1 need an integer "
                              "Renyi order >= 2"),
            "gamma_bar": _positive("gamma_bar", self.gamma_bar, "an acceptable error, (25b)"),
            "eps_bar": _positive("eps_bar", self.eps_bar, "an RDP budget, (25c)"),
        }
        checked["sigma_z2"] = _real("sigma_z2", self.sigma_z2)
        if not 0.0 <= checked["sigma_z2"] < math.inf:
            raise ValueError(f"sigma_z2 must be finite and >= 0 (a noise power), got "
                             f"{self.sigma_z2!r}")
        for name in ("lam1", "lam2"):
            checked[name] = _real(name, getattr(self, name))
            if not 0.0 <= checked[name] < math.inf:
                raise ValueError(f"{name} must be finite and >= 0 (a utility weight, (24)), got "
                                 f"{getattr(self, name)!r}")
        if checked["lam1"] == 0.0 and checked["lam2"] == 0.0:
            raise ValueError("lam1 and lam2 are both 0: the utility (24) would be identically 0")
        checked["q_IS"] = _real("q_IS", self.q_IS)
        if not 0.0 < checked["q_IS"] <= 1.0:
            raise ValueError(f"q_IS must lie in (0, 1] (a sampling probability), got "
                             f"{self.q_IS!r}")
        if self.rdp_bound not in RDP_BOUNDS:
            raise ValueError(f"rdp_bound must be one of {RDP_BOUNDS}, got {self.rdp_bound!r}")
        if self.model_dim is not None:
            checked["model_dim"] = _integer("model_dim", self.model_dim, 1, "a parameter count")
        elif self.rdp_bound == "dimension_corrected":
            raise ValueError("model_dim is required by rdp_bound='dimension_corrected' (its "
                             "per-coordinate noise is sigma_q^2 / d)")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def rho_max(self) -> float:
        """Upper end of the feasible rho range, P / W^2 ((25e))."""
        return self.P / self.W**2

    def check_rho(self, rho: Any) -> np.ndarray:
        """rho as a float array, every entry in (0, P/W^2] ((25e); 1e-12 relative slack)."""
        arr = np.asarray(rho, dtype=np.float64)
        if arr.size == 0:
            raise ValueError("rho must not be empty")
        lo, hi = (float(arr), float(arr)) if arr.ndim == 0 else (arr.min(), arr.max())
        if not (lo > 0.0 and hi <= self.rho_max * (1.0 + 1e-12)):  # NaN fails both tests
            raise ValueError(f"rho must lie in (0, P/W^2] = (0, {self.rho_max:g}] ((25e): the "
                             f"threshold rho W^2/P may not exceed a unit gain), got "
                             f"[{lo:g}, {hi:g}]")
        return arr

    @classmethod
    def from_dict(cls, params: Mapping[str, Any]) -> "CdpbSetting":
        """The setting from a params mapping; keys that are not fields (sweeps, train, ...) are
        ignored, so the whole ``cdpb`` block of params.yaml can be passed."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in params.items() if k in names})

    def replace(self, **changes: Any) -> "CdpbSetting":
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
