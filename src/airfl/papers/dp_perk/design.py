"""AirFL-DP's transceiver design: the norm allocation over rounds and the perk thresholds.

Paper: Sec. IV-B/C: (P~0'') (41), Prop. IV.3 (44)-(48), Cor. IV.1 (49), Remark IV.2 (51)-(52);
App. D (P3), (P3a'), (P3b'); the full-binding power P_full and the finite-D closed form are ours
(below).

Only the norms ``q_t = ||w^(t)||`` matter (Remark IV.1): ``w^(t)* = (q_t*/pi_t) w_0^(t)`` with
``pi_t = ||w_0^(t)||`` from (P1) (see :mod:`.beamforming`). Problem (41), with the objective's
index starting at t = 0 (our reading; from t = 1 q_0 would be free), is

    min_q sum_t q_t^2  s.t.  q_t >= pi_t,  sum_t 1/q_t^2 <= A.

Solvers: :func:`waterfill` (exact, sorted; the default), :func:`waterfill_bisection` ((48) by
bisection on mu as the paper does; returns the upper bracket so the budget is never exceeded)
and :func:`waterfill_cvxpy` (App. D's change of variables r_t = 1/q_t^2, rescaled by A).
All results are frozen dataclasses with ``to_dict()`` (stored design artifacts).

Decisions (paper, equation, why):

* Exactness of the two regimes that Fig. 6 tests bit for bit: where ``sum 1/pi^2 <= A`` the
  returned q is pi itself (44, case i); where every round is raised the level is
  ``sqrt(T/A)`` computed from T and A only, so it does not depend on P (our P_full, below).
* Floating point never breaks the budget: the water level is nudged up by ulps until
  ``sum 1/q^2 <= A`` holds in floating point.
* Perk window: ``P_thr = P A / sum_t pi_t^-2`` (= (51)-(52) with h_eff =
  gamma^2 sum pi^-2) and ``P_full = P A max_t pi_t^2 / T`` (all rounds raised, q
  independent of P: ours, from (44) case ii).
* Finite D (App. D): the constraint ``min{sum r_t, B r_{T-1}} <= A`` is a union
  of the two sets {sum r <= A} and {B r_{T-1} <= A}; its optimum is the better of the water-filling
  and ``r_t = 1/pi_t^2 (t < T-1), r_{T-1} = min(1/pi_{T-1}^2, A/B)`` (``solver="closed_form"``).
  ``solver="branches"`` follows the paper literally: (P3a') by cvxpy and (P3b') by our
  closed form ``r_{T-1} = min(1/pi^2, A/B, S_</(B-1))``; both give the same optimum (tested).
  Note: dropping the third term, S_</(B-1), does not break the privacy budget: it
  only breaks (P3b')'s own side condition ``B r_{T-1} <= sum r``, never the budget, because
  ``min{sum r, B r_{T-1}} <= B r_{T-1} <= A`` holds regardless.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

from airfl.runtime.lazy import lazy_import

cp = lazy_import("cvxpy")   # only the SCA/SDR/cvxpy solvers need it
import numpy as np

from .privacy import (ACCOUNTANTS, CONVENTIONS, NOISE_MODELS, PrivacyReport, accounting_sigma2,
                      budget_A, privacy_report)

__all__ = [
    "AirflDesign", "Allocation", "FiniteDomainAllocation", "allocate_finite_domain",
    "clip_threshold", "design_airfl_dp", "perk_threshold_power", "perk_window", "waterfill",
    "waterfill_bisection", "waterfill_cvxpy",
]


def _jsonable(value: Any) -> Any:
    """Floats, lists, dicts for strict JSON (infinities as "inf")."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _unjsonable(value: Any) -> Any:
    """The inverse of :func:`_jsonable`: "inf"/"-inf" back to infinities, lists kept."""
    if value in ("inf", "-inf"):
        return math.inf if value == "inf" else -math.inf
    if isinstance(value, list):
        return [_unjsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _unjsonable(v) for k, v in value.items()}
    return value


def _pi(pi: Any) -> np.ndarray:
    arr = np.asarray(pi.cpu() if hasattr(pi, "cpu") else pi, dtype=np.float64).reshape(-1)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError("pi must be a non-empty array of finite values > 0 (||w_0^(t)||)")
    return arr


def _budget(A: float) -> float:
    a = float(A)
    if not a > 0 or not math.isfinite(a):
        raise ValueError(f"A (the DP budget on sum 1/q^2) must be finite and > 0, got {A!r}")
    return a


