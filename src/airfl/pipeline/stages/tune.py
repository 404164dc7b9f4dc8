"""Stage `tune`: search a curve's step size (and its scheme's parameter grid) by the protocol of
airfl.pipeline.tuning; write the choice, every candidate's scores, and which chosen values sit on an edge of their
grid (`at_grid_edge`: the step size and the searched scheme parameters). The candidates of each
search (the parameter combinations, then the step sizes) run together, their gradients batched
(airfl.pipeline.tuning.candidate_scores)."""

from __future__ import annotations

import sys
from typing import Any

from airfl.runtime.io import read_json, write_json
from airfl.pipeline import param_search, paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.tuning import (candidate_scores, eta_edge, eta_search, select_eta,
                                   tuned_curves)
from airfl.pipeline.stage_params import declared


@declared("tune")
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
    eta_mode = settings.get("eta_search", "all")     # (a block composed in code may omit it)
    chosen = param_search.search(                    # baseline grids, at the panel's eta
        block, curve, block["training"]["server_lr"],
        lambda blocks, eta: candidate_scores(params, experiment, [(b, eta) for b in blocks],
                                             curve, trials, reference))
    if chosen is not None:
        block = param_search.with_curve_params(block, curve, chosen["params"])
    grid, skipped = eta_search(
        [f * reference["eta_max"] for f in settings["eta_factors"]], eta_mode,
        lambda etas: candidate_scores(params, experiment, [(block, eta) for eta in etas], curve,
                                      trials, reference))
    infeasible = [g for g in grid if isinstance(g, Exception)]
    if infeasible:
        raise infeasible[0]
    try:
        selection = select_eta(grid)
    except ValueError as error:
        raise ValueError(f"{experiment_id} {curve}: {error}") from None
    edges = {**({} if chosen is None else chosen["at_grid_edge"]),
             **eta_edge(selection["eta"], settings["eta_factors"], reference["eta_max"])}
    if edges:      # the best value may lie beyond the grid: say so where the run is watched
        print(f"{experiment_id} {curve}: choice on a grid edge: "
              + ", ".join(f"{k} {v}" for k, v in sorted(edges.items())), file=sys.stderr)
    searched = "" if chosen is None else f", parameters {chosen['params']}"
    print(f"tune {experiment_id} {curve}: {len(grid)} step sizes scored on {len(trials)} "
          f"selection trials{searched}; "
          f"chose eta {selection['eta']:.4g} (score {selection['score']:.4g} "
          f"+- {selection['score_se']:.2g})", file=sys.stderr)
    write_json(paths.tuning(experiment_id, curve), {
        "mode": settings["mode"], **selection, "at_grid_edge": edges, "grid": grid,
        "eta_search": eta_mode,
        **({"etas_not_run": skipped} if skipped else {}),
        "selection_trials": settings["selection_trials"], "eta_max": reference["eta_max"],
        **({} if chosen is None else {"params": chosen["params"], "param_search": chosen})})
