"""Digital biased-FL design (paper Sec. II-C, IV-B; spec §2.6, §4.1, §5.4-5.6, errata 2).

The PS picks, once before training and from statistical CSI only, per-device fading thresholds
rho_m, post-scalers nu_m and bit widths r_m minimising Psi (paper (23a)) under the average
round-latency budget (23b). The problem is solved by successive convex approximation (SCA) with
the paper's surrogate (24); three variants (spec §5.6, §6.2):

* ``opt``    -- fully optimised over (p, nu, r', R), multi-start from the default start and from
                the ``zb_opt`` solution (spec §5.5 "Initialization");
* ``zb_opt`` -- p_m = 1/N fixed (zero bias), Psi minimised over (nu, r', R) (spec §5.6-1);
* ``zb_qnv`` -- p_m = 1/N and only the quantization-noise term sum_m p_m/(nu_m (2^{r'_m+1}-1)^2)
                minimised, as ``cp.log_sum_exp`` of the log-epigraph variables (errata 2, §5.6-2).

Numerics (spec A11, errata 2):

* the surrogate objective is divided, at every SCA iteration, by the true relaxed objective of the
  current iterate (so the solver always sees O(1) values); the ``zb_qnv`` objective is a
  log-sum-exp and needs no scaling;
* the variables are shifted/scaled around the iterate (exact change of variables, see
  :class:`DigitalSurrogate`; omega enters as exp of a log-variable, spec §5.5): without this,
  CLARABEL fails at +30/+60 dB SNR, where beta -> 1 and (24e), (24a) cancel large terms;
* the convex problem is compiled once with cvxpy Parameters (DPP) and re-solved per iteration;
* after every solve the point is post-processed (spec A12): p <- p/sum p, beta = p nu (<= 1),
  R recomputed from rho by (23c) (the relaxed (24e) only lowers R). The post-processed point is
  accepted when the solver says ``optimal`` and the point is feasible, or -- errata 2 -- when it
  says ``optimal_inaccurate`` and the point is feasible *and* lowers the true relaxed objective.
  Any other status (infeasible, unbounded, solver error) raises :class:`DesignError`: there is no
  silent fallback to another solver or to a previous iterate. The one retry policy [A]: when
  CLARABEL raises instead of answering, the same problem is re-solved with CLARABEL under the
  settings of ``RETRY_SETTINGS`` and the design's ``statuses`` record "(retry k: settings)".
  With it, every paper setting we swept (G = 0.5, T_max = 0.25 s, eta on the spec §6.5 grid, +0/+30/
  +60 dB, quantile and random placements: 225 designs) solves; failures remain only far outside
  (e.g. -10 dB with G = 5, where p spans six decades) and raise.

"True relaxed objective": (23a) with beta = p nu and the continuous bit width r' + 1 in the
quantization term ((2^{r'+1} - 1)^2, paper Sec. IV-B); the reported ``psi`` is (23a) with the
integer r = floor(r') + 1 (spec A6), which can only be larger.

Choices the spec leaves open, made here:

* Stopping [A]: stop when the true relaxed objective falls by <= ``tol`` (relative) between
  accepted iterates, when an ``optimal`` solve does not lower it at all (MM cannot increase it:
  no progress is left at solver accuracy; reported as converged, stop_reason "no decrease"), when
  an ``optimal_inaccurate`` solve is rejected (errata 2; converged = False, iterate kept), or at
  ``max_iter``. ``tol`` defaults to 1e-9 as requested (spec §5.5 writes 1e-7 on the surrogate optimum).
* Rounding (spec A6): r = floor(r') + 1 applied to the solver's r'. When r' sits on its upper
  bound r_max - 1 the interior-point solver returns it as (r_max - 1) - O(1e-9), which floors to
  r = r_max - 1 (not r_max): this is what gives the errata's zb_qnv result r = 15 with latency
  0.234 s = 0.25 s (64 + 15 d)/(64 + 16 d). We keep the printed rule rather than snapping.
* Latency margin [A]: (24f) uses T_max (1 - 1e-6); a post-processed point must meet T_max exactly.
* Multi-start for ``opt`` (spec §5.5): default start and the ``zb_opt`` solution; the lower true
  Psi (integer r) wins.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from airfl.channel.digital import shannon_rate
from airfl.channel.quantization import payload_bits
from airfl.lazy import lazy_import

cp = lazy_import("cvxpy")   # only design jobs solve; the others never load it

# Shared with the OTA design: Psi of Theorem 1 (paper (20a)/(23a)) and the error type.
from airfl.papers.biased_fl.ota_design import DesignError, bias_sum, psi

__all__ = [
    "DesignError",
    "digital_quantities",
    "zeta_digital",
    "relaxed_objective",
    "relaxed_latency",
    "initial_point",
    "DigitalSurrogate",
    "design_sca",
    "design_zb_qnv",
    "HEADER_BITS",
]

LN2 = math.log(2.0)
HEADER_BITS = 64          # paper Sec. II-C: 64 bits carry ||g||_inf
P_MIN = 1e-9              # [A] lower bound on p_m in the surrogate (keeps ln p_bar finite), as in spec §5.2
RATE_MIN = 1e-9           # spec §5.5: R_m >= 1e-9 [A]
BETA_MAX = 1.0 - 1e-12    # spec §5.5 post-processing: beta clipped to <= 1 - 1e-12
T_MARGIN = 1e-6           # [A] the surrogate uses T_max (1 - 1e-6) so that solver tolerance never
                          # makes the post-processed point exceed T_max (which is checked exactly)
MM_RTOL = 1e-6            # an 'optimal' step may raise the true objective by solver noise
                          # (seen <= 4e-8), not by more
VARIANTS = ("opt", "zb_opt", "zb_qnv")
#: CLARABEL settings tried, in order, when a surrogate solve stops without a solution [A]
RETRY_SETTINGS = ({"max_step_fraction": 0.9}, {"static_regularization_constant": 1e-7},
                  {"equilibrate_enable": False})


# --------------------------------------------------------------------------- closed-form pieces


def _rate_from_snr(snr: np.ndarray) -> np.ndarray:
    return shannon_rate(torch.as_tensor(snr, dtype=torch.float64)).numpy()


def digital_quantities(rho, nu, r, lam, Es: float, N0: float, d: int, B: float) -> dict:
    """beta, p, R, L and the expected round latency of a design (rho, nu, r) (spec §2.6).

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


