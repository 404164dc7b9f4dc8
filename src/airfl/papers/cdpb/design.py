"""The two-stage design of CDPB (Algorithm 3): Stage I finds the feasible round set
T = {tau_gamma_min, ..., tau_eps_max} (Lemmas 1 and 2), Stage II picks rho for every tau in T
(numeric 1-D minimisation by default; Theorem 3 for CDPB-i or Algorithm 2 bisection for CDPB-n
as the paper's option) and the best (rho, tau) wins.

Paper: §IV (25)-(33), Algorithms 2-3, App. C-D.

Decisions (paper -> resolution, why):
* Lemma 2 (31) prints the eps formula again (tau on both sides, no eps_bar). Resolution:
  tau_eps_max = floor(eps_bar / eps_r(rho_eps)), rho_eps = P / W^2, because eps_r decreases in
  rho (App. D). A 2001-point grid checks that rho_max minimises eps_r; if another bound breaks
  the monotonicity the grid minimiser is used and reported as rho_eps.
* (28)'s a_n = 4 M^2 G - W^2 adds a power to a pure number; a_n = (4 M^2 G - W^2) / W^2 is used
  (equal at W = 1). (28) is approximate (first-order expansion); (29) is exact for
  CDPB-i when sigma_z^2 = 0. CDPB-mixed has no closed form: Phi is minimised numerically.
* Stage II: the paper claims T makes (25b)/(25c) hold automatically; they do not (the literal
  optimum overshoots eps_bar: 112.9 for CDPB-i). Default mode "constrained" enforces
  eps <= eps_bar and gamma <= gamma_bar at each tau; "literal" is the paper's.
* Theorem 3 misses the true minimiser of G (it lacks gamma's factor 6, is implicit in K_t and
  mixes units in b - 1): default solver "numeric" (grid + bounded Brent); Theorem 3 is logged
  per tau as a diagnostic and used by solver "paper".
* Algorithm 2: interval [rho_lo, P/W^2] instead of [0, P], the empty "then" branch returns,
  f(x) is dG/drho (central differences). Algorithm 3 updates G_opt and
  returns tau_opt properly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from airfl.runtime.lazy import lazy_import
from airfl.papers.cdpb.channel_stats import expected_reliable, expected_round, hmin_rho
from airfl.papers.cdpb.objective import Objective
from airfl.papers.cdpb.privacy import privacy_inputs
from airfl.papers.cdpb.setting import CdpbSetting, check_tau, mechanism

optimize = lazy_import("scipy.optimize")   # ~0.35 s; only design and figure jobs solve

GRID_POINTS = 2001
RHO_LO_FRACTION = 1e-6      # rho_lo = 1e-6 P/W^2
MODES = ("constrained", "literal")
SOLVERS = ("numeric", "paper")
RHO_GAMMA_METHODS = ("closed", "numeric")


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def rho_bounds(s: CdpbSetting) -> tuple[float, float]:
    """Search interval [1e-6 P/W^2, P/W^2] of every 1-D solve ((25e))."""
    return RHO_LO_FRACTION * s.rho_max, s.rho_max


def argmin_rho(f: Callable[[Any], Any], lo: float, hi: float,
               n_grid: int = GRID_POINTS) -> tuple[float, float]:
    """(rho, f(rho)) minimising a vectorised f on [lo, hi]: a grid scan (guards against a
    non-convex f, which the paper only asserts is convex) then bounded Brent in the bracket of
    the grid minimiser; the better of the two wins."""
    grid = np.linspace(lo, hi, n_grid)
    values = np.asarray(f(grid), dtype=np.float64)
    j = int(np.argmin(values))
    left, right = grid[max(j - 1, 0)], grid[min(j + 1, n_grid - 1)]
    res = optimize.minimize_scalar(lambda r: float(f(r)), bounds=(left, right), method="bounded",
                          options={"xatol": 1e-10 * hi})
    if res.fun <= values[j]:
        return float(res.x), float(res.fun)
    return float(grid[j]), float(values[j])


# ------------------------------------------------------------------------------ Stage I
def rho_gamma_closed(s: CdpbSetting, beta: float) -> float:
    """Lemma 1's rho_gamma with sigma^2 = h_bar / 2, clipped to (0, P/W^2].

    beta = 0 (CDPB-i), (29): (P h_bar/2)(sqrt(4 a_i + 1) - 1) / (a_i W^2), a_i = 4 M^2 G / W^2.
    beta = 1 (CDPB-n), (28): (P h_bar/2)(sqrt(4 a_n + 9) - 1) / (W^2 (a_n + 2)),
    a_n = (4 M^2 G - W^2) / W^2.
    """
    a_i = 4.0 * s.M**2 * s.G / s.W**2
    half = s.P * s.h_bar / 2.0
    if beta == 0.0:
        rho = half * (math.sqrt(4.0 * a_i + 1.0) - 1.0) / (a_i * s.W**2)  # (29)
    elif beta == 1.0:
        a_n = a_i - 1.0  # (28), a_n read as the dimensionless a_i - 1
        rho = half * (math.sqrt(4.0 * a_n + 9.0) - 1.0) / (s.W**2 * (a_n + 2.0))  # (28)
    else:
        raise ValueError(f"Lemma 1 has closed forms for beta 0 and 1 only, got beta={beta}")
    lo, hi = rho_bounds(s)
    return min(max(rho, lo), hi)


def rho_gamma(obj: Objective, method: str = "closed") -> tuple[float, str]:
    """(rho_gamma, method used): argmin of Phi (Lemma 1, problem P5 (51)). The closed forms
    exist for CDPB-i/n (and gamma_bar); other strategies fall back to the numeric argmin."""
    _choice("rho_gamma_method", method, RHO_GAMMA_METHODS)
    kind, beta = mechanism(obj.strategy, obj.beta)
    if method == "closed" and kind == "cdpb" and beta in (0.0, 1.0):
        return rho_gamma_closed(obj.setting, beta), "closed"
    return argmin_rho(obj.phi, *rho_bounds(obj.setting))[0], "numeric"


def tau_gamma_min(obj: Objective, rho_g: float) -> int:
    """Lemma 1 (27): ceil(6 Phi(rho_gamma) / (mu gamma_bar)), the fewest rounds reaching
    gamma <= gamma_bar (mu = 1 in the paper)."""
    s = obj.setting
    return int(math.ceil(6.0 * float(obj.phi(rho_g)) / (s.mu * s.gamma_bar)))  # (27)


def tau_eps_max(obj: Objective) -> tuple[int, float]:
    """(tau_eps_max, rho_eps): Lemma 2 with (31) fixed to floor(eps_bar / eps_r(rho_eps))."""
    s = obj.setting
    lo, hi = rho_bounds(s)
    rho_eps, eps_r = hi, float(obj.eps_round(hi))  # App. D: eps_r is smallest at P/W^2
    grid = np.linspace(lo, hi, GRID_POINTS)
    grid_eps = np.asarray(obj.eps_round(grid))
    j = int(np.argmin(grid_eps))
    if grid_eps[j] < eps_r * (1.0 - 1e-12):  # the monotonicity of App. D fails for this bound
        rho_eps, eps_r = float(grid[j]), float(grid_eps[j])
    if not 0.0 < eps_r < math.inf:
        raise ValueError(f"per-round RDP at rho_eps is {eps_r}: no finite tau_eps_max "
                         f"(sigma_z2={s.sigma_z2} may be 0 for a noise-free strategy)")
    return int(math.floor(s.eps_bar / eps_r)), rho_eps  # Lemma 2, (31) fixed


def _check_noise_constraint(obj: Objective) -> None:
    """(25d) sigma_q^2 <= 2 K P + sigma_z^2 never binds under this channel model (sigma_q^2 <=
    K P h_bar); kept as a check. It can only fail when h_bar > 2."""
    s = obj.setting
    _, sigma_q2 = expected_round(s, obj.strategy, np.linspace(*rho_bounds(s), 101), obj.beta)
    if np.max(sigma_q2) > 2.0 * s.K * s.P + s.sigma_z2:
        raise ValueError(f"h_bar={s.h_bar} makes the received-noise constraint (25d) bind; the "
                         "design reads it as non-binding (needs h_bar <= 2)")


@dataclass(frozen=True)
class StageOne:
    """Stage I's result: T = {tau_gamma_min, ..., tau_eps_max} (empty when size <= 0)."""

    rho_gamma: float
    rho_gamma_method: str
    phi_gamma: float
    tau_gamma_min: int
    rho_eps: float
    tau_eps_max: int

    @property
    def size(self) -> int:
        """Signed |T| = tau_eps_max - tau_gamma_min + 1 (Fig. 6)."""
        return self.tau_eps_max - self.tau_gamma_min + 1

    @property
    def taus(self) -> np.ndarray:
        return np.arange(max(self.tau_gamma_min, 1), self.tau_eps_max + 1)