def clip_threshold(dim: int, factor: float = 0.012) -> float:
    """``c = sqrt(factor d)`` (Sec. V-A: c = sqrt(0.012 d))."""
    if int(dim) < 1 or not factor > 0:
        raise ValueError(f"dim must be >= 1 and clip factor > 0, got {dim}, {factor}")
    return math.sqrt(factor * int(dim))


# ------------------------------------------------------------------------------------------
# Water-filling (44)-(48)
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Allocation:
    """Solution of (41): the norms q_t (as tuples, JSON-ready)."""

    q: tuple[float, ...]
    pi: tuple[float, ...]
    budget_A: float
    binding: bool                 # sum 1/pi^2 > A: the DP constraint is active
    water_level: float | None     # lambda = mu*^(1/4) (None where not binding)
    raised_rounds: int            # rounds with q_t > pi_t
    sum_inv_pi2: float
    sum_inv_q2: float
    solver: str

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    @property
    def objective(self) -> float:
        """sum_t q_t^2 (41)."""
        return float(np.sum(np.square(self.q)))


def _allocation(q: np.ndarray, pi: np.ndarray, A: float, level: float | None,
                solver: str) -> Allocation:
    inv = float(np.sum(1.0 / pi ** 2))
    return Allocation(tuple(map(float, q)), tuple(map(float, pi)), A, _spend(pi, 0.0) > A, level,
                      int(np.sum(q > pi)), inv, float(np.sum(1.0 / q ** 2)), solver)


def _spend(pi: np.ndarray, level: float) -> float:
    """h(mu) of (48) at level lambda = mu^(1/4): sum_t 1/max(pi_t, lambda)^2, the larger of the
    pairwise and the sequential float sums (the accountant uses the latter: one ulp matters for
    "never above the budget")."""
    terms = 1.0 / np.maximum(pi, level) ** 2
    return max(float(np.sum(terms)), float(np.cumsum(terms)[-1]))


def _raise_until_within(pi: np.ndarray, level: float, A: float) -> float:
    """Smallest float >= level with h <= A (a few ulps at most): the budget holds exactly."""
    while _spend(pi, level) > A:
        level = float(np.nextafter(level, math.inf))
    return level


def waterfill(pi: Any, A: float) -> Allocation:
    """Exact solution of (41) (Prop. IV.3 (44)): ``q_t = pi_t`` if ``sum 1/pi^2 <= A``, else
    ``max(pi_t, lambda)``.

    Sorted form: with pi ascending and R_k = sum_{j>k} 1/pi_(j)^2, the level is
    ``lambda^2 = k/(A - R_k)`` for the largest k with ``h(pi_(k)) = k/pi_(k)^2 + R_k >= A``
    (then pi_(k) <= lambda <= pi_(k+1)); h of (48) is continuous and non-increasing, so k is unique
    up to ties, which give the same lambda.
    """
    p = _pi(pi)
    a = _budget(A)
    if _spend(p, 0.0) <= a:
        return _allocation(p.copy(), p, a, None, "waterfill")          # (44), case (i): perk
    s = np.sort(p)
    inv = 1.0 / s ** 2
    tail = np.concatenate((np.cumsum(inv[::-1])[::-1][1:], [0.0]))   # R_k, k = 1..T (R_T = 0)
    k_all = np.arange(1, s.size + 1)
    at_breaks = k_all * inv + tail                                    # h(pi_(k)), non-increasing
    k = int(k_all[at_breaks >= a][-1])
    level = math.sqrt(k / (a - tail[k - 1]))             # (46)-(48): k/lambda^2 + R_k = A
    level = _raise_until_within(p, level, a)
    return _allocation(np.maximum(p, level), p, a, level, "waterfill")  # (44), case (ii)


