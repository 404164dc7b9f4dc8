"""The shared SCA (majorisation-minimisation) loop, airfl.optim.sca: its stopping rules and the
one vocabulary of stop reasons the Biased FL OTA/digital designs and DP as a perk's beamformer
record."""

import math

import numpy as np
import pytest

from airfl.optim import sca

# Least squares ||A x - b||^2 minimised by MM with the quadratic majoriser of curvature L = 2
# lambda_max(A^T A): each step x <- x - grad / L is the majoriser's exact minimiser, so the true
# objective never rises and the iterates converge to the closed-form solution.
RNG = np.random.default_rng(0)
A = RNG.normal(size=(20, 4))
B = RNG.normal(size=20)
L = 2.0 * np.linalg.eigvalsh(A.T @ A).max()
X_STAR = np.linalg.lstsq(A, B, rcond=None)[0]


def objective(x):
    return float(np.sum((A @ x - B) ** 2))


def mm_step(x, k):
    return "optimal", x - 2.0 * A.T @ (A @ x - B) / L


def test_mm_converges_to_the_closed_form_and_never_rises():
    run = sca.minimise(np.zeros(4), propose=mm_step, objective=objective, max_iter=5000, tol=1e-12)
    assert run.stop_reason == "tol" and run.converged
    assert np.all(np.diff(run.history) < 0)
    assert np.allclose(run.point, X_STAR, atol=1e-4)
    assert run.iterations == len(run.statuses) == len(run.points) - 1 == len(run.history) - 1
    assert run.objective == run.history[-1] == objective(run.point)


def test_max_iter_is_not_convergence():
    run = sca.minimise(np.zeros(4), propose=mm_step, objective=objective, max_iter=3, tol=0.0)
    assert run.stop_reason == "max_iter" and not run.converged and run.iterations == 3


def _constant(status, point):
    return lambda x, k: (status, point)


def test_a_step_at_solver_accuracy_stops_converged_keeping_the_last_iterate():
    start = X_STAR
    tiny_rise = start + 1e-7                       # at the minimum: a second-order (~1e-14) rise
    run = sca.minimise(start, propose=_constant("optimal", tiny_rise), objective=objective,
                       max_iter=10, tol=1e-9, rise_tol=1e-6)
    assert run.stop_reason == "no_decrease" and run.converged
    assert run.point is start and run.iterations == 1


def test_a_larger_rise_is_an_error_of_the_wings_type_with_its_description():
    class DesignError(RuntimeError):
        pass

    with pytest.raises(DesignError, match=r"iteration 1: status=optimal.*raised the true "
                                          r"objective.*inputs: here"):
        sca.minimise(X_STAR, propose=_constant("optimal", X_STAR + 1.0), objective=objective,
                     max_iter=10, tol=1e-9, rise_tol=1e-6, error=DesignError,
                     describe=lambda x: "inputs: here")


def test_an_inaccurate_step_that_does_not_lower_is_rejected_only_when_asked():
    worse = X_STAR + 1.0
    kw = dict(objective=objective, max_iter=10, tol=1e-9)
    rejected = sca.minimise(X_STAR, propose=_constant("optimal_inaccurate", worse),
                            reject_inaccurate=True, **kw)
    assert rejected.stop_reason == "inaccurate_rejected" and not rejected.converged
    assert rejected.point is X_STAR
    # without our keep-lower-steps rule it is a rise beyond rise_tol (inf: allowed) -> converged
    kept = sca.minimise(X_STAR, propose=_constant("optimal_inaccurate", worse), **kw)
    assert kept.stop_reason == "no_decrease" and kept.converged


def test_an_infeasible_point_is_an_error_unless_an_inaccurate_one_is_rejected():
    start, better = np.zeros(4), X_STAR
    never = dict(objective=objective, max_iter=10, tol=1e-9, feasible=lambda x: False)
    with pytest.raises(sca.ScaError, match="infeasible"):
        sca.minimise(start, propose=_constant("optimal", better), **never)
    run = sca.minimise(start, propose=_constant("optimal_inaccurate", better),
                       reject_inaccurate=True, **never)
    assert run.stop_reason == "inaccurate_rejected" and run.point is start


@pytest.mark.parametrize("status, point", [("infeasible", None), ("optimal", None),
                                           ("optimal", np.full(4, math.nan))])
def test_a_failed_solve_raises_or_stops_as_the_wing_chooses(status, point):
    kw = dict(objective=objective, max_iter=10, tol=1e-9)
    with pytest.raises(sca.ScaError, match="no usable point"):
        sca.minimise(np.zeros(4), propose=_constant(status, point), **kw)
    run = sca.minimise(np.zeros(4), propose=_constant(status, point),
                       on_solver_failure="stop", **kw)
    assert run.stop_reason == "solver_failed" and not run.converged


def test_every_stop_reason_is_in_the_vocabulary():
    assert set(sca.CONVERGED) <= set(sca.STOP_REASONS)
    with pytest.raises(ValueError, match="on_solver_failure"):
        sca.minimise(np.zeros(4), propose=mm_step, objective=objective, max_iter=1, tol=0.0,
                     on_solver_failure="ignore")