def zeta_digital(p, beta, r, G: float, d: int, sigma2=0.0) -> float:
    """Lemma 2 (paper (16), spec §4.1): transmission + mini-batch + quantization variance.

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


def _make_setup(lam, G, d, Es, N0, B, eta, mu, kappa, T_max, r_max, sigma2) -> _Setup:
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
                  rp_max=float(r_max - 1))  # spec A6: r' in [0, r_max - 1], r = floor(r') + 1


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
    ``zb_qnv``: the quantization-noise objective sum_m p_m / (nu_m (2^{r'_m+1} - 1)^2) (spec §5.6-2).
    """
    p, nu, rp = (np.asarray(a, dtype=np.float64) for a in (p, nu, rp))
    if variant == "zb_qnv":
        return float(np.sum(p / (nu * (2.0 ** (rp + 1.0) - 1.0) ** 2)))  # paper Sec. IV-B variant 2
    zeta = zeta_digital(p, p * nu, rp + 1.0, setup.G, setup.d, setup.sigma2)
    return psi(zeta, p, setup.eta, setup.mu, setup.kappa)  # paper (23a), relaxed r = r' + 1


def _true_psi_relaxed(setup: _Setup, p, nu, rp) -> float:
    return relaxed_objective(setup, p, nu, rp, "opt")