def waterfill_bisection(pi: Any, A: float, max_iter: int = 500) -> Allocation:
    """(48) by bisection on mu, as the paper (Prop. IV.3 proof), bracket
    ``[0, 1.1 max(max pi^4, (T/A)^2)]``; stops at ``|h(mu) - A| <= 1e-12 A`` or a relative bracket
    of 1e-14. Returns the upper bracket (h <= A: the budget is never exceeded)."""
    p = _pi(pi)
    a = _budget(A)
    if _spend(p, 0.0) <= a:
        return _allocation(p.copy(), p, a, None, "bisection")
    lo, hi = 0.0, 1.1 * max(float(np.max(p)) ** 4, (p.size / a) ** 2)  # Prop. IV.3: mu_l, mu_h
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        value = _spend(p, mid ** 0.25)
        if value > a:
            lo = mid
        else:
            hi = mid
        if abs(value - a) <= 1e-12 * a and value <= a or hi - lo <= 1e-14 * hi:
            break
    level = _raise_until_within(p, hi ** 0.25, a)
    return _allocation(np.maximum(p, level), p, a, level, "bisection")


def _solve_inverse_sum(y: cp.Variable, constraints: list, size: int) -> bool:
    """``min (1/T) sum_t 1/y_t`` under ``constraints`` with Clarabel at tolerance 1e-10."""
    problem = cp.Problem(cp.Minimize(cp.sum(cp.inv_pos(y)) / size), constraints)
    with warnings.catch_warnings():   # "optimal_inaccurate" at 1e-10 is accepted (cross-check only)
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=cp.CLARABEL, tol_feas=1e-10, tol_gap_abs=1e-10, tol_gap_rel=1e-10)
    return problem.status in ("optimal", "optimal_inaccurate")


def waterfill_cvxpy(pi: Any, A: float) -> Allocation:
    """(41) as a convex program in ``y_t = T/(A q_t^2)`` (App. D's r = q^-2 scaled to x = r/A,
    further scaled by T so that y ~ 1 when binding, which Clarabel solves ~100x more accurately):
    ``min (1/T) sum 1/y s.t. sum y <= T, 0 <= y_t <= T/(A pi_t^2)``. Cross-check only."""
    p = _pi(pi)
    a = _budget(A)
    y = cp.Variable(p.size)
    if not _solve_inverse_sum(y, [cp.sum(y) <= p.size, y <= p.size / (a * p ** 2)], p.size):
        raise RuntimeError("cvxpy water-filling failed")
    q = np.maximum(np.sqrt(p.size / (a * np.asarray(y.value))), p)
    raised = q > p * (1 + 1e-6)
    level = float(np.mean(q[raised])) if raised.any() else None
    return _allocation(q, p, a, level, "cvxpy")


# ------------------------------------------------------------------------------------------
# Perk threshold (Remark IV.2) and full binding (ours: every round raised, (44) case ii)
# ------------------------------------------------------------------------------------------

def perk_threshold_power(*, A: float, clip: float, dim: int, h_eff: float) -> float:
    """(51): the largest P with ``P/sigma^2 <= eps^2/((2c_delta+8) L_delta r d h_eff)``, written
    with (34) as ``P_thr = A c^2 / (d h_eff)``; ``h_eff = sum_t 1/||H (H^H H)^{-1} u||^2`` (52)."""
    return _budget(A) * clip * clip / (int(dim) * float(h_eff))  # (51) with (34)


def perk_window(pi: Any, *, A: float, power_w: float, clip: float, dim: int) -> tuple[float, float]:
    """(P_thr, P_full) for the trial whose (P1) norms at power P are ``pi``.

    ``pi_t^2 = gamma^2 ||H (H^H H)^{-1} u||^2`` with ``gamma^2 = c^2/(d P)`` (50), so
    ``h_eff = gamma^2 sum pi^-2`` and (51) gives ``P_thr = P A / sum pi^-2``: for P' <= P_thr
    AirFL-DP is AirFL-MIMO. For P' >= ``P_full = P A max pi^2 / T`` every round is raised to
    sqrt(T/A) and q no longer depends on P' ((44) case ii with every q_t raised).
    """
    p = _pi(pi)
    gamma2 = clip * clip / (int(dim) * power_w)
    h_eff = gamma2 * float(np.sum(1.0 / p ** 2))                # (52) from the (P1) norms
    p_thr = perk_threshold_power(A=A, clip=clip, dim=dim, h_eff=h_eff)  # (51)
    p_full = power_w * _budget(A) * float(np.max(p)) ** 2 / p.size  # (44) ii, all raised
    return p_thr, p_full


