"""Paper eq. (24): the convex surrogate of the digital design, one SCA step.

:class:`DigitalSurrogate` is compiled once as a DPP cvxpy problem, moved to each iterate by
``update``, solved (with the one retry policy of ``RETRY_SETTINGS``) and post-processed by
``point``; :mod:`airfl.papers.biased_fl.design.digital` drives the iterations.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from airfl.runtime.lazy import lazy_import
from airfl.papers.biased_fl.design.digital_model import (
    HEADER_BITS,
    VARIANTS,
    _rate_of_beta,
    _Setup,
    relaxed_objective,
)
from airfl.papers.biased_fl.design.ota import DesignError

cp = lazy_import("cvxpy")   # only design jobs solve; the others never load it

__all__ = ["DigitalSurrogate", "RETRY_SETTINGS"]

LN2 = math.log(2.0)
P_MIN = 1e-9              # (ours) lower bound on p_m in the surrogate (keeps ln p_bar finite)
RATE_MIN = 1e-9           # R_m >= 1e-9 (ours: keeps ln R finite)
BETA_MAX = 1.0 - 1e-12    # post-processing (ours): beta clipped to <= 1 - 1e-12
T_MARGIN = 1e-6           # (ours) the surrogate uses T_max (1 - 1e-6) so that solver tolerance never
                          # makes the post-processed point exceed T_max (which is checked exactly)
#: CLARABEL settings tried, in order, when a surrogate solve stops without a solution (ours)
RETRY_SETTINGS = ({"max_step_fraction": 0.9}, {"static_regularization_constant": 1e-7},
                  {"equilibrate_enable": False})

# --------------------------------------------------------------------------- the surrogate (24)


class DigitalSurrogate:
    """Paper eq. (24) as a DPP cvxpy problem; ``update(p_bar, nu_bar, rp_bar)`` moves the iterate.

    For p fixed to 1/N (zero-bias variants) the linearisations of ln p and 1/p in (24b)-(24e),
    (24g) are exact, which gives the zero-bias variants' exact constraints (z nu >= 1/N, nu <= N).

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
            self.Rp >= 0, self.Rp <= setup.rp_max, self.Rr >= par["r_min"],                # bounds of r' (paper: 0 <= r <= 16)
        ]
        if not self.zero_bias:
            cons += [self.Pr >= par["pr_min"], self.Pr <= par["pr_max"],
                     par["p_bar"] @ self.Pr == par["p_sum_gap"]]                           # (24h)
        if variant == "zb_qnv":
            objective = cp.log_sum_exp(par["ln_w"] + self.W)   # ln sum_m omega_m: same minimiser, stable
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
        self.scale = J                                         # re-normalise every iteration (O(1) objective)
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
        re-solved with the same solver and the settings of ``RETRY_SETTINGS`` in turn (ours); the
        record says which settings answered, so a retry is visible in the design's statuses.
        """
        attempts = [{}] + (list(RETRY_SETTINGS) if solver == "CLARABEL" else [])
        error = ""
        for k, settings in enumerate(attempts):
            try:
                with warnings.catch_warnings():    # the status is checked by the caller (acceptance rule)
                    warnings.simplefilter("ignore", UserWarning)
                    self.problem.solve(solver=solver, **settings)
            except (cp.error.SolverError, cp.error.DCPError, ValueError, ArithmeticError) as exc:
                error = f"solver_error: {type(exc).__name__}: {exc}"
                continue
            status = self.problem.status
            return status, (status if k == 0 else f"{status} (retry {k}: {settings})")
        return error, error

    def point(self):
        """Post-processed (p, nu, r') of the last solve (post-processing: p <- p/sum p, beta = p nu, R by (23c))."""
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