def stage_one(obj: Objective, rho_gamma_method: str = "closed") -> StageOne:
    """Stage I (Algorithm 3 lines 1-8): Lemma 1 and Lemma 2."""
    _check_noise_constraint(obj)
    rho_g, used = rho_gamma(obj, rho_gamma_method)
    te, rho_e = tau_eps_max(obj)
    return StageOne(rho_g, used, float(obj.phi(rho_g)), tau_gamma_min(obj, rho_g), rho_e, te)


# ------------------------------------------------------------------------------ Stage II
def rho_numeric(obj: Objective, tau: int) -> float:
    """Stage II default: argmin over rho of G(., tau) (grid + bounded Brent)."""
    return argmin_rho(lambda r: obj.utility(r, tau), *rho_bounds(obj.setting))[0]


def rho_theorem3(obj: Objective, tau: int, max_iter: int = 200) -> float:
    """Theorem 3 (33) for CDPB-i, as printed (with 2 sigma^2 = h_bar), solved by fixed-point
    iteration in K_t(rho); NaN where it is undefined (lam2 = 0, no fixed point).

    rho = (P h_bar / W^2) sqrt(a / (W^2 (alpha-1) / (P h_bar) + b - 1)),
    a = lam1 / (lam2 tau^2 K_t W^2), b = 4 lam1 M^2 G / (lam2 tau^2 K_t). Diagnostic only.

    Decision (33) has no real value when its denominator is <= 0 (e.g. P h_bar > W^2 (alpha-1)
    and a small b): as the denominator falls to 0+ the root grows without bound and (25e) clips
    it to P/W^2, so the continuation there is the boundary P/W^2 (not NaN, which made Stage II
    drop those tau even in literal mode).
    """
    kind, beta = mechanism(obj.strategy, obj.beta)
    if kind != "cdpb" or beta != 0.0:
        raise ValueError(f"Theorem 3 is derived for CDPB-i only, got strategy {obj.strategy!r}")
    s = obj.setting
    lo, hi = rho_bounds(s)
    if s.lam2 == 0.0:
        return math.nan
    rho = hi
    for _ in range(max_iter):
        k_t = float(expected_reliable(s, rho))
        a = s.lam1 / (s.lam2 * tau**2 * k_t * s.W**2)  # Theorem 3's a
        b = 4.0 * s.lam1 * s.M**2 * s.G / (s.lam2 * tau**2 * k_t)  # Theorem 3's b
        den = s.W**2 * (s.alpha - 1) / (s.P * s.h_bar) + b - 1.0  # (33)'s denominator
        new = hi if den <= 0.0 else \
            min(max(s.P * s.h_bar / s.W**2 * math.sqrt(a / den), lo), hi)  # (33), den>0+: P/W^2
        if abs(new - rho) <= 1e-12 * hi:
            return new
        rho = new
    return math.nan


