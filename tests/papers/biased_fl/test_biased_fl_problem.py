"""Biased FL's learning problem and its exact optimum (problem.py, paper Sec. II, V): the
devices' data, the reference optimum, the objective's gradient."""

from __future__ import annotations

import numpy as np
import pytest

from airfl.papers.biased_fl.problem import (accuracy, build_problem, constants, global_objective,
                                            solve_optimum)


@pytest.fixture(scope="module")
def solved(mnist_mirror):
    from airfl.data import load_dataset
    from airfl.data.partitioners import make_partition

    x, y = load_dataset("mnist", mnist_mirror, "train")
    xt, yt = load_dataset("mnist", mnist_mirror, "test")
    part = make_partition("per_class_one_class", y, 10, np.random.default_rng(0), per_class=100)
    problem = build_problem(x, y, part.indices, 10, 0.01)
    return problem, solve_optimum(problem), xt, yt, part


def test_device_m_holds_the_first_100_images_of_class_m(solved):
    problem, _, _, _, part = solved
    assert [int(np.unique(ys)[0]) for ys in problem.y] == list(range(10))
    assert all(len(ys) == 100 for ys in problem.y)


def test_optimum_matches_the_reference_values(solved):
    """F(w*) = 0.4495 and test acc(w*) = 0.8673; kappa_true = 1.264,
    rho_W ~ 794, ||grad f_m(0)|| in [5.29, 7.94]."""
    problem, w_star, xt, yt, _ = solved
    value, grad = global_objective(problem, w_star)
    assert np.linalg.norm(grad) < 1e-8
    c = constants(problem, w_star)
    assert value == pytest.approx(0.4495, abs=5e-5)
    assert accuracy(w_star, xt, yt, 10) == pytest.approx(0.8673, abs=5e-5)
    assert c["kappa_true"] == pytest.approx(1.264, abs=1e-3)
    assert c["projection_radius"] == pytest.approx(794.4, abs=0.1)
    assert min(c["grad_norm_at_zero"]) == pytest.approx(5.29, abs=0.01)
    assert c["eta_max"] == pytest.approx(2 / (0.01 + max(c["L_per_device"])))


def test_objective_gradient_matches_finite_differences(solved):
    problem, w_star, *_ = solved
    rng = np.random.default_rng(1)
    w = w_star + 0.01 * rng.standard_normal(problem.dim)
    v = rng.standard_normal(problem.dim)
    h = 1e-6
    numeric = (global_objective(problem, w + h * v)[0] - global_objective(problem, w - h * v)[0]) / (2 * h)
    assert numeric == pytest.approx(global_objective(problem, w)[1] @ v, rel=1e-6)
