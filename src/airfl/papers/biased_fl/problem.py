"""The learning problem of Biased FL and its exact optimum (paper Sec. II, V).

F(w) = (1/N) sum_m f_m(w), f_m(w) = (1/|D_m|) sum_{xi in D_m} phi(w, xi), with the regularised
softmax loss phi(w, (x, l)) = (mu/2)||w||^2 - ln softmax(x^T w)_l, x = [pixels/255, 1] (d = 7850).
Device m holds the first `per_class` training images of class m in file order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax, softmax

from airfl.runtime.lazy import lazy_import

optimize = lazy_import("scipy.optimize")   # only the reference stage solves for w*


@dataclass(frozen=True)
class Problem:
    """Per-device data in float64: x[m] is [n_m, p+1] (bias column last), y[m] is [n_m]."""

    x: tuple[np.ndarray, ...]
    y: tuple[np.ndarray, ...]
    num_classes: int
    mu: float

    @property
    def dim(self) -> int:
        return self.num_classes * self.x[0].shape[1]


def build_problem(images: np.ndarray, labels: np.ndarray, device_indices: list[np.ndarray],
                  num_classes: int, mu: float) -> Problem:
    """Pixels scaled to [0, 1] plus the constant-1 bias feature (d = 10 x 785)."""
    xs, ys = [], []
    for index in device_indices:
        flat = images[index].reshape(len(index), -1).astype(np.float64) / 255.0
        xs.append(np.hstack([flat, np.ones((len(index), 1))]))
        ys.append(labels[index].astype(np.int64))
    return Problem(tuple(xs), tuple(ys), num_classes, float(mu))


def local_objective(problem: Problem, w: np.ndarray, m: int) -> tuple[float, np.ndarray]:
    """f_m(w) and its gradient; w is class-major [C, p+1] flattened."""
    W = w.reshape(problem.num_classes, -1)
    x, y = problem.x[m], problem.y[m]
    logits = x @ W.T
    value = -log_softmax(logits, axis=1)[np.arange(len(y)), y].mean() + 0.5 * problem.mu * w @ w
    residual = softmax(logits, axis=1)
    residual[np.arange(len(y)), y] -= 1.0
    grad = (residual.T @ x).ravel() / len(y) + problem.mu * w
    return float(value), grad


def global_objective(problem: Problem, w: np.ndarray) -> tuple[float, np.ndarray]:
    """F(w) = (1/N) sum_m f_m(w): equal device weights, not data-size weights."""
    parts = [local_objective(problem, w, m) for m in range(len(problem.x))]
    return (float(np.mean([p[0] for p in parts])), np.mean([p[1] for p in parts], axis=0))


def solve_optimum(problem: Problem, gtol: float = 1e-8, max_iter: int = 20000) -> np.ndarray:
    """w* = argmin F by L-BFGS in float64 until ||grad F|| < gtol ('Metrics')."""
    # L-BFGS-B stops on the largest gradient component: ||g||_inf <= gtol / sqrt(d) implies
    # ||g||_2 <= gtol.
    result = optimize.minimize(lambda w: global_objective(problem, w), np.zeros(problem.dim), jac=True,
                      method="L-BFGS-B", options={"maxiter": max_iter, "ftol": 0.0, "maxcor": 30,
                                                  "gtol": gtol / np.sqrt(problem.dim)})
    grad_norm = float(np.linalg.norm(global_objective(problem, result.x)[1]))
    if grad_norm > 10 * gtol:
        raise RuntimeError(f"w* not converged: ||grad F|| = {grad_norm:.3e} > {gtol:g} "
                           f"after {result.nit} iterations ({result.message})")
    return result.x


def smoothness(problem: Problem) -> np.ndarray:
    """L_m <= mu + (1/2) lambda_max((1/|D_m|) sum x x^T): the softmax CE Hessian is
    (diag(s) - s s^T) (x) x x^T with ||diag(s) - s s^T|| <= 1/2."""
    return np.array([problem.mu + 0.5 * np.linalg.eigvalsh(x.T @ x / len(x))[-1]
                     for x in problem.x])


def constants(problem: Problem, w_star: np.ndarray) -> dict[str, float | list[float]]:
    """Data constants the design uses, measured (kappa_true vs the design 0.01)."""
    grads_at_opt = [local_objective(problem, w_star, m)[1] for m in range(len(problem.x))]
    grads_at_zero = [local_objective(problem, np.zeros(problem.dim), m)[1]
                     for m in range(len(problem.x))]
    radius = max(np.linalg.norm(g) for g in grads_at_zero) / problem.mu   # rho_W (paper eq. 3's projection set)
    lipschitz = smoothness(problem)
    return {"F_star": global_objective(problem, w_star)[0],
            "kappa_true": float(np.sqrt(np.mean([g @ g for g in grads_at_opt]))),  # kappa^2 def.
            "projection_radius": float(radius), "diameter": float(2 * radius),
            "L_per_device": lipschitz.tolist(), "L": float(lipschitz.max()),
            "eta_max": float(2.0 / (problem.mu + lipschitz.max())),                # 2/(mu+L)
            "grad_norm_at_zero": [float(np.linalg.norm(g)) for g in grads_at_zero]}


def accuracy(w: np.ndarray, images: np.ndarray, labels: np.ndarray, num_classes: int) -> float:
    x = np.hstack([images.reshape(len(images), -1) / 255.0, np.ones((len(images), 1))])
    return float((np.argmax(x @ w.reshape(num_classes, -1).T, axis=1) == labels).mean())
