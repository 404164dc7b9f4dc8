"""Stage `design`: run a scheme's design step for every trial, from statistical CSI only."""

from __future__ import annotations

from typing import Any

import torch

from airfl import paths
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


def run(params: dict[str, Any], experiment_id: str, curve: str) -> None:
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params = experiment.curves(params)[curve]
    scheme = build_scheme(curve, curve_params)
    sizes = torch.tensor([len(i) for i in load_partition(experiment_id).indices], dtype=torch.long)
    dim = model_dim(block)
    designs = []
    for trial in range(block["scale"]["trials"]):
        stats = channel_statistics(params, block, experiment_id, trial)
        context = DesignContext(block["num_devices"], dim, block["scale"]["rounds"], sizes, stats)
        designs.append({"trial": trial, "distances_m": stats.distances_m.tolist(),
                        "path_gain": stats.path_gain.tolist(), **scheme.design(context)})
    write_json(paths.design(experiment_id, curve), {
        "provenance": provenance({"seed": params["seed"], "curve": curve_params,
                                  "channel": block["channel"], "scale": block["scale"]}),
        "scheme": curve_params["scheme"], "trials": designs})
