"""The relaxed digital design problem of Biased FL (paper Sec. II-C, IV-B (23)).

Closed-form pieces of a digital design (rho, nu, r): participation beta, sampling weight p, rate R,
payload L, expected latency (paper (12), (13), (17), (23c)), the variance zeta^D of Lemma 2, and
the relaxed problem the SCA of :mod:`airfl.papers.biased_fl.design.digital` decreases: its data
(:class:`_Setup`), latency and true objective at a point (p, nu, r'), and the default start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from airfl.channel.digital import shannon_rate
from airfl.channel.quantization import payload_bits
from airfl.papers.biased_fl.design.ota import DesignError, psi

__all__ = ["HEADER_BITS", "VARIANTS", "digital_quantities", "initial_point", "relaxed_latency",
           "relaxed_objective", "zeta_digital"]

HEADER_BITS = 64          # paper Sec. II-C: 64 bits carry ||g||_inf
VARIANTS = ("opt", "zb_opt", "zb_qnv")

# --------------------------------------------------------------------------- closed-form pieces


def _rate_from_snr(snr: np.ndarray) -> np.ndarray:
    return shannon_rate(torch.as_tensor(snr, dtype=torch.float64)).numpy()


def digital_quantities(rho, nu, r, lam, *, Es: float, N0: float, d: int, B: float) -> dict:
    """beta, p, R, L and the expected round latency of a design (rho, nu, r).

    rho, nu, lam: [N] floats (thresholds on |h|, post-scalers, mean channel gains Lambda_m);
    r: [N] integer bit widths. Returns numpy arrays and a float ``expected_latency_s``.
    """
    rho = np.asarray(rho, dtype=np.float64)
    nu = np.asarray(nu, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    beta = np.exp(-rho ** 2 / lam)                      # paper (12): beta = P(|h| >= rho) = exp(-rho^2/Lambda)
    p = beta / nu                                       # paper (13): p_m = beta_m / nu_m
    R = _rate_from_snr(Es * rho ** 2 / N0)              # paper (23c): R_m = log2(1 + E_s rho^2 / N0)
    L = payload_bits(int(d), torch.as_tensor(np.asarray(r), dtype=torch.int64)).numpy()  # L = 64 + d r
    with np.errstate(divide="ignore"):
        latency = float(np.sum(beta * L / (B * R)))     # paper (17): sum_m beta_m L_m / (B R_m)
    return {"beta": beta, "p": p, "R": R, "L": L, "expected_latency_s": latency}


def zeta_digital(p, beta, r, *, G: float, d: int, sigma2=0.0) -> float:
    """Lemma 2 (paper (16)): transmission + mini-batch + quantization variance.

    zeta^D = sum p^2 G^2 (1/beta - 1) + sum p^2 sigma^2 + sum p^2 G^2 d / (beta (2^r - 1)^2).
    ``r`` may be non-integer (the SCA evaluates the relaxed width r' + 1).
    """
    p = np.asarray(p, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    transmission = np.sum(p ** 2 * G ** 2 * (1.0 / beta - 1.0))                 # Lemma 2, term 1
    minibatch = np.sum(p ** 2 * np.asarray(sigma2, dtype=np.float64))           # Lemma 2, term 2
    quantization = np.sum(p ** 2 * G ** 2 * d / (beta * (2.0 ** r - 1.0) ** 2))  # Lemma 2, term 3
    return float(transmission + minibatch + quantization)


# --------------------------------------------------------------------------- SCA problem data


@dataclass(frozen=True)
class _Setup:
    lam: np.ndarray
    snr: np.ndarray        # Lambda_m E_s / N0 (mean SNR)
    G: float
    d: int
    B: float
    eta: float
    mu: float
    kappa: float
    T_max: float
    sigma2: np.ndarray
    rp_max: float

    @property
    def n(self) -> int:
        return self.lam.size


def _make_setup(lam, *, G, d, Es, N0, B, eta, mu, kappa, T_max, r_max, sigma2) -> _Setup:
    lam = np.asarray(lam, dtype=np.float64).reshape(-1)
    inputs = dict(G=G, d=d, Es=Es, N0=N0, B=B, eta=eta, mu=mu, T_max=T_max)
    if lam.size < 1 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise DesignError(f"path gains must be finite and > 0; got {lam}")
    bad = {k: v for k, v in inputs.items() if not (v is not None and np.isfinite(v) and v > 0)}
    if bad or kappa is None or kappa < 0:
        raise DesignError(f"design constants must be > 0 (kappa >= 0); got {inputs}, kappa={kappa}")
    if not (isinstance(r_max, (int, np.integer)) and 1 <= r_max <= 52):
        raise DesignError(f"r_max must be an int in 1..52; got {r_max!r}")
    sig = np.broadcast_to(np.asarray(sigma2, dtype=np.float64), lam.shape).copy()
    return _Setup(lam=lam, snr=lam * Es / N0, G=float(G), d=int(d), B=float(B), eta=float(eta),
                  mu=float(mu), kappa=float(kappa), T_max=float(T_max), sigma2=sig,
                  rp_max=float(r_max - 1))  # r' in [0, r_max - 1], r = floor(r') + 1


def _rate_of_beta(setup: _Setup, beta: np.ndarray) -> np.ndarray:
    """R_m(beta_m) = log2(1 - (Lambda E_s/N0) ln beta): (23c) with rho^2 = -Lambda ln beta (23d)."""
    return _rate_from_snr(setup.snr * -np.log(beta))  # paper (23c)-(23d)


def relaxed_latency(setup: _Setup, p, nu, rp) -> float:
    """Expected latency with the relaxed payload 64 + d (r' + 1) (paper (23b) as used in (24d))."""
    beta = np.asarray(p) * np.asarray(nu)
    with np.errstate(divide="ignore"):
        return float(np.sum(beta * (HEADER_BITS + setup.d * (np.asarray(rp) + 1.0))
                            / (setup.B * _rate_of_beta(setup, beta))))  # paper (23b)


def relaxed_objective(setup: _Setup, p, nu, rp, variant: str) -> float:
    """The true objective the SCA of ``variant`` decreases, at a consistent point (p, nu, r').

    ``opt``/``zb_opt``: Psi of (23a) with beta = p nu and the continuous width r' + 1;
    ``zb_qnv``: the quantization-noise objective sum_m p_m / (nu_m (2^{r'_m+1} - 1)^2).
    """
    p, nu, rp = (np.asarray(a, dtype=np.float64) for a in (p, nu, rp))
    if variant == "zb_qnv":
        return float(np.sum(p / (nu * (2.0 ** (rp + 1.0) - 1.0) ** 2)))  # paper Sec. IV-B variant 2
    zeta = zeta_digital(p, p * nu, rp + 1.0, G=setup.G, d=setup.d, sigma2=setup.sigma2)
    return psi(zeta, p, setup.eta, setup.mu, setup.kappa)  # paper (23a), relaxed r = r' + 1


def _true_psi_relaxed(setup: _Setup, p, nu, rp) -> float:
    return relaxed_objective(setup, p, nu, rp, "opt")


def initial_point(setup: _Setup, fraction: float = 0.9):
    """Default SCA start (our low-complexity start, paper Sec. IV-B): p = 1/N, r' = 0 (r = 1),
    a common beta.

    beta is the largest value on {0.01, ..., 0.99} with sum_m beta (64 + d)/(B R_m(beta)) <=
    ``fraction`` T_max; nu = beta/p. Raises DesignError when even beta = 0.01 is too slow.
    """
    n = setup.n
    grid = np.round(np.arange(1, 100) / 100.0, 2)
    lat = np.array([np.sum(b * (HEADER_BITS + setup.d) / (setup.B * _rate_of_beta(setup, np.full(n, b))))
                    for b in grid])
    ok = np.flatnonzero(lat <= fraction * setup.T_max)
    if ok.size == 0:
        raise DesignError(f"no feasible SCA start: even beta = 0.01 with r = 1 needs {lat[0]:.4g} s "
                          f"> {fraction} * T_max = {fraction * setup.T_max:.4g} s "
                          f"(Lambda={setup.lam.tolist()}, mean SNR={setup.snr.tolist()})")
    beta = grid[ok[-1]]
    p = np.full(n, 1.0 / n)
    return p, beta / p, np.zeros(n)