def utility_slope(obj: Objective, rho: float, tau: int) -> float:
    """dG/drho by central differences (one-sided at the ends of the rho interval)."""
    lo, hi = rho_bounds(obj.setting)
    step = 1e-6 * hi
    left, right = max(rho - step, lo), min(rho + step, hi)
    return float((obj.utility(right, tau) - obj.utility(left, tau)) / (right - left))


def rho_bisection(obj: Objective, tau: int, tol: float | None = None,
                  n_max: int = 200) -> float:
    """Algorithm 2, cleaned: bisection for the root of D(rho) = dG/drho on
    [rho_lo, P/W^2]; a boundary is returned when D does not change sign. tol = Psi."""
    lo, hi = rho_bounds(obj.setting)
    tol = 1e-9 * obj.setting.rho_max if tol is None else tol
    if utility_slope(obj, hi, tau) <= 0.0:
        return hi  # optimum on the upper boundary
    slope_lo = utility_slope(obj, lo, tau)
    if slope_lo >= 0.0:
        return lo
    mid = (lo + hi) / 2.0
    for _ in range(n_max):
        mid = (lo + hi) / 2.0
        slope_mid = utility_slope(obj, mid, tau)
        if slope_mid == 0.0 or (hi - lo) / 2.0 < tol:
            return mid  # Algorithm 2 line 5 (its empty branch returns)
        if math.copysign(1.0, slope_mid) == math.copysign(1.0, slope_lo):
            lo, slope_lo = mid, slope_mid
        else:
            hi = mid
    return mid


