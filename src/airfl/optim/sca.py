"""One successive-convex-approximation (majorisation-minimisation) loop for every design.

Three designs minimise a non-convex objective by solving a convex surrogate at the current iterate
and moving to its (post-processed) solution: Biased FL's OTA pre-scalers (paper eq. 21), its
digital thresholds, scalers and bits (paper eq. 24) and DP as a perk's receive beamformer (problem
P1). They differ only in what one step solves and in how strict they are about a step that does not
help; the loop, its accounting and the words for why it stopped are the same, and live here.

A wing supplies ``propose(point, k) -> (status, candidate)`` (the surrogate solved at ``point``
and post-processed; ``candidate`` None when the solver gave nothing) and ``objective(point)``
(the TRUE objective, which an exact MM step can never raise). Rules, in order:

* a status outside ``ACCEPTED`` (or a missing candidate / non-finite objective with an accepted
  status): ``on_solver_failure="raise"`` raises ``error``; ``"stop"`` ends the loop with reason
  ``"solver_failed"`` (not converged), keeping the last taken iterate;
* ``feasible(candidate)`` false: an ``optimal_inaccurate`` candidate with ``reject_inaccurate``
  stops the loop (``"inaccurate_rejected"``; our reading: an inaccurate solution that breaks a
  constraint is not a step); otherwise raise;
* the candidate lowers the objective: taken; the loop stops with ``"tol"`` when the relative
  decrease ``(J_old - J_new) / |J_old|`` is at most ``tol``;
* it does not: an ``optimal_inaccurate`` one with ``reject_inaccurate`` stops
  (``"inaccurate_rejected"``); a rise larger than ``rise_tol`` (relative) means the surrogate did
  not majorise or the solve failed: raise; a smaller one is the loop at solver accuracy:
  ``"no_decrease"`` (converged, the last taken iterate kept);
* ``max_iter`` solves without any of these: ``"max_iter"`` (not converged).

``converged`` is True exactly for ``"tol"`` and ``"no_decrease"``. Nothing here falls back to
another design or solver: a wing that wants a retry does it inside ``propose``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

ACCEPTED = ("optimal", "optimal_inaccurate")
STOP_REASONS = ("tol", "no_decrease", "inaccurate_rejected", "solver_failed", "max_iter")
CONVERGED = ("tol", "no_decrease")


class ScaError(RuntimeError):
    """An SCA step failed in a way that is an error, not a stopping rule."""


@dataclass
class ScaResult:
    """The last taken iterate and the trace of the run."""

    point: Any
    objective: float
    points: list = field(default_factory=list)        # the start and every taken iterate
    history: list = field(default_factory=list)       # their true objectives
    statuses: list = field(default_factory=list)      # one per surrogate solve
    stop_reason: str = "max_iter"

    @property
    def iterations(self) -> int:
        """Surrogate solves made (the last one may have been rejected)."""
        return len(self.statuses)

    @property
    def converged(self) -> bool:
        return self.stop_reason in CONVERGED


def minimise(start, *, propose: Callable[[Any, int], tuple[str, Any]],
             objective: Callable[[Any], float], max_iter: int, tol: float,
             rise_tol: float = math.inf, feasible: Callable[[Any], bool] | None = None,
             reject_inaccurate: bool = False, on_solver_failure: str = "raise",
             error: type[Exception] = ScaError,
             describe: Callable[[Any], str] = lambda point: "") -> ScaResult:
    """Run the SCA loop from ``start`` under the rules of the module docstring.

    ``error`` is the exception type raised (a wing's own, e.g. Biased FL's DesignError);
    ``describe(point)`` is appended to its message (the iterate and the inputs)."""
    if on_solver_failure not in ("raise", "stop"):
        raise ValueError(f"on_solver_failure must be 'raise' or 'stop', not {on_solver_failure!r}")
    value = float(objective(start))
    run = ScaResult(point=start, objective=value, points=[start], history=[value])

    def fail(k: int, status: str, what: str):
        raise error(f"SCA iteration {k}: status={status}: {what}; {describe(run.point)}")

    for k in range(1, max_iter + 1):
        status, candidate = propose(run.point, k)
        run.statuses.append(status)
        new = float(objective(candidate)) if candidate is not None else math.nan
        if status not in ACCEPTED or candidate is None or not math.isfinite(new):
            if on_solver_failure == "stop":
                run.stop_reason = "solver_failed"
                return run
            fail(k, status, "the surrogate gave no usable point")
        inaccurate = status == "optimal_inaccurate"
        if feasible is not None and not feasible(candidate):
            if inaccurate and reject_inaccurate:
                run.stop_reason = "inaccurate_rejected"
                return run
            fail(k, status, "the post-processed point is infeasible")
        if new < run.objective:
            change = (run.objective - new) / abs(run.objective)
            run.point, run.objective = candidate, new
            run.points.append(candidate)
            run.history.append(new)
            if change <= tol:
                run.stop_reason = "tol"
                return run
            continue
        if inaccurate and reject_inaccurate:
            run.stop_reason = "inaccurate_rejected"
            return run
        if (new - run.objective) / abs(run.objective) > rise_tol:
            fail(k, status, f"the step raised the true objective from {run.objective!r} to "
                            f"{new!r} (the surrogate must majorise it)")
        run.stop_reason = "no_decrease"
        return run
    return run
