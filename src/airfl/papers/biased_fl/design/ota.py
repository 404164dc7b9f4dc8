"""OTA-FL design math of Biased FL (Ul Abrar, Michelusi, arXiv 2503.06078): pure numpy/scipy/cvxpy.

Paper sections: II-B (truncated channel inversion, eqs. 7-10), Lemma 1 (variance), Theorem 1
(optimality-error bound), IV-A (design problem (20), SCA surrogate (21), closed forms (22) and ZB).

Units are physical throughout the public API: Lambda_m (linear mean channel power gain), E_s in J
per channel use, N0 in W/Hz (= J), gamma and alpha in the units they get from these. The SCA
works internally in normalised variables (raw gamma, alpha ~ 1e-11...1e-9):

    s_m = gamma^NV_m,  a_ref = max_m s_m,  ct_m = s_m / a_ref,  gt_m = gamma_m / s_m in (0, 1],
    at = alpha / a_ref,  sig2t = d N0 / a_ref^2,

so that gamma_m^2 G^2/(d Lambda_m E_s) = gt_m^2/2 and alpha_m = a_ref ct_m gt_m exp(-gt_m^2/2).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from airfl.runtime.lazy import lazy_import
from airfl.optim import sca

cp = lazy_import("cvxpy")   # only design jobs solve; the others never load it

__all__ = [
    "DesignError",
    "ota_quantities",
    "zeta_ota",
    "psi",
    "bias_sum",
    "true_psi",
    "bound_terms",
    "design_nv",
    "design_zb",
    "design_sca",
    "normalisation",
    "lower_branch_root",
    "linearised_z",
    "surrogate_objective",
    "surrogate_feasible",
]

E_HALF = math.exp(-0.5)           # beta at gamma^NV, and max_x x exp(-x^2/2)
GT_MIN = 1e-6                     # (ours) Gt >= 1e-6 (normalised gamma lower bound)
A_MIN = 1e-9                      # (ours) A >= 1e-9
P_MIN = 1e-9                      # (ours) P >= 1e-9
STALL_TOL = 1e-6                  # relative Psi rise of a step at solver accuracy ('no_decrease'), not a failure
#: CLARABEL defaults are 1e-8; late SCA steps at +60 dB are ~1e-7 relative (see _sca_from).
DEFAULT_CLARABEL_OPTS = {"tol_feas": 1e-10, "tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10}


class DesignError(RuntimeError):
    """A design could not be computed (invalid input, solver failure); never silently replaced."""


# --------------------------------------------------------------------------------------------
# Closed-form quantities
# --------------------------------------------------------------------------------------------

def ota_quantities(gamma, lam, *, G, d, Es) -> dict:
    """c_m, beta_m, alpha_m, alpha, p_m of pre-scalers gamma (paper §II-B, eqs. 8-10)."""
    gamma = np.asarray(gamma, dtype=float)
    lam = np.asarray(lam, dtype=float)
    c = G ** 2 / (d * lam * Es)                        # c_m = G^2/(d Lambda_m E_s)
    beta = np.exp(-c * gamma ** 2)                     # P(|h| >= G gamma/sqrt(d E_s)) = exp(-c gamma^2)
    alpha_m = gamma * beta                             # paper §II-B: alpha_m = gamma_m exp(-gamma_m^2 c_m)
    alpha = float(alpha_m.sum())                       # paper §II-B: post-scaler alpha = sum_m alpha_m
    p = alpha_m / alpha                                # paper eq. 10: p_m = alpha_m / alpha
    return {"c": c, "beta": beta, "alpha_m": alpha_m, "alpha": alpha, "p": p}


def zeta_ota(p, beta, alpha, *, G, d, N0, sigma2=0.0) -> float:
    """Variance bound zeta^A of Lemma 1 (paper Lemma 1; gamma_m/alpha_m = 1/beta_m)."""
    p = np.asarray(p, dtype=float)
    beta = np.asarray(beta, dtype=float)
    transmission = np.sum(p ** 2 * G ** 2 * (1.0 / beta - 1.0))   # Lemma 1: sum p^2 G^2 (gamma/alpha_m - 1)
    minibatch = np.sum(p ** 2 * np.asarray(sigma2, dtype=float))   # Lemma 1: sum p^2 sigma^2
    noise = d * N0 / alpha ** 2                                    # Lemma 1: d N0 / alpha^2
    return float(transmission + minibatch + noise)


def bias_sum(p) -> float:
    """sum_m (p_m - 1/N)^2, the bias factor of Theorem 1 (paper eq. 19/20a)."""
    p = np.asarray(p, dtype=float)
    return float(np.sum((p - 1.0 / p.size) ** 2))


def psi(zeta, p, eta, mu, kappa) -> float:
    """Design objective Psi = (eta/mu) zeta + (N kappa^2/mu^2) sum (p - 1/N)^2 (paper eqs. 20a/23a)."""
    n = np.asarray(p).size
    return float(eta / mu * zeta + n * kappa ** 2 / mu ** 2 * bias_sum(p))  # paper eq. 20a


def bound_terms(p, zeta, eta, mu, kappa, D, t) -> dict:
    """Theorem 1 terms at round t: init 2 D^2 (1-eta mu)^{2t} (the proof's D^2; the theorem's statement prints D), bias, var, total."""
    n = np.asarray(p).size
    init = 2.0 * D ** 2 * (1.0 - eta * mu) ** (2 * t)             # Thm 1 with the proof's D^2
    bias = 2.0 * n * kappa ** 2 / mu ** 2 * bias_sum(p)           # Thm 1: 2 (N kappa^2/mu^2) sum (1/N - p)^2
    var = 2.0 * eta / mu * zeta                                   # Thm 1: 2 (eta/mu) zeta
    return {"init": float(init), "bias": float(bias), "var": float(var),
            "total": float(init + bias + var)}


def true_psi(gamma, lam, *, G, d, Es, N0, eta, mu, kappa, sigma2=0.0) -> float:
    """Psi of pre-scalers gamma, with (alpha, p) recomputed from (20b) (last bullet)."""
    q = ota_quantities(gamma, lam, G=G, d=d, Es=Es)
    zeta = zeta_ota(q["p"], q["beta"], q["alpha"], G=G, d=d, N0=N0, sigma2=sigma2)
    return psi(zeta, q["p"], eta, mu, kappa)


# --------------------------------------------------------------------------------------------
# Normalised variables and the lower branch of (20b)
# --------------------------------------------------------------------------------------------

def normalisation(lam, *, G, d, Es, N0) -> dict:
    """s_m = gamma^NV_m, a_ref, ct_m = s_m/a_ref, sig2t = d N0/a_ref^2 (the normalisation of the module docstring)."""
    lam = np.asarray(lam, dtype=float)
    s = np.sqrt(d * lam * Es / (2.0 * G ** 2))          # paper eq. 22: gamma^NV = sqrt(d Lambda E_s/(2 G^2))
    aref = float(s.max())
    return {"s": s, "aref": aref, "ct": s / aref, "sig2t": d * N0 / aref ** 2}


def lower_branch_root(y, steps: int = 200) -> np.ndarray:
    """x in (0, 1] with x exp(-x^2/2) = y for y in (0, e^{-1/2}] (lower branch; bisection).

    x exp(-x^2/2) is increasing on (0, 1]; the returned upper end of the bracket satisfies
    x exp(-x^2/2) >= y (to machine precision: 200 halvings of (0, 1]).
    """
    y = np.minimum(np.asarray(y, dtype=float), E_HALF)
    lo, hi = np.zeros_like(y), np.ones_like(y)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        below = mid * np.exp(-mid ** 2 / 2.0) < y      # normalised (20b): gt exp(-gt^2/2) = alpha p/(a_ref ct)
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return hi


def _design_from_gt(gt, norm) -> dict:
    """Physical (gamma, alpha, p, beta) of normalised pre-scalers gt (post-processing)."""
    gt = np.asarray(gt, dtype=float)
    beta = np.exp(-gt ** 2 / 2.0)                       # gamma^2 G^2/(d Lambda E_s) = gt^2/2
    alpha_m = norm["aref"] * norm["ct"] * gt * beta     # alpha_m = a_ref ct gt exp(-gt^2/2)
    alpha = float(alpha_m.sum())
    return {"gamma": gt * norm["s"], "alpha": alpha, "p": alpha_m / alpha, "beta": beta}


# --------------------------------------------------------------------------------------------
# Closed-form designs NV and ZB (paper §IV-A 1-2)
# --------------------------------------------------------------------------------------------

def design_nv(lam, *, G, d, Es) -> dict:
    """Minimum noise variance: gamma_m = gamma^NV_m (paper eq. 22), beta = e^{-1/2}, p ∝ sqrt(Lambda)."""
    norm = normalisation(lam, G=G, d=d, Es=Es, N0=0.0)
    return _design_from_gt(np.ones_like(norm["s"]), norm)       # gt = 1 <=> gamma = gamma^NV (eq. 22)


def _zb_gt(norm) -> np.ndarray:
    """Normalised ZB pre-scalers: alpha_m(gamma_m) = min_m' alpha_{m',max} on the lower branch."""
    ct = norm["ct"]
    target = ct.min() * E_HALF / ct                     # paper §IV-A 2): alpha_m = min alpha_{m,max}
    return lower_branch_root(target)


def design_zb(lam, *, G, d, Es) -> dict:
    """Zero-bias minimum noise variance (paper §IV-A 2)): all alpha_m = alpha_0, alpha = N alpha_0."""
    norm = normalisation(lam, G=G, d=d, Es=Es, N0=0.0)
    return _design_from_gt(_zb_gt(norm), norm)


# --------------------------------------------------------------------------------------------
# SCA surrogate (paper eq. 21), in normalised variables
# --------------------------------------------------------------------------------------------

def linearised_z(gt, p, at, gt_bar, p_bar, ct) -> np.ndarray:
    """Smallest z allowed by (21b): ln z = ln(gt_bar p_bar ct) + gt/gt_bar + p/p_bar - 2 - ln at."""
    lin = np.log(gt_bar * p_bar * ct) + gt / gt_bar + p / p_bar - 2.0   # eq. 21b, ln gamma/ln p linearised
    return np.exp(lin - np.log(at))


def surrogate_objective(gt, p, z, at, p_bar, *, G, sig2t, eta, mu, kappa, sigma2=0.0) -> float:
    """The convex surrogate (21a) at a point (gt, p, z, at), linearised at p_bar (normalised units).

    Equals the true Psi at the iterate when z = p gt ct/at (tight), and upper-bounds it at every
    point that satisfies (21b) since -p^2 <= -p_bar(2p - p_bar).
    """
    p = np.asarray(p, dtype=float)
    n = p.size
    variance = (G ** 2 * np.sum(z) + sig2t / at ** 2 + np.sum(np.asarray(sigma2) * p ** 2)
                - G ** 2 * np.sum(p_bar * (2.0 * p - p_bar)))    # eq. 21a, -p^2 linearised at p_bar
    return float(eta / mu * variance + n * kappa ** 2 / mu ** 2 * np.sum((p - 1.0 / n) ** 2))


def surrogate_feasible(gt, p, z, at, gt_bar, p_bar, at_bar, ct, tol=1e-9) -> bool:
    """Whether (gt, p, z, at) satisfies the surrogate constraints (21b)-(21f) up to tol."""
    gt, p, z = (np.asarray(v, dtype=float) for v in (gt, p, z))
    b = np.log(gt_bar * p_bar) + np.log(ct) + gt / gt_bar + p / p_bar - 2.0 <= np.log(z) + np.log(at) + tol
    c = (np.log(at_bar * p_bar) + at / at_bar + p / p_bar - 2.0
         <= np.log(ct) + np.log(gt) - gt ** 2 / 2.0 + tol)                        # eq. 21c
    d_ = (gt <= 1.0 + tol) & (gt >= GT_MIN - tol)                                  # eq. 21d
    e = p / (ct * E_HALF) <= (2.0 * at_bar - at) / at_bar ** 2 + tol               # eq. 21e
    f = (p >= -tol) & (p <= 1.0 + tol) & (abs(p.sum() - 1.0) <= tol)               # eq. 21f
    return bool(np.all(b) and np.all(c) and np.all(d_) and np.all(e) and np.all(f) and at >= 0)


class _Surrogate:
    """The surrogate (21) as one DPP cvxpy problem; the iterate enters through Parameters.

    Normalisation (needed for the solver; re-done at every iteration as in the digital design): the
    objective is divided by the true Psi of the *current* iterate (not only of the start point),
    and the constant G^2 sum p_bar^2 of the linearised -p^2 is kept, so problem.value is exactly
    surrogate/Psi(iterate): 1 at the iterate, <= 1 at the optimum, at every SNR.
    """

    def __init__(self, n, ct, sig2t, G, eta, mu, kappa, sigma2):
        self.P, self.Gt, self.Z, self.A = (cp.Variable(n), cp.Variable(n), cp.Variable(n),
                                           cp.Variable())
        self.ln_b = cp.Parameter(n)                    # ln(gt_bar p_bar ct)
        self.ln_c = cp.Parameter(n)                    # ln(at_bar p_bar)
        self.inv_g = cp.Parameter(n, nonneg=True)      # 1/gt_bar
        self.inv_p = cp.Parameter(n, nonneg=True)      # 1/p_bar
        self.inv_a = cp.Parameter(nonneg=True)         # 1/at_bar
        self.inv_a2 = cp.Parameter(nonneg=True)        # 1/at_bar^2
        self.inv_j = cp.Parameter(nonneg=True)         # 1/Psi(iterate)
        self.lin = cp.Parameter(n)                     # -(eta/mu) G^2 2 p_bar / Psi(iterate)
        self.offset = cp.Parameter()                   # (eta/mu) G^2 sum p_bar^2 / Psi(iterate)
        P, Gt, Z, A = self.P, self.Gt, self.Z, self.A
        sigma2 = np.broadcast_to(np.asarray(sigma2, dtype=float), (n,))
        convex = (eta / mu * (G ** 2 * cp.sum(Z) + sig2t * cp.power(A, -2)
                              + cp.sum(cp.multiply(sigma2, cp.square(P))))
                  + n * kappa ** 2 / mu ** 2 * cp.sum_squares(P - 1.0 / n))     # eq. 21a, convex part
        objective = self.inv_j * convex + self.lin @ P + self.offset             # eq. 21a, -p^2 linearised
        constraints = [
            self.ln_b + cp.multiply(self.inv_g, Gt) + cp.multiply(self.inv_p, P) - 2
            <= cp.log(Z) + cp.log(A),                                            # eq. 21b
            self.ln_c + self.inv_a * A + cp.multiply(self.inv_p, P) - 2
            <= np.log(ct) + cp.log(Gt) - cp.square(Gt) / 2,                      # eq. 21c (normalised)
            Gt <= 1.0, Gt >= GT_MIN,                                             # eq. 21d
            cp.multiply(1.0 / (ct * E_HALF), P) <= 2 * self.inv_a - self.inv_a2 * A,  # eq. 21e
            A >= A_MIN,
            P >= P_MIN, P <= 1.0, cp.sum(P) == 1.0,                              # eq. 21f
        ]
        self.problem = cp.Problem(cp.Minimize(objective), constraints)
        self.ct, self.scale = ct, eta / mu * G ** 2

    def solve(self, gt_bar, p_bar, at_bar, psi_bar, solver, solver_opts):
        self.ln_b.value = np.log(gt_bar * p_bar * self.ct)
        self.ln_c.value = np.log(at_bar * p_bar)
        self.inv_g.value, self.inv_p.value = 1.0 / gt_bar, 1.0 / p_bar
        self.inv_a.value, self.inv_a2.value = 1.0 / at_bar, 1.0 / at_bar ** 2
        self.inv_j.value = 1.0 / psi_bar
        self.lin.value = -self.scale * 2.0 * p_bar / psi_bar
        self.offset.value = self.scale * float(np.sum(p_bar ** 2)) / psi_bar
        with warnings.catch_warnings():      # 'optimal_inaccurate' is handled and recorded by the caller
            warnings.simplefilter("ignore", UserWarning)
            self.problem.solve(solver=solver, **solver_opts)
        return self.problem.status, self.P.value, self.A.value


def _inputs_text(lam, G, d, Es, N0, eta, mu, kappa) -> str:
    lam_text = np.array2string(np.asarray(lam, dtype=float), precision=4, max_line_width=10 ** 6)
    return (f"inputs: Lambda={lam_text}, G={G}, d={d}, Es={Es}, N0={N0}, eta={eta}, mu={mu}, "
            f"kappa={kappa}")


def _validate(lam, G, d, Es, N0, eta, mu, kappa):
    lam = np.asarray(lam, dtype=float)
    checks = [(lam.ndim == 1 and lam.size >= 1, "Lambda must be a non-empty vector"),
              (np.all(np.isfinite(lam)) and np.all(lam > 0), "Lambda must be finite and > 0"),
              (G > 0 and d > 0 and Es > 0, "G, d, Es must be > 0"),
              (N0 >= 0 and eta > 0 and mu > 0 and kappa >= 0,
               "need N0 >= 0, eta > 0, mu > 0, kappa >= 0")]
    for ok, message in checks:
        if not ok:
            raise DesignError(f"OTA SCA design: status=invalid_input ({message}); "
                              + _inputs_text(lam, G, d, Es, N0, eta, mu, kappa))


def _sca_from(start_gt, surrogate, norm, consts, max_iter, tol, solver, solver_opts, describe):
    """One SCA run from normalised pre-scalers start_gt: the shared loop (airfl.optim.sca) with
    this design's step; returns (gt, history, statuses, stop_reason).

    Each step solves (21) at the iterate, then post-processes: p <- P/sum P and gt <- the
    lower-branch root of gt exp(-gt^2/2) = A p/ct, which restores (20b) with equality and, for an
    exact solve, never raises the true Psi (the surrogate is a tight majoriser). A solver error,
    a status other than 'optimal'/'optimal_inaccurate' or a non-finite point is a DesignError;
    an 'optimal_inaccurate' step that lowers the true Psi is taken (our acceptance rule, as for
    the digital SCA); a step that does not lower it by more than STALL_TOL (relative) is the SCA
    at solver accuracy (seen at +60 dB after ~500-1300 iterations, relative steps ~1e-7): stop
    with 'no_decrease' (converged), a larger rise is a DesignError. Never a silent fallback.
    """
    def propose(gt, k):
        cur = _design_from_gt(gt, norm)
        try:
            status, P, A = surrogate.solve(gt, cur["p"], cur["alpha"] / norm["aref"], consts(cur),
                                           solver, solver_opts)
        except (cp.error.SolverError, ValueError) as exc:
            raise DesignError(f"OTA SCA design: status=solver_error ({exc}) at iteration {k}, "
                              f"solver={solver}; {describe}") from exc
        usable = P is not None and A is not None and np.all(np.isfinite(P)) \
            and np.isfinite(A) and float(A) > 0
        if not usable:
            return status, None
        pn = np.maximum(P, 0.0) / np.maximum(P, 0.0).sum()        # restore sum p = 1
        return status, lower_branch_root(float(A) * pn / norm["ct"])   # (20b) with equality, lower branch

    run = sca.minimise(np.asarray(start_gt, dtype=float), propose=propose,
                       objective=lambda gt: consts(_design_from_gt(gt, norm)),
                       max_iter=max_iter, tol=tol, rise_tol=STALL_TOL, error=DesignError,
                       describe=lambda gt: f"OTA SCA design, solver={solver}; {describe}")
    return run.point, run.history, run.statuses, run.stop_reason


def design_sca(lam, *, G, d, Es, N0, eta, mu, kappa, sigma2=0.0, max_iter=200, tol=1e-9,
               solver="CLARABEL", solver_opts=None) -> dict:
    """Optimised OTA pre-scalers: SCA of paper eq. 21 from NV and from ZB.

    Multistart (ours; the paper only says 'a suitable low-complexity solution, e.g. NV or ZB'): run
    from both and keep the lower true Psi (ties -> NV). Stopping: relative change of the true Psi
    <= tol, capped at max_iter; 'converged' says which (measured: iterations grow from 3-7 at the
    literal SNR to ~60 at +30 dB and 600-1000 at +60 dB). solver_opts default to tighter CLARABEL
    tolerances (DEFAULT_CLARABEL_OPTS) because the late SCA steps are ~1e-7 relative.

    Returns gamma, alpha, p, beta (physical), psi (true Psi, eq. 20a with recomputed alpha, p),
    start ('nv' | 'zb'), iterations / converged / stop_reason / statuses of the kept start, and
    per start: psi_history (true Psi of every taken iterate, start point first), iterations_per_start,
    converged_per_start, stop_reason_per_start, statuses_per_start.
    """
    _validate(lam, G, d, Es, N0, eta, mu, kappa)
    lam = np.asarray(lam, dtype=float)
    norm = normalisation(lam, G=G, d=d, Es=Es, N0=N0)
    describe = _inputs_text(lam, G, d, Es, N0, eta, mu, kappa)
    if solver_opts is None:
        solver_opts = dict(DEFAULT_CLARABEL_OPTS) if solver == "CLARABEL" else {}

    def consts(design):
        zeta = zeta_ota(design["p"], design["beta"], design["alpha"], G=G, d=d, N0=N0, sigma2=sigma2)
        return psi(zeta, design["p"], eta, mu, kappa)

    surrogate = _Surrogate(lam.size, norm["ct"], norm["sig2t"], G, eta, mu, kappa, sigma2)
    runs = {name: _sca_from(start, surrogate, norm, consts, max_iter, tol, solver, solver_opts,
                            describe)
            for name, start in (("nv", np.ones(lam.size)), ("zb", _zb_gt(norm)))}
    best = min(runs, key=lambda name: runs[name][1][-1])
    gt, history, statuses, reason = runs[best]
    out = _design_from_gt(gt, norm)
    out.update({
        "psi": history[-1], "start": best, "iterations": len(statuses),
        "converged": reason in sca.CONVERGED, "stop_reason": reason, "statuses": statuses,
        "psi_history": {name: run[1] for name, run in runs.items()},
        "iterations_per_start": {name: len(run[2]) for name, run in runs.items()},
        "converged_per_start": {name: run[3] in sca.CONVERGED for name, run in runs.items()},
        "stop_reason_per_start": {name: run[3] for name, run in runs.items()},
        "statuses_per_start": {name: run[2] for name, run in runs.items()},
    })
    return out