def rho_stage_two(obj: Objective, tau: int, solver: str = "numeric") -> float:
    """Unconstrained Stage II rho for one tau: numeric, or the paper's (Theorem 3 for CDPB-i,
    Algorithm 2 otherwise)."""
    if _choice("stage2_solver", solver, SOLVERS) == "numeric":
        return rho_numeric(obj, tau)
    kind, beta = mechanism(obj.strategy, obj.beta)
    if kind == "cdpb" and beta == 0.0:
        return rho_theorem3(obj, tau)
    return rho_bisection(obj, tau)


def _check_eps_decreasing(obj: Objective) -> None:
    """The constrained Stage II needs eps_r decreasing in rho (App. D; true for Theorem 1).
    Other bounds need not be (no_amplification grows with rho for CDPB-i): refuse them."""
    eps = np.asarray(obj.eps_round(np.linspace(*rho_bounds(obj.setting), GRID_POINTS)))
    if np.any(np.diff(eps) > 1e-12 * np.max(eps)):
        raise ValueError(f"stage2_mode='constrained' needs eps_r decreasing in rho (App. D); "
                         f"rdp_bound={obj.setting.rdp_bound!r} with strategy {obj.strategy!r} "
                         "is not: use stage2_mode='literal'")


def rho_eps_floor(obj: Objective, tau: int) -> float | None:
    """Smallest rho with eps(rho, tau) <= eps_bar (eps decreases in rho, checked by
    two_stage); None if even P/W^2 overshoots, 0 if every rho is private enough."""
    s = obj.setting
    lo, hi = rho_bounds(s)
    if float(obj.eps(hi, tau)) > s.eps_bar:
        return None
    if float(obj.eps(lo, tau)) <= s.eps_bar:
        return 0.0
    return optimize.brentq(lambda r: float(obj.eps(r, tau)) - s.eps_bar, lo, hi, xtol=1e-12)


def phi_argmin(obj: Objective) -> float:
    """Numeric argmin of Phi over [rho_lo, P/W^2] (rho_gamma of Lemma 1, any strategy)."""
    return argmin_rho(obj.phi, *rho_bounds(obj.setting))[0]


def gamma_interval(obj: Objective, tau: int, centre: float | None = None
                   ) -> tuple[float, float] | None:
    """[rho_a, rho_b] of the rho in [rho_lo, P/W^2] with gamma(rho, tau) <= gamma_bar ((25b)),
    None if empty. gamma = (6/tau) Phi(rho) (App. C) is U-shaped in rho (Lemma 1: Phi convex,
    minimum at rho_gamma = `centre`, tau-independent), so the set is one interval around it; its
    ends are bracketed roots, moved inward by twice the root tolerance so that they meet (25b)."""
    s = obj.setting
    lo, hi = rho_bounds(s)
    centre = phi_argmin(obj) if centre is None else centre
    excess = lambda r: float(obj.gamma(r, tau)) - s.gamma_bar  # noqa: E731  (<= 0: meets (25b))
    if excess(centre) > 0.0:
        return None
    tol = 1e-14 * hi
    left = lo if excess(lo) <= 0.0 else \
        min(optimize.brentq(excess, lo, centre, xtol=tol) + 2 * tol, centre)
    right = hi if excess(hi) <= 0.0 else \
        max(optimize.brentq(excess, centre, hi, xtol=tol) - 2 * tol, centre)
    return left, right


def feasible_interval(obj: Objective, tau: int, centre: float | None = None
                      ) -> tuple[float, float] | None:
    """The rho meeting both thresholds at tau ((25b) gamma <= gamma_bar, (25c) eps <= eps_bar):
    [max(rho_a, rho_eps_floor), rho_b], or None when empty (constrained mode)."""
    gamma_ok, floor = gamma_interval(obj, tau, centre), rho_eps_floor(obj, tau)
    if gamma_ok is None or floor is None:
        return None
    left, right = max(gamma_ok[0], floor), gamma_ok[1]
    return (left, right) if left <= right else None


