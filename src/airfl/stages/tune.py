"""Stage `tune`: the step-size protocol of Biased FL spec 6.5, for any experiment with `tuning`.

`mode: fixed` keeps the panel's eta (quick profile: 0.05 for every scheme, spec 10) and makes no
tune job. `mode: grid` searches eta in {factors} x eta_max, eta_max = 2 / (mu + L) from the
reference, on the first `selection_trials` trials; the design is re-solved for each eta (eta
enters the SCA objective). Criterion: lowest final sub-optimality gap, ties by accuracy. With a
lead curve (the variant panels) only the lead has a tune job and every curve takes its eta ("one
common eta ... of the proposed scheme"); otherwise each scheme gets its own. An experiment with
`tuning_source` reuses that experiment's results (no search of its own).
A curve with a `param_grid` entry first searches its scheme parameters (stages/param_search.py,
spec 6.5 baseline grids) at the panel's eta; the eta grid then runs with the selected ones, and
the tuning file carries them ("params"), which the design and train stages apply.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from airfl import paths
from airfl.stages import param_search
from airfl.experiments import Experiment, get_experiment
from airfl.io import read_json, write_json


def searched(block: dict[str, Any]) -> bool:
    """Whether the step size is searched (mode grid) in this block's profile."""
    return block.get("tuning", {}).get("mode") == "grid"


def tuning_file(experiment: Experiment, block: dict[str, Any], curve: str) -> Path | None:
    """Where a curve's tuned step size is read from: the tune job of its lead curve (itself, or
    the proposed scheme in a variant panel), in `experiment.tuning_source` when it reuses another
    experiment's; None when the step size is not searched."""
    if not searched(block):
        return None
    return paths.tuning(experiment.tuning_source or experiment.id, lead_of(experiment, curve))


def has_tune_jobs(experiment: Experiment, block: dict[str, Any]) -> bool:
    return searched(block) and experiment.tuning_source is None


def tuned_curves(experiment: Experiment, block: dict[str, Any]) -> list[str]:
    """The curves that get a tune job: each lead curve, when the experiment searches itself."""
    if not has_tune_jobs(experiment, block):
        return []
    return [c for c in block["curves"] if lead_of(experiment, c) == c]


def tuned_curve(experiment: Experiment, block: dict[str, Any], curve: str
                ) -> tuple[dict[str, Any], float]:
    """A curve's params and server step size after tuning (the panel's eta, which every curve
    already carries, when the step size is not searched)."""
    curve_params = dict(block["curves"][curve])
    source = tuning_file(experiment, block, curve)
    if source is None:
        return curve_params, block["training"]["server_lr"]
    tuned = read_json(source)
    if lead_of(experiment, curve) == curve:          # searched scheme params (param_search.py)
        curve_params.update(tuned.get("params", {}))
    return with_eta(curve_params, tuned["eta"]), tuned["eta"]


def with_eta(curve_params: dict[str, Any], eta: float) -> dict[str, Any]:
    """The step size enters a design only where the scheme takes an `eta` parameter."""
    return {**curve_params, "eta": eta} if "eta" in curve_params else dict(curve_params)


def lead_of(experiment: Experiment, curve: str) -> str:
    return experiment.tuning_lead(curve) if experiment.tuning_lead else curve


def candidate_score(params: dict[str, Any], experiment: Experiment, block: dict[str, Any],
                    curve: str, eta: float, trials: range, reference: dict[str, Any]
                    ) -> dict[str, float]:
    """Final gap and normalised accuracy (means over the selection trials) for one eta."""
    from airfl.stages.design import design_trials
    from airfl.stages.train import run_trials

    curve_params = with_eta(block["curves"][curve], eta)
    designs = design_trials(params, experiment.id, block, curve, curve_params, trials)
    frame, _ = run_trials(params, experiment, block, curve, curve_params, eta, designs, trials,
                          progress=False, final_only=True)
    last = frame.dropna(subset=["objective"]).groupby("trial").tail(1)
    gap = float((last["objective"] - reference["F_star"]).mean())
    accuracy = float(last["test_accuracy"].mean() / reference["accuracy_star"])
    return {"eta": eta, "final_gap": gap if math.isfinite(gap) else math.inf,
            "final_normalized_accuracy": accuracy}


def run(params: dict[str, Any], experiment_id: str, curve: str) -> None:
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    if curve not in tuned_curves(experiment, block):
        raise ValueError(f"{experiment_id} {curve}: no step-size search of its own in profile "
                         f"{params['profile']!r} (tuning mode is not 'grid', the experiment reuses "
                         "another's, or the curve shares its lead curve's)")
    settings = block["tuning"]
    reference = read_json(paths.reference(experiment.reference.name, "json"))
    trials = range(settings["selection_trials"])
    chosen = param_search.search(                    # spec 6.5 baseline grids, at the panel's eta
        block, curve, block["training"]["server_lr"],
        lambda candidate, eta: candidate_score(params, experiment, candidate, curve, eta, trials,
                                               reference))
    if chosen is not None:
        block = param_search.with_curve_params(block, curve, chosen["params"])
    grid = [candidate_score(params, experiment, block, curve, f * reference["eta_max"], trials,
                            reference) for f in settings["eta_factors"]]
    best = min(grid, key=lambda g: (g["final_gap"], -g["final_normalized_accuracy"]))
    write_json(paths.tuning(experiment_id, curve), {
        "mode": settings["mode"], "eta": best["eta"], "grid": grid,
        "selection_trials": settings["selection_trials"], "eta_max": reference["eta_max"],
        **({} if chosen is None else {"params": chosen["params"], "param_search": chosen})})
