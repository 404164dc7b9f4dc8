"""Stage `design`: run a scheme's design step for every trial, from statistical CSI only."""

from __future__ import annotations

import functools
from typing import Any

import torch

from airfl import paths
from airfl.core.loop import channel_power_sequence
from airfl.core.scheme import DesignContext, build_scheme
from airfl.data import dataset_info
from airfl.experiments import get_experiment
from airfl.io import provenance, write_json
from airfl.models import build_model
from airfl.stages.setup import channel_statistics, load_partition


def model_dim(block: dict[str, Any]) -> int:
    info = dataset_info(block["dataset"])
    model = block["model"]
    return build_model(model["name"], info.image_shape, info.num_classes, model["l2"]).dim


def design_trials(params: dict[str, Any], experiment_id: str, block: dict[str, Any], curve: str,
                  curve_params: dict[str, Any], trials: range) -> list[dict[str, Any]]:
    """The scheme's design for each trial, from that trial's statistical CSI."""
    scheme = build_scheme(curve, curve_params)
    sizes = torch.tensor([len(i) for i in load_partition(experiment_id).indices], dtype=torch.long)
    dim = model_dim(block)
    designs, solved = [], {}
    for trial in trials:
        stats = channel_statistics(params, block, experiment_id, trial, curve_params)
        future = functools.partial(channel_power_sequence, params["seed"], experiment_id, trial,
                                   stats.path_gain)
        context = DesignContext(block["num_devices"], dim, block["scale"]["rounds"], sizes, stats,
                                trial, future, params["seed"], experiment_id)
        # A design depends on the trial only through its statistics (placement), unless the
        # scheme reads the trial's future channels: equal statistics reuse one solve.
        key = trial if scheme.uses_future_channels else tuple(stats.distances_m.tolist())
        if key not in solved:
            solved[key] = scheme.design(context)
        designs.append({"trial": trial, "distances_m": stats.distances_m.tolist(),
                        "path_gain": stats.path_gain.tolist(), **solved[key]})
    return designs


def run(params: dict[str, Any], experiment_id: str, curve: str) -> None:
    from airfl.stages.tune import tuned_curve

    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params, _ = tuned_curve(experiment, block, curve)
    designs = design_trials(params, experiment_id, block, curve, curve_params,
                            range(block["scale"]["trials"]))
    write_json(paths.design(experiment_id, curve), {
        "provenance": provenance({"seed": params["seed"], "curve": curve_params,
                                  "channel": block["channel"], "scale": block["scale"]}),
        "scheme": curve_params["scheme"], "trials": designs})
