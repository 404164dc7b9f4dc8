"""Per-round receive combiner of AirFL-DP: problem (P1), ``min ||w||^2 s.t. |w^H h_i| >= gamma``.

Paper: Lemma IV.2 (P1), Remark IV.2 (50) (zero-forcing), Sec. IV-B (33a) (``gamma = c/sqrt(dP)``).
Our reading: the printed c/(dP) of (32a) is a typo for c/sqrt(dP) (33a); the solvers below are ours.

Solvers (``method``):

* ``zf`` (authors' default, closed form, needs m >= K): ``w = gamma H (H^H H)^{-1} u`` with
  ``u = 1_K`` (50). The paper only says "unit-modulus entries"; u = 1 is what the authors' code
  uses. Every constraint is tight (``w^H h_i = gamma``). Feasible but not optimal for (P1).
* ``zf_opt`` (m >= K): the same family ``w = gamma H (H^H H)^{-1} b`` with ``|b_i| >= 1`` optimised
  by exact coordinate descent from b = 1. Because the optimum of (P1) lies in the column space of
  H (a component orthogonal to it adds norm and changes no constraint), this family contains the
  (P1) optimum, and ``|w^H h_i| = gamma |b_i|``; (P1) is ``min_b b^H (H^H H)^{-1} b, |b_i| >= 1``.
  Each coordinate step is that coordinate's exact minimiser, so the objective never exceeds ZF's
  (our finding: ZF with u = 1 is 5-6 dB above this at m = 100, K = 45).
* ``sca`` (any m, K; the general solver used when m < K): successive convex approximation of
  (P1), ``min ||w||^2 s.t. 2 Re(w_k^H h_i h_i^H w) - |w_k^H h_i|^2 >= gamma^2``, a convex
  QP per step solved with cvxpy on the CPU; every iterate is feasible and the objective
  non-increasing.
  Starts from ZF where m >= K, else from the better of the matched-filter sum and the principal
  eigenvector of H H^H, rescaled to feasibility.
* ``sdr`` (validation): the semidefinite relaxation of (P1) with Gaussian randomisation;
  also returns the lower bound ``tr(W*) <= min ||w||^2``.

``zf`` and ``zf_opt`` are batched torch over any leading axes (rounds, trials) and run on the
tensor's device; ``sca`` and ``sdr`` loop over the batch in cvxpy (CPU) and are meant for small
problems (m < K never occurs in the paper's or the quick settings: m/K = 100/45 and 40/18).
Numerics: ZF uses a thin QR (``H = QR``, ``H (H^H H)^{-1} = Q R^{-H}``) instead of forming
``H^H H``, so per-device path losses spanning 60 dB cost no accuracy; the cvxpy solvers work in the
path-loss-normalised units (channels divided by the smallest path loss) and rescale afterwards.
"""

from __future__ import annotations

import math
import warnings

from airfl.runtime.lazy import lazy_import
from airfl.optim import sca

cp = lazy_import("cvxpy")   # only the SCA/SDR/cvxpy solvers need it
import numpy as np
import torch

__all__ = [
    "METHODS", "power_threshold", "zf_matrix", "zf_beamformer", "zf_opt_beamformer",
    "sca_beamformer", "sdr_beamformer", "solve_p1", "combiner_objective",
]

METHODS = ("zf", "zf_opt", "sca", "sdr")
_SOLVER_OPTS = {"solver": "CLARABEL", "tol_feas": 1e-10, "tol_gap_abs": 1e-10,
                "tol_gap_rel": 1e-10}


def power_threshold(clip: float, dim: int, power_w: float) -> float:
    """``gamma = c / sqrt(d P)``: the worst-case power constraint (31a) as
    ``|w^H h_i| >= gamma`` (33a)."""
    if not clip > 0 or not power_w > 0 or int(dim) < 1:
        raise ValueError(f"clip, power_w must be > 0 and dim >= 1; got {clip}, {power_w}, {dim}")
    return clip / math.sqrt(int(dim) * power_w)  # (33a); (32a)'s c/(dP) is a typo


def _check_channels(H: torch.Tensor, need_zf: bool) -> tuple[int, int]:
    if not torch.is_complex(H) or H.ndim < 2:
        raise ValueError(f"channels must be a complex tensor [..., m, K]; got {H.dtype} "
                         f"{tuple(H.shape)}")
    m, k = H.shape[-2], H.shape[-1]
    if need_zf and m < k:
        raise ValueError(f"num_antennas m = {m} < K = {k} devices: zero-forcing needs m >= K "
                         "(use method='sca')")
    return m, k