def initial_point(setup: _Setup, fraction: float = 0.9):
    """Default SCA start (spec §5.5 "Initialization" [A]): p = 1/N, r' = 0 (r = 1), a common beta.

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


# --------------------------------------------------------------------------- the surrogate (24)


class DigitalSurrogate:
    """Paper eq. (24) as a DPP cvxpy problem; ``update(p_bar, nu_bar, rp_bar)`` moves the iterate.

    For p fixed to 1/N (zero-bias variants) the linearisations of ln p and 1/p in (24b)-(24e),
    (24g) are exact, which gives spec §5.6-1's exact constraints (z nu >= 1/N, nu <= N).

    Variables are shifted / scaled around the iterate -- an exact change of variables, the convex
    problem is the same -- because at high SNR (+60 dB) the raw form asks the solver to cancel
    terms of size snr ~ 1e6 in (24e) and G^2 sum z ~ 1e4 Psi in (24a), and CLARABEL then fails:

    * ``Pr`` = p/p_bar - 1 (absent for zero bias), ``X`` = nu/nu_bar - 1, ``Zr`` = z/z_bar - 1 with
      z_bar = p_bar/nu_bar, ``W`` = ln(omega/omega_bar) with omega_bar = z_bar/(2^{r'_bar+1} - 1)^2
      (the values that make (24b), (24c) tight at the iterate), ``Rp`` = r', ``Rr`` = R/R_bar with
      R_bar the consistent rate (23c) at the iterate, ``Tt`` = t/T_max (the solver's absolute
      tolerances would otherwise be ppm-relative errors in t ~ 1e-4 s and break (23b)).
    """

    def __init__(self, setup: _Setup, variant: str):
        if variant not in VARIANTS:
            raise DesignError(f"unknown digital design variant {variant!r}; allowed: {VARIANTS}")
        self.setup, self.variant = setup, variant
        n = setup.n
        self.zero_bias = variant != "opt"
        self.Pr = None if self.zero_bias else cp.Variable(n, name="p_rel")
        self.X = cp.Variable(n, name="nu_rel")
        self.Rp = cp.Variable(n, name="r_prime")
        self.Rr = cp.Variable(n, name="rate_rel")     # R / R_bar
        self.Zr = cp.Variable(n, name="z_rel")
        self.W = cp.Variable(n, name="log_omega_rel")   # ln omega - ln omega_bar
        self.Tt = cp.Variable(n, name="t_rel")        # t / T_max
        par = {k: cp.Parameter(n, name=k) for k in
               ("ln_p", "ln_nu", "ln_z", "ln_w", "d_c", "r_slope", "e_c", "x_max", "x_p", "r_min",
                "pr_min", "pr_max", "c_p")}
        par["r_ln2"] = cp.Parameter(n, nonneg=True, name="r_ln2")
        par.update({k: cp.Parameter(n, nonneg=True, name=k) for k in
                    ("p_bar", "e_x", "e_p", "c_z", "c_w", "q_b", "q_s")})
        par["p_sum_gap"] = cp.Parameter(name="p_sum_gap")
        self.par = par
        rel_p = np.zeros(n) if self.zero_bias else self.Pr     # (p - p_bar)/p_bar
        lnp_lin = par["ln_p"] + rel_p                           # tangent of ln p at p_bar, (24b)-(24d)
        ln_nu = par["ln_nu"] + cp.log(1 + self.X)               # ln nu
        quant_log = 2 * ((self.Rp + 1) * LN2 + cp.log(1 - cp.exp(-(self.Rp + 1) * LN2)))  # 2 ln(2^{r'+1} - 1)
        cons = [
            lnp_lin <= par["ln_z"] + cp.log(1 + self.Zr) + ln_nu,                         # (24b)
            lnp_lin <= par["ln_w"] + self.W + ln_nu + quant_log,                           # (24c)
            par["d_c"] + self.X + cp.multiply(par["r_slope"], self.Rp) + lnp_lin
            <= cp.log(self.Tt) + cp.log(self.Rr),                  # (24d); ln B, ln T_max, ln R_bar in d_c
            cp.multiply(par["r_ln2"], self.Rr) <= cp.log(par["e_c"] - cp.multiply(par["e_x"], self.X)
                                    - cp.multiply(par["e_p"], rel_p)),                     # (24e)
            cp.sum(self.Tt) <= 1.0 - T_MARGIN,                                             # (24f) / T_max
            self.X <= par["x_max"] - cp.multiply(par["x_p"], rel_p),                       # (24g)
            self.Rp >= 0, self.Rp <= setup.rp_max, self.Rr >= par["r_min"],                # [A] spec §5.5
        ]
        if not self.zero_bias:
            cons += [self.Pr >= par["pr_min"], self.Pr <= par["pr_max"],
                     par["p_bar"] @ self.Pr == par["p_sum_gap"]]                           # (24h)
        if variant == "zb_qnv":
            objective = cp.log_sum_exp(par["ln_w"] + self.W)   # errata 2: ln sum_m omega_m, same minimiser
        else:
            objective = par["c_z"] @ self.Zr + par["c_w"] @ cp.exp(self.W)                # (24a) / J
            if not self.zero_bias:   # quadratic and linear parts in Pr; constants in _const_offset
                objective = (objective + par["c_p"] @ self.Pr
                             + cp.sum_squares(cp.multiply(par["q_b"], self.Pr))
                             + cp.sum_squares(cp.multiply(par["q_s"], self.Pr)))
        self.problem = cp.Problem(cp.Minimize(objective), cons)
        if not self.problem.is_dcp(dpp=True):  # pragma: no cover - structural guarantee
            raise DesignError("digital SCA surrogate is not DPP")
        self.scale = 1.0
        self._const_offset = 0.0
        self._bar = None

    def update(self, p_bar, nu_bar, rp_bar) -> None:
        """Linearise at the iterate (paper (24)) and scale the objective by its true relaxed value."""
        s = self.setup
        p_bar, nu_bar, rp_bar = (np.asarray(a, dtype=np.float64) for a in (p_bar, nu_bar, rp_bar))
        self._bar = (p_bar, nu_bar, rp_bar)
        par = self.par
        l_bar = HEADER_BITS + s.d + s.d * rp_bar                       # 64 + d + d r'_bar
        z_bar = p_bar / nu_bar
        w_bar = z_bar / (2.0 ** (rp_bar + 1.0) - 1.0) ** 2         # omega at the iterate (24c tight)
        par["ln_p"].value = np.log(p_bar)
        par["p_bar"].value = p_bar
        par["ln_nu"].value = np.log(nu_bar)
        par["ln_z"].value = np.log(z_bar)
        par["ln_w"].value = np.log(w_bar)
        par["r_slope"].value = s.d / l_bar
        # (24d): ln nu_bar + ln(64+d+d r'_bar) + (nu - nu_bar)/nu_bar + d (r' - r'_bar)/(64+d+d r'_bar) - ln B
        r_bar = _rate_of_beta(s, np.clip(p_bar * nu_bar, 1e-300, BETA_MAX))  # consistent R at the iterate
        par["d_c"].value = (np.log(nu_bar) + np.log(l_bar) - s.d * rp_bar / l_bar - math.log(s.B)
                            - math.log(s.T_max) - np.log(r_bar))       # t = T_max Tt, R = R_bar Rr
        par["r_ln2"].value = r_bar * LN2
        par["r_min"].value = RATE_MIN / r_bar
        # (24e): 1 - snr (ln nu_bar + nu/nu_bar + ln p_bar + p/p_bar - 2)
        #      = 1 - snr ln(nu_bar p_bar) - snr X - snr Pr
        par["e_c"].value = 1.0 - s.snr * np.log(nu_bar * p_bar)
        par["e_x"].value = s.snr
        par["e_p"].value = s.snr
        # (24g): nu <= (2 p_bar - p)/p_bar^2  <=>  X <= 1/(p_bar nu_bar) - 1 - Pr/(p_bar nu_bar)
        par["x_max"].value = 1.0 / (p_bar * nu_bar) - 1.0
        par["x_p"].value = 1.0 / (p_bar * nu_bar)
        # (24h): P_MIN <= p <= 1, sum p = 1  with p = p_bar (1 + Pr)
        par["pr_min"].value = P_MIN / p_bar - 1.0
        par["pr_max"].value = 1.0 / p_bar - 1.0
        par["p_sum_gap"].value = 1.0 - float(np.sum(p_bar))
        if self.variant == "zb_qnv":
            for k in ("c_z", "c_w", "c_p", "q_b", "q_s"):
                par[k].value = np.zeros(s.n)
            self.scale, self._const_offset = 1.0, 0.0
            return
        J = relaxed_objective(s, p_bar, nu_bar, rp_bar, self.variant)
        if not (np.isfinite(J) and J > 0):
            raise DesignError(f"true objective at the SCA iterate is {J!r}")
        self.scale = J                                         # errata 2: re-normalise every iteration
        a = s.eta / s.mu
        par["c_z"].value = a * s.G ** 2 * z_bar / J                    # G^2 sum z = G^2 sum z_bar (1 + Zr)
        par["c_w"].value = a * s.G ** 2 * s.d * w_bar / J              # G^2 d sum omega_bar exp(W)
        wb = s.n * s.kappa ** 2 / s.mu ** 2
        par["q_b"].value = math.sqrt(wb / J) * p_bar                   # bias term, quadratic part in Pr
        par["q_s"].value = np.sqrt(a * s.sigma2 / J) * p_bar           # sum sigma^2 p^2, quadratic part
        # linear part (p - p_bar = p_bar Pr) of -G^2 sum p_bar (2p - p_bar) + (N k^2/mu^2) sum (p - 1/N)^2
        # + sum sigma^2 p^2
        par["c_p"].value = p_bar * (-2.0 * a * s.G ** 2 * p_bar + 2.0 * wb * (p_bar - 1.0 / s.n)
                                    + 2.0 * a * s.sigma2 * p_bar) / J
        # constants of (24a)/J, kept out of the solver (Pr = 0 for zero bias: then this is all but z, omega)
        self._const_offset = (a * s.G ** 2 * (np.sum(z_bar) - np.sum(p_bar ** 2))
                              + wb * np.sum((p_bar - 1.0 / s.n) ** 2)
                              + a * np.sum(s.sigma2 * p_bar ** 2)) / J

    def surrogate_value(self, problem: cp.Problem | None = None) -> float:
        """Optimal value of the last solve (of ``problem``, a restriction of this surrogate, if
        given) in the units of the true objective (its logarithm for zb_qnv)."""
        value = (problem if problem is not None else self.problem).value
        return float(value + self._const_offset) * self.scale

    def solve(self, solver: str) -> tuple[str, str]:
        """Solve the surrogate; returns (cvxpy status or "solver_error: ...", record of the attempt).

        When CLARABEL stops without any answer (it raises, typically "InsufficientProgress" near
        a converged iterate at extreme SNR or with p spread over decades), the *same* problem is
        re-solved with the same solver and the settings of ``RETRY_SETTINGS`` in turn [A]; the
        record says which settings answered, so a retry is visible in the design's statuses.
        """
        attempts = [{}] + (list(RETRY_SETTINGS) if solver == "CLARABEL" else [])
        error = ""
        for k, settings in enumerate(attempts):
            try:
                with warnings.catch_warnings():    # the status is checked by the caller (errata 2 rule)
                    warnings.simplefilter("ignore", UserWarning)
                    self.problem.solve(solver=solver, **settings)
            except (cp.error.SolverError, cp.error.DCPError, ValueError, ArithmeticError) as exc:
                error = f"solver_error: {type(exc).__name__}: {exc}"
                continue
            status = self.problem.status
            return status, (status if k == 0 else f"{status} (retry {k}: {settings})")
        return error, error

    def point(self):
        """Post-processed (p, nu, r') of the last solve (spec §5.5 post-processing, A12)."""
        p_bar, nu_bar, _ = self._bar
        if self.zero_bias:
            p = p_bar.copy()
        else:
            p = np.clip(p_bar * (1.0 + np.asarray(self.Pr.value, dtype=np.float64)), P_MIN, 1.0)
            p = p / p.sum()                                            # p <- p / sum p
        nu = nu_bar * (1.0 + np.asarray(self.X.value, dtype=np.float64))
        rp = np.clip(np.asarray(self.Rp.value, dtype=np.float64), 0.0, self.setup.rp_max)
        beta = np.clip(p * nu, 1e-300, BETA_MAX)                       # beta = p nu <= 1 - 1e-12
        return p, beta / p, rp


# --------------------------------------------------------------------------- the SCA driver


def _run_sca(setup: _Setup, variant: str, start, max_iter: int, tol: float, solver: str) -> dict:
    """Majorisation-minimisation on (24) from ``start`` = (p, nu, r'); see the module docstring.

    ``iterations`` counts surrogate solves (the last one may be rejected); ``objective_history``
    and ``psi_history`` hold the start and every accepted iterate (relaxed r' + 1).
    """
    surrogate = DigitalSurrogate(setup, variant)
    p, nu, rp = (np.asarray(a, dtype=np.float64).copy() for a in start)
    if relaxed_latency(setup, p, nu, rp) > setup.T_max:
        raise DesignError(f"SCA start violates T_max: {relaxed_latency(setup, p, nu, rp):.6g} s")
    J = relaxed_objective(setup, p, nu, rp, variant)
    objective_history, psi_history, statuses = [J], [_true_psi_relaxed(setup, p, nu, rp)], []
    converged, stop_reason, iterations = False, "max_iter", 0
    for k in range(1, max_iter + 1):
        iterations = k
        surrogate.update(p, nu, rp)
        status, record = surrogate.solve(solver)
        statuses.append(record)
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            raise DesignError(
                f"digital SCA ({variant}) solve failed at iteration {k}: status {status!r}; "
                f"solver={solver}; iterate p={p.tolist()}, nu={nu.tolist()}, r'={rp.tolist()}; "
                f"inputs: Lambda={setup.lam.tolist()}, mean SNR={setup.snr.tolist()}, G={setup.G}, "
                f"d={setup.d}, B={setup.B}, eta={setup.eta}, mu={setup.mu}, kappa={setup.kappa}, "
                f"T_max={setup.T_max}")
        p_new, nu_new, rp_new = surrogate.point()
        feasible = relaxed_latency(setup, p_new, nu_new, rp_new) <= setup.T_max
        J_new = relaxed_objective(setup, p_new, nu_new, rp_new, variant)
        lowers = bool(np.isfinite(J_new) and J_new < J)
        if status == cp.OPTIMAL_INACCURATE and not (feasible and lowers):
            stop_reason = "optimal_inaccurate rejected (errata 2: infeasible or not lower)"
            break
        if not feasible:
            raise DesignError(
                f"digital SCA ({variant}) iteration {k}: solver status {status!r} but the "
                f"post-processed point violates T_max "
                f"({relaxed_latency(setup, p_new, nu_new, rp_new):.9g} s > {setup.T_max} s)")
        if not lowers:      # MM cannot increase the objective: no progress left (to solver accuracy)
            if J_new > J * (1.0 + MM_RTOL):
                raise DesignError(
                    f"digital SCA ({variant}) iteration {k}: an 'optimal' surrogate step raised the "
                    f"true objective from {J!r} to {J_new!r} (the surrogate must majorise it)")
            converged, stop_reason = True, "no decrease"
            break
        change = (J - J_new) / abs(J)
        p, nu, rp, J = p_new, nu_new, rp_new, J_new
        objective_history.append(J)
        psi_history.append(_true_psi_relaxed(setup, p, nu, rp))
        if change <= tol:
            converged, stop_reason = True, "relative change <= tol"
            break
    return {"p": p, "nu": nu, "r_prime": rp, "objective": J, "objective_history": objective_history,
            "psi_history": psi_history, "iterations": iterations, "converged": converged,
            "stop_reason": stop_reason, "statuses": statuses}


def _finalise(setup: _Setup, Es: float, N0: float, run: dict, variant: str, start: str) -> dict:
    """Integer bits r = floor(r') + 1 (spec A6), rho from beta, and the true Psi / latency."""
    p, nu, rp = run["p"], run["nu"], run["r_prime"]
    beta = p * nu
    rho = np.sqrt(-setup.lam * np.log(beta))                          # paper (23d): rho^2 = -Lambda ln beta
    r = (np.floor(rp) + 1).astype(np.int64)                            # spec A6: r = floor(r') + 1
    q = digital_quantities(rho, nu, r, setup.lam, Es, N0, setup.d, setup.B)
    zeta = zeta_digital(q["p"], q["beta"], r, setup.G, setup.d, setup.sigma2)
    return {
        "variant": variant, "start": start,
        "rho": rho, "nu": nu, "r": r, "r_prime": rp, "beta": q["beta"], "p": q["p"], "R": q["R"],
        "L": q["L"], "expected_latency_s": q["expected_latency_s"],
        "zeta": zeta, "bias": setup.n * setup.kappa ** 2 / setup.mu ** 2 * bias_sum(q["p"]),
        "psi": psi(zeta, q["p"], setup.eta, setup.mu, setup.kappa),
        "psi_relaxed": _true_psi_relaxed(setup, p, nu, rp),
        "psi_history": run["psi_history"], "objective_history": run["objective_history"],
        "iterations": run["iterations"], "converged": run["converged"],
        "stop_reason": run["stop_reason"], "statuses": run["statuses"],
    }


def design_sca(lam, G, d, Es, N0, B, eta, mu, kappa, T_max, r_max: int = 16, zero_bias: bool = False,
               max_iter: int = 200, tol: float = 1e-9, solver: str = "CLARABEL", sigma2=0.0) -> dict:
    """Optimised digital design by SCA on (24) (paper Sec. IV-B; spec §5.5).

    ``zero_bias=False``: the fully optimised design; two starts (spec §5.5 "Initialization" [A]):
    the default start of :func:`initial_point` and the optimised zero-bias solution; the one with
    the lower true Psi (integer r) is returned (``start`` says which; ``starts`` has both).
    ``zero_bias=True``: the optimised zero-bias design (spec §5.6-1) from the default start.
    ``tol`` is on the relative decrease of the true relaxed objective between accepted iterates.
    Returns numpy arrays rho, nu, r, beta, p, R, L and floats expected_latency_s, psi, plus the
    SCA trace (psi_history, iterations, converged, statuses, stop_reason).
    """
    setup = _make_setup(lam, G, d, Es, N0, B, eta, mu, kappa, T_max, r_max, sigma2)
    start = initial_point(setup)
    zb = _finalise(setup, Es, N0, _run_sca(setup, "zb_opt", start, max_iter, tol, solver),
                   "zb_opt", "default")
    if zero_bias:
        return zb
    candidates = [
        _finalise(setup, Es, N0, _run_sca(setup, "opt", start, max_iter, tol, solver), "opt", "default"),
        _finalise(setup, Es, N0, _run_sca(setup, "opt", (zb["p"], zb["nu"], zb["r_prime"]),
                                          max_iter, tol, solver), "opt", "zb_opt"),
    ]
    best = min(candidates, key=lambda c: c["psi"])
    best = dict(best)
    best["starts"] = {c["start"]: {"psi": c["psi"], "iterations": c["iterations"],
                                   "converged": c["converged"]} for c in candidates}
    return best


def design_zb_qnv(lam, G, d, Es, N0, B, eta, mu, kappa, T_max, r_max: int = 16, max_iter: int = 200,
                  tol: float = 1e-9, solver: str = "CLARABEL", sigma2=0.0) -> dict:
    """Zero-bias minimum quantization-noise-variance design (paper Sec. IV-B variant 2, spec §5.6-2).

    p = 1/N; the SCA minimises log sum_m p_m/(nu_m (2^{r'_m+1} - 1)^2) (errata 2) under the same
    constraints; ``psi`` is still the true Psi (23a) of the result (G, eta, mu, kappa only enter it).
    """
    setup = _make_setup(lam, G, d, Es, N0, B, eta, mu, kappa, T_max, r_max, sigma2)
    run = _run_sca(setup, "zb_qnv", initial_point(setup), max_iter, tol, solver)
    return _finalise(setup, Es, N0, run, "zb_qnv", "default")