# ------------------------------------------------------------------------------------------
# Finite D (App. D)
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FiniteDomainAllocation:
    """Solution of (P3) (72): ``min sum q^2 s.t. q >= pi, min{sum 1/q^2, B/q_{T-1}^2} <= A``."""

    q: tuple[float, ...]
    pi: tuple[float, ...]
    budget_A: float
    domain_B: float
    branch: str          # "linear" (sum 1/q^2 <= A binds) or "last_round" (B/q_{T-1}^2 <= A)
    objective: float
    solver: str

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def _last_round(p: np.ndarray, a: float, b: float, side_condition: bool) -> np.ndarray:
    """q_t = pi_t for t < T-1 and the smallest admissible q_{T-1} ((P3b'), our closed form), in
    q = r^(-1/2): ``max(pi_{T-1}, sqrt(B/A))`` and, for (P3b')'s ``B r_{T-1} <= sum_t r_t``,
    ``sqrt((B-1)/S_<)``; nudged by ulps so that ``B/q_{T-1}^2 <= A`` holds in floating point."""
    q = p.copy()
    last = max(float(p[-1]), math.sqrt(b / a))
    while b / last ** 2 > a:
        last = float(np.nextafter(last, math.inf))
    if side_condition and b > 1.0:
        last = max(last, math.sqrt((b - 1.0) / float(np.sum(1.0 / p[:-1] ** 2))))
    q[-1] = last
    return q


def _p3a_cvxpy(p: np.ndarray, a: float, b: float) -> np.ndarray | None:
    """(P3a'): ``min sum 1/r s.t. r <= 1/pi^2, sum r <= A, sum r <= B r_{T-1}``, in y = T r / A."""
    y = cp.Variable(p.size)
    cons = [y <= p.size / (a * p ** 2), cp.sum(y) <= p.size, cp.sum(y) <= b * y[-1]]
    if not _solve_inverse_sum(y, cons, p.size):
        return None
    q = np.maximum(np.sqrt(p.size / (a * np.asarray(y.value))), p)
    return q * math.sqrt(max(1.0, float(np.sum(1.0 / q ** 2)) / a) * (1 + 1e-15))  # budget safe


def allocate_finite_domain(pi: Any, A: float, B: float, solver: str = "closed_form"
                           ) -> FiniteDomainAllocation:
    """(P3) of App. D; ``B`` from :func:`privacy.domain_constant`. See the module notes."""
    p = _pi(pi)
    a = _budget(A)
    b = float(B)
    if not b >= 1.0:
        raise ValueError(f"domain_B must be >= 1 (B = (1 + ...)^2), got {B!r}")
    if solver == "closed_form":
        candidates = {"linear": np.asarray(waterfill(p, a).q),
                      "last_round": _last_round(p, a, b, side_condition=False)}
    elif solver == "branches":
        linear = _p3a_cvxpy(p, a, b)
        candidates = {"last_round": _last_round(p, a, b, side_condition=True)}
        if linear is not None:
            candidates["linear"] = linear
    else:
        raise ValueError(f"solver must be 'closed_form' or 'branches', got {solver!r}")
    branch = min(candidates, key=lambda name: (float(np.sum(candidates[name] ** 2)), name))
    q = candidates[branch]
    return FiniteDomainAllocation(tuple(map(float, q)), tuple(map(float, p)), a, b, branch,
                                  float(np.sum(q ** 2)), solver)


# ------------------------------------------------------------------------------------------
# The stored design of one trial
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AirflDesign:
    """AirFL-DP's design for one trial (Cor. IV.1 (49)), with the constants the aggregation needs.

    ``q`` is AirFL-DP's allocation (``pi`` itself where there is no DP target:
    ``eps_tilde_target = inf``); AirFL-MIMO uses ``pi`` (no DP constraint). ``privacy_dp`` and
    ``privacy_mimo`` report the (eps, delta) each achieves (logged for every method).
    """

    q: tuple[float, ...]
    pi: tuple[float, ...]
    budget_A: float
    binding: bool
    water_level: float | None
    eps_tilde_target: float
    eps_target: float
    delta: float
    dim: int
    clip: float
    sample_ratio: float
    sigma2: float
    power_w: float
    noise_model: str
    dp_noise_convention: str
    domain_B: float
    accountant: str
    power_threshold_w: float | None
    power_full_w: float | None
    allocation_solver: str
    privacy_dp: PrivacyReport = field(repr=False)
    privacy_mimo: PrivacyReport = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__
               if k not in ("privacy_dp", "privacy_mimo")}
        out["privacy_dp"] = self.privacy_dp.to_dict()
        out["privacy_mimo"] = self.privacy_mimo.to_dict()
        return _jsonable(out)

    @classmethod
    def from_dict(cls, stored: dict[str, Any]) -> "AirflDesign":
        """The design back from :meth:`to_dict` (as the design stage stored it), bit for bit:
        float64 values survive JSON, and "inf"/"-inf" are the infinities `_jsonable` wrote."""
        back = {k: _unjsonable(v) for k, v in stored.items()}
        back["q"], back["pi"] = tuple(back["q"]), tuple(back["pi"])
        for name in ("privacy_dp", "privacy_mimo"):
            back[name] = PrivacyReport(**back[name])
        return cls(**back)