def _qr(H: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _check_channels(H, need_zf=True)
    return torch.linalg.qr(H, mode="reduced")


def _apply_pinv_h(Q: torch.Tensor, R: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``H (H^H H)^{-1} b = Q R^{-H} b`` for b [..., K] -> [..., m]."""
    x = torch.linalg.solve_triangular(R.mH, b.unsqueeze(-1), upper=False)
    return (Q @ x).squeeze(-1)


def zf_matrix(H: torch.Tensor) -> torch.Tensor:
    """``W = H (H^H H)^{-1}`` [..., m, K], so ``W^H H = I_K``: the interference-free ZF (50)."""
    Q, R = _qr(H)
    eye = torch.eye(H.shape[-1], dtype=H.dtype, device=H.device).expand(*H.shape[:-2], -1, -1)
    return Q @ torch.linalg.solve_triangular(R.mH, eye, upper=False)


def zf_beamformer(H: torch.Tensor, gamma: float, u: torch.Tensor | None = None) -> torch.Tensor:
    """``w_0 = gamma H (H^H H)^{-1} u`` (Remark IV.2, (50)); u = 1_K by default (authors' choice).

    ``H`` [..., m, K] complex; returns [..., m]. ``w_0^H h_i = gamma conj(u_i)``: all tight.
    """
    Q, R = _qr(H)
    if u is None:
        u = torch.ones(H.shape[:-2] + H.shape[-1:], dtype=H.dtype, device=H.device)
    return gamma * _apply_pinv_h(Q, R, u.to(H.dtype))  # (50)


def combiner_objective(b: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``b^H M b`` (real) for b [..., K], M [..., K, K] Hermitian."""
    return torch.einsum("...i,...ij,...j->...", b.conj(), M, b).real


def _coordinate_descent(M: torch.Tensor, b: torch.Tensor, max_sweeps: int, rtol: float
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact coordinate descent on ``b^H M b`` over ``|b_i| >= 1`` from ``b`` (modified in place).

    For coordinate i with ``s_i = sum_{j != i} M_ij b_j`` the minimiser is ``-s_i/M_ii`` if that
    has modulus >= 1, else ``-s_i/|s_i|`` (the closest point of the feasible set to the
    unconstrained minimiser). Stops when a sweep lowers f by less than ``rtol`` (relative) for
    every batch element. Returns (b, f(b)).
    """
    diag = torch.diagonal(M, dim1=-2, dim2=-1).real
    tiny = torch.finfo(diag.dtype).tiny
    previous = combiner_objective(b, M)
    for _ in range(max_sweeps):
        for i in range(b.shape[-1]):
            s = (M[..., i, :] * b).sum(-1) - M[..., i, i] * b[..., i]
            free = -s / diag[..., i]                                   # unconstrained minimiser
            mag = s.abs()
            unit = torch.where(mag > 0, -s / mag.clamp_min(tiny), b[..., i] / b[..., i].abs())
            b[..., i] = torch.where(free.abs() >= 1.0, free, unit)
        current = combiner_objective(b, M)
        done = bool(((previous - current) <= rtol * current).all())
        previous = current
        if done:
            break
    return b, previous


def zf_opt_beamformer(H: torch.Tensor, gamma: float, max_sweeps: int = 200, rtol: float = 1e-8,
                      restarts: int = 0, generator: torch.Generator | None = None) -> torch.Tensor:
    """(P1) over ``w = gamma H (H^H H)^{-1} b``, ``|b_i| >= 1``: ``min_b b^H M b``,
    ``M = (H^H H)^{-1}``.

    Coordinate descent (:func:`_coordinate_descent`) from b = 1 (ZF of (50)), from the phases of
    the top eigenvector of H^H H (the classic multicast start) and from ``restarts`` random phase
    vectors drawn from ``generator``; the best result per batch element is kept. The b = 1 run
    never ends above its start, so the result is never worse than ZF (a final guard returns ZF
    wherever rounding made it so). Non-convex: a local optimum; :func:`sdr_beamformer` bounds the
    gap on small problems.
    """
    Q, R = _qr(H)
    k = H.shape[-1]
    eye = torch.eye(k, dtype=H.dtype, device=H.device).expand(*H.shape[:-2], -1, -1)
    r_inv = torch.linalg.solve_triangular(R, eye, upper=True)
    M = r_inv @ r_inv.mH                                               # (H^H H)^{-1}
    ones = torch.ones(H.shape[:-2] + (k,), dtype=H.dtype, device=H.device)
    top = torch.linalg.eigh(R.mH @ R)[1][..., -1]                      # H^H H = R^H R
    starts = [ones.clone(), top / top.abs().clamp_min(torch.finfo(M.real.dtype).tiny)]
    if restarts:
        if generator is None:
            raise ValueError("restarts > 0 needs a generator")
        angles = torch.rand((restarts, *ones.shape), generator=generator, dtype=torch.float64)
        starts += list(torch.polar(torch.ones_like(angles), 2 * math.pi * angles)
                       .to(H.device, H.dtype))
    best_b, best_f = _coordinate_descent(M, starts[0], max_sweeps, rtol)
    for b0 in starts[1:]:
        b, f = _coordinate_descent(M, b0, max_sweeps, rtol)
        better = f < best_f
        best_b = torch.where(better.unsqueeze(-1), b, best_b)
        best_f = torch.where(better, f, best_f)
    worse = best_f > combiner_objective(ones, M)
    best_b = torch.where(worse.unsqueeze(-1), ones, best_b)
    return gamma * _apply_pinv_h(Q, R, best_b)


# ------------------------------------------------------------------------------------------
# cvxpy solvers (CPU, small problems): normalised units x = t w, e_i = h_i / (gamma t)
# ------------------------------------------------------------------------------------------

def _normalised(h: np.ndarray, gamma: float) -> tuple[np.ndarray, float]:
    """``e_i = h_i/(gamma t)`` with t the median column norm of h/gamma: |w^H h_i| >= gamma iff
    |x^H e_i| >= 1 for ``x = t w`` (solve in normalised units, rescale after)."""
    g = h / gamma
    t = float(np.median(np.linalg.norm(g, axis=0)))
    return g / t, t


def _rescale_feasible(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Scale x so that min_i |x^H e_i| = 1 exactly (feasible, tight)."""
    return x / np.min(np.abs(np.conj(x) @ e))


def _initial_point(e: np.ndarray) -> np.ndarray:
    """Feasible start for m < K: the better of the matched-filter sum and the top eigenvector of
    E E^H, rescaled to feasibility."""
    candidates = [(e / np.linalg.norm(e, axis=0)).sum(axis=1),
                  np.linalg.eigh(e @ e.conj().T)[1][:, -1]]
    scaled = [_rescale_feasible(c, e) for c in candidates if np.min(np.abs(np.conj(c) @ e)) > 0]
    return min(scaled, key=lambda v: float(np.vdot(v, v).real))


class _ScaStep:
    """The convex SCA subproblem ``min ||z||^2 s.t. A z >= beta`` in real coordinates (DPP)."""

    def __init__(self, m: int, k: int):
        self.A = cp.Parameter((k, 2 * m))
        self.beta = cp.Parameter(k)
        self.z = cp.Variable(2 * m)
        self.problem = cp.Problem(cp.Minimize(cp.sum_squares(self.z)),
                                  [self.A @ self.z >= self.beta])

    def __call__(self, x: np.ndarray, e: np.ndarray) -> np.ndarray:
        c = np.conj(x) @ e                                         # c_i = x^H e_i
        a = c * e / (np.abs(c) * np.linalg.norm(e, axis=0))        # row-normalised c_i e_i
        # Re(a^H x) = Re(a) . Re(x) + Im(a) . Im(x)
        self.A.value = np.concatenate([a.real.T, a.imag.T], axis=1)
        self.beta.value = (1.0 + np.abs(c) ** 2) / (2.0 * np.abs(c) * np.linalg.norm(e, axis=0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.problem.solve(**_SOLVER_OPTS)
        if self.problem.status not in sca.ACCEPTED:
            return self.problem.status, None             # no step: the SCA loop stops here
        m = x.size
        return self.problem.status, self.z.value[:m] + 1j * self.z.value[m:]


def _sca_one(h: np.ndarray, gamma: float, w_init: np.ndarray | None, max_iter: int,
             rtol: float, step: _ScaStep) -> np.ndarray:
    """One beamformer by the shared SCA loop (airfl.optim.sca): each step is the convexified (P1) QP
    above, re-tightened to feasibility; a failed QP or a step that does not lower ||x||^2 ends the
    loop with the best iterate (solver noise is not an error here: every iterate is feasible)."""
    e, t = _normalised(h, gamma)
    x = _initial_point(e) if w_init is None else _rescale_feasible(t * w_init, e)

    def propose(x, k):
        status, z = step(x, e)
        return status, (None if z is None else _rescale_feasible(z, e))

    run = sca.minimise(x, propose=propose, objective=lambda v: float(np.vdot(v, v).real),
                       max_iter=max_iter, tol=rtol, on_solver_failure="stop")
    return run.point / t


def _batched(H: torch.Tensor):
    m, k = H.shape[-2], H.shape[-1]
    flat = H.detach().cpu().to(torch.complex128).reshape(-1, m, k).numpy()
    return flat, m, k


def sca_beamformer(H: torch.Tensor, gamma: float, w_init: torch.Tensor | None = None,
                   max_iter: int = 50, rtol: float = 1e-6) -> torch.Tensor:
    """(P1) by SCA (started from ZF where m >= K); any m, K. ``w_init`` [..., m] must be nonzero
    on every h_i (it is rescaled to feasibility); default ZF if m >= K else a matched-filter/eigen
    start.
    Stops at relative objective change < ``rtol`` or ``max_iter`` QPs. CPU (cvxpy), loops over
    the batch."""
    flat, m, k = _batched(H)
    if w_init is None and m >= k:
        w_init = zf_beamformer(H, gamma)
    inits = (None if w_init is None else
             w_init.detach().cpu().to(torch.complex128).reshape(-1, m).numpy())
    step = _ScaStep(m, k)
    out = [_sca_one(h, gamma, None if inits is None else inits[j], max_iter, rtol, step)
           for j, h in enumerate(flat)]
    return torch.as_tensor(np.stack(out)).reshape(H.shape[:-1]).to(H.device, H.dtype)


def sdr_beamformer(H: torch.Tensor, gamma: float, generator: torch.Generator,
                   randomisations: int = 200) -> tuple[torch.Tensor, torch.Tensor]:
    """SDR of (P1): ``min tr(W) s.t. Re(h_i^H W h_i) >= gamma^2, W >= 0``, then Gaussian
    randomisation ``w = U S^{1/2} v``, ``v ~ CN(0, I)`` from ``generator``, each draw rescaled to
    feasibility, smallest kept (the top eigenvector is always a candidate).

    Returns (w [..., m], lower bound on min ||w||^2 [...]: ``tr(W*)``). CPU (cvxpy), small m.
    """
    flat, m, k = _batched(H)
    ws, bounds = [], []
    for h in flat:
        e, t = _normalised(h, gamma)
        X = cp.Variable((m, m), hermitian=True)
        cons = [X >> 0] + [cp.real(e[:, i].conj() @ X @ e[:, i]) >= 1.0 for i in range(k)]
        problem = cp.Problem(cp.Minimize(cp.real(cp.trace(X))), cons)
        with warnings.catch_warnings():   # "optimal_inaccurate" is accepted: only a bound/start
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=cp.CLARABEL)
        if problem.status not in ("optimal", "optimal_inaccurate"):
            raise RuntimeError(f"SDR of (P1) failed: {problem.status}")
        vals, vecs = np.linalg.eigh((X.value + X.value.conj().T) / 2.0)
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))
        z = torch.randn((randomisations, m, 2), generator=generator, dtype=torch.float64).numpy()
        draws = (root @ ((z[..., 0] + 1j * z[..., 1]) / math.sqrt(2.0)).T).T
        candidates = [_rescale_feasible(v, e) for v in [vecs[:, -1], *draws]]
        best = min(candidates, key=lambda v: float(np.vdot(v, v).real))
        ws.append(best / t)
        bounds.append(float(np.trace(X.value).real) / t ** 2)
    w = torch.as_tensor(np.stack(ws)).reshape(H.shape[:-1]).to(H.device, H.dtype)
    return w, torch.as_tensor(bounds, dtype=torch.float64).reshape(H.shape[:-2])


def solve_p1(H: torch.Tensor, gamma: float, method: str = "zf",
             generator: torch.Generator | None = None) -> tuple[torch.Tensor, str]:
    """(w_0 [..., m], name of the solver that ran) for channels ``H`` [..., m, K].

    ``zf`` and ``zf_opt`` need m >= K; where m < K they hand over to the general solver ``sca``
    (the paper: "SDP methods generally, ZF when m >= rn"), and the returned name says so.
    ``sdr`` needs a generator for its randomisation.
    """
    if method not in METHODS:
        raise ValueError(f"beamformer must be one of {METHODS}, got {method!r}")
    m, k = _check_channels(H, need_zf=False)
    if method in ("zf", "zf_opt") and m < k:
        return sca_beamformer(H, gamma), "sca"
    if method == "zf":
        return zf_beamformer(H, gamma), "zf"
    if method == "zf_opt":
        return zf_opt_beamformer(H, gamma), "zf_opt"
    if method == "sca":
        return sca_beamformer(H, gamma), "sca"
    if generator is None:
        raise ValueError("beamformer 'sdr' needs a generator for its randomisation")
    return sdr_beamformer(H, gamma, generator)[0], "sdr"