def constrained_rho(obj: Objective, tau: int, rho_unc: float, centre: float | None = None
                    ) -> float:
    """Constrained Stage II at tau: the unconstrained minimiser projected onto the feasible
    interval (G is convex in rho, so the projection is the constrained minimiser); NaN when the
    interval is empty. Decision: max(rho_unc, rho_eps_floor) alone ignored the gamma-feasible
    ends, so a tau with a feasible rho could be rejected and a feasible problem declared
    infeasible."""
    s = obj.setting
    if math.isfinite(rho_unc) and float(obj.gamma(rho_unc, tau)) <= s.gamma_bar \
            and float(obj.eps(rho_unc, tau)) <= s.eps_bar:
        return rho_unc                            # inside the interval: its own projection
    interval = feasible_interval(obj, tau, centre)
    if interval is None:
        return math.nan
    return min(max(rho_unc, interval[0]), interval[1])


# ------------------------------------------------------------------------------ Algorithm 3
def _jsonable(value: Any) -> Any:
    """Plain JSON types: tuples/arrays -> lists, numpy scalars -> Python, NaN/inf -> None."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


@dataclass(frozen=True)
class CdpbDesign:
    """The design artifact of one strategy: (rho_opt, tau_opt), T and the per-tau table."""

    strategy: str
    beta: float
    mode: str
    solver: str
    feasible: bool
    reason: str
    rho_opt: float | None
    tau_opt: int | None
    G_opt: float | None
    gamma_opt: float | None
    eps_opt: float | None
    p_opt: float | None
    k_t_opt: float | None
    sigma_q2_opt: float | None
    stage_one: StageOne
    feasible_set: tuple[int, ...]
    per_tau: Mapping[str, tuple] = field(default_factory=dict)
    setting: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (NaN -> None) for the stored design artifact."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["stage_one"] = {**self.stage_one.__dict__, "size": self.stage_one.size}
        return _jsonable(out)


def _per_tau(obj: Objective, taus: np.ndarray, mode: str, solver: str) -> dict[str, np.ndarray]:
    """Stage II at every tau of T (Algorithm 3 lines 11-27)."""
    s = obj.setting
    cols: dict[str, list] = {k: [] for k in ("tau", "rho_unconstrained", "rho", "G", "gamma",
                                             "eps", "meets_gamma_bar", "meets_eps_bar",
                                             "eligible")}
    theorem3 = mechanism(obj.strategy, obj.beta) == ("cdpb", 0.0)
    centre = phi_argmin(obj) if mode == "constrained" else None
    if theorem3:
        cols.update(rho_theorem3=[], G_theorem3=[])
    for tau in taus:
        tau = int(tau)
        rho_unc = rho_stage_two(obj, tau, solver)
        rho = rho_unc
        if mode == "constrained":
            rho = constrained_rho(obj, tau, rho_unc, centre)
        ok = math.isfinite(rho)
        gamma = float(obj.gamma(rho, tau)) if ok else math.nan
        eps = float(obj.eps(rho, tau)) if ok else math.nan
        meets = (ok and gamma <= s.gamma_bar, ok and eps <= s.eps_bar * (1.0 + 1e-12))
        values = (tau, rho_unc, rho, s.lam1 * gamma + s.lam2 * eps, gamma, eps, *meets,
                  ok and (mode == "literal" or all(meets)))
        for key, value in zip(cols, values):
            cols[key].append(value)
        if theorem3:
            rho_t3 = rho_theorem3(obj, tau)
            cols["rho_theorem3"].append(rho_t3)
            cols["G_theorem3"].append(float(obj.utility(rho_t3, tau))
                                      if math.isfinite(rho_t3) else math.nan)
    return {k: np.asarray(v) for k, v in cols.items()}


def two_stage(obj: Objective, mode: str = "constrained", solver: str = "numeric",
              rho_gamma_method: str = "closed", on_infeasible: str = "raise") -> CdpbDesign:
    """Algorithm 3, cleaned: Stage I, then Stage II over T, best G wins.

    Infeasible problems (T empty, or no tau meets both thresholds in constrained mode) raise a
    ValueError naming gamma_bar / eps_bar (on_infeasible="raise", default), or return a design
    with feasible=False and rho_opt=None (on_infeasible="return", for figure sweeps).
    """
    _choice("stage2_mode", mode, MODES)
    _choice("stage2_solver", solver, SOLVERS)
    _choice("on_infeasible", on_infeasible, ("raise", "return"))
    s = obj.setting
    if mode == "constrained":
        _check_eps_decreasing(obj)
    st1 = stage_one(obj, rho_gamma_method)
    table = _per_tau(obj, st1.taus, mode, solver)
    reason = ""
    if st1.size <= 0:
        reason = (f"feasible set T is empty: tau_gamma_min={st1.tau_gamma_min} > tau_eps_max="
                  f"{st1.tau_eps_max}; gamma_bar={s.gamma_bar} is too small or eps_bar="
                  f"{s.eps_bar} too small for this setting (Lemmas 1-2)")
    elif not table["eligible"].any():
        reason = (f"no tau in T meets gamma <= gamma_bar={s.gamma_bar} and eps <= eps_bar="
                  f"{s.eps_bar} at one rho (constrained Stage II); raise gamma_bar or eps_bar")
    if reason and on_infeasible == "raise":
        raise ValueError(f"{obj.strategy}: {reason}")
    best: dict[str, Any] = dict.fromkeys(("rho_opt", "tau_opt", "G_opt", "gamma_opt", "eps_opt",
                                          "p_opt", "k_t_opt", "sigma_q2_opt"))
    if not reason:
        g = np.where(table["eligible"], table["G"], np.inf)
        j = int(np.argmin(g))  # Algorithm 3: the smallest G over T (first one on ties)
        rho, tau = float(table["rho"][j]), int(table["tau"][j])
        k_t, sigma_q2 = expected_round(s, obj.strategy, rho, obj.beta)
        p, _ = privacy_inputs(s, obj.strategy, rho, obj.beta)
        best.update(rho_opt=rho, tau_opt=tau, G_opt=float(table["G"][j]),
                    gamma_opt=float(table["gamma"][j]), eps_opt=float(table["eps"][j]),
                    p_opt=float(p), k_t_opt=float(k_t), sigma_q2_opt=float(sigma_q2))
    return CdpbDesign(strategy=obj.strategy, beta=obj.beta, mode=mode, solver=solver,
                      feasible=not reason, reason=reason, stage_one=st1,
                      feasible_set=tuple(int(t) for t in st1.taus),
                      per_tau={k: tuple(v.tolist()) for k, v in table.items()},
                      setting=s.to_dict(), **best)


def literal_rho(obj: Objective, rounds: int) -> float:
    """rho = argmin G(rho, R) for a configured number of rounds R: our fallback for
    training runs whose design (Algorithm 3) is infeasible."""
    return rho_numeric(obj, int(check_tau(rounds)))


def design_from_params(params: Mapping[str, Any], strategy: str = "cdpb_i",
                       beta: float | None = None, on_infeasible: str = "raise") -> CdpbDesign:
    """Algorithm 3 from a ``cdpb`` params block (keys stage2_mode,
    stage2_solver, stage1_rho_gamma, gamma_form: our readings of Stages I-II, §IV)."""
    if params.get("gamma_form", "approx") != "approx":
        raise ValueError(f"gamma_form={params['gamma_form']!r} is not supported by the design: "
                         "Lemma 1 and Stage II use the App.-C approximation")
    obj = Objective(CdpbSetting.from_dict(params), strategy, beta)
    return two_stage(obj, mode=params.get("stage2_mode", "constrained"),
                     solver=params.get("stage2_solver", "numeric"),
                     rho_gamma_method=params.get("stage1_rho_gamma", "closed"),
                     on_infeasible=on_infeasible)


def strategy_rho(params: Mapping[str, Any], strategy: str, beta: float | None = None
                 ) -> tuple[float, CdpbDesign | None]:
    """The rho each strategy trains with (Figs. 4 and 5): CDPB-i/-n/-mixed their
    own Algorithm-3 rho_opt (the literal per-R argmin is not used: an infeasible design raises);
    IS and Noise-Free CDPB-i's rho_opt; gamma-bar based CDPB-i's rho_gamma (Lemma 1); h_min
    P h_bar / (K W^2). Returns the design of the strategy (or of CDPB-i) beside it."""
    kind, _ = mechanism(strategy, beta)
    if strategy == "hmin":
        return hmin_rho(CdpbSetting.from_dict(params)), None
    if strategy == "gamma_bar":
        obj = Objective(CdpbSetting.from_dict(params), "gamma_bar")
        return rho_gamma(obj, params.get("stage1_rho_gamma", "closed"))[0], None
    own = strategy if kind == "cdpb" else "cdpb_i"
    design = design_from_params(params, own, beta if own == strategy else None)
    return float(design.rho_opt), design