def design_airfl_dp(pi: Any, *, eps_tilde: float | None, delta: float, dim: int, clip: float,
                    sample_ratio: float, sigma2: float, power_w: float,
                    noise_model: str = "complex_real_part", dp_noise_convention: str = "paper",
                    domain_B: float = math.inf, accountant: str = "paper",
                    solver: str = "waterfill") -> AirflDesign:
    """The design of AirFL-DP for the (P1) norms ``pi`` [T] of a trial at power ``power_w``.

    Target ``eps = eps_tilde sqrt(d)`` (Sec. V-A), budget A of (34) with the accounted sigma^2
    (see privacy.py); D = inf (``domain_B = inf``) uses the water-filling ``solver`` (``waterfill``,
    ``bisection`` or ``cvxpy``), finite B the App. D allocation (closed form).
    ``eps_tilde=None``: no DP target (AirFL-MIMO, and the plan of the benchmarks), so
    q = pi, A = inf, no perk window, and ``privacy_dp`` is the privacy of q = pi.
    """
    if eps_tilde is not None and (not eps_tilde > 0 or not math.isfinite(eps_tilde)):
        raise ValueError(f"eps_tilde must be finite and > 0 (or None: no DP target), "
                         f"got {eps_tilde!r}")
    if noise_model not in NOISE_MODELS:
        raise ValueError(f"noise_model must be one of {NOISE_MODELS}, got {noise_model!r}")
    if dp_noise_convention not in CONVENTIONS:
        raise ValueError(f"dp_noise_convention must be one of {CONVENTIONS}, "
                         f"got {dp_noise_convention!r}")
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    if not power_w > 0:
        raise ValueError(f"power_w must be > 0, got {power_w!r}")
    p = _pi(pi)
    s2 = accounting_sigma2(sigma2, noise_model, dp_noise_convention)
    solvers = {"waterfill": waterfill, "bisection": waterfill_bisection, "cvxpy": waterfill_cvxpy}
    if eps_tilde is None:
        eps = a = math.inf
        q, level, used = p, None, "none (no DP target: q = pi)"
        window: tuple[float | None, float | None] = (None, None)
    elif math.isinf(domain_B):
        eps = eps_tilde * math.sqrt(int(dim))
        a = budget_A(eps, delta, sample_ratio, clip, s2)              # (34)
        if solver not in solvers:
            raise ValueError(f"solver must be one of {sorted(solvers)}, got {solver!r}")
        alloc = solvers[solver](p, a)
        q, level, used = np.asarray(alloc.q), alloc.water_level, alloc.solver
        window = perk_window(p, A=a, power_w=power_w, clip=clip, dim=dim)
    else:
        eps = eps_tilde * math.sqrt(int(dim))
        a = budget_A(eps, delta, sample_ratio, clip, s2)              # (34)
        fin = allocate_finite_domain(p, a, domain_B)
        q, level, used = np.asarray(fin.q), None, f"finite_domain/{fin.branch}"
        window = (None, None)
    report = lambda norms: privacy_report(norms, sample_ratio, clip, s2, delta, dim,  # noqa: E731
                                          domain_B, accountant)
    return AirflDesign(
        q=tuple(map(float, q)), pi=tuple(map(float, p)), budget_A=a,
        binding=_spend(p, 0.0) > a, water_level=level,
        eps_tilde_target=math.inf if eps_tilde is None else eps_tilde,
        eps_target=eps, delta=float(delta), dim=int(dim), clip=float(clip),
        sample_ratio=float(sample_ratio), sigma2=float(sigma2), power_w=float(power_w),
        noise_model=noise_model, dp_noise_convention=dp_noise_convention,
        domain_B=float(domain_B), accountant=accountant, power_threshold_w=window[0],
        power_full_w=window[1], allocation_solver=used, privacy_dp=report(q),
        privacy_mimo=report(p))
