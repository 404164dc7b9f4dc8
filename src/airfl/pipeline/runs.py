"""Designing and training the trials of one curve: the work of the `design` and `train` stages,
and of the `tune` stage's candidates (which design and train on the selection trials)."""

from __future__ import annotations

import functools
from typing import Any

import pandas as pd
import torch

from airfl.core.loop import TrialSetup, channel_power_sequence, run_trial
from airfl.core.scheme import DesignContext
from airfl.data import dataset_info
from airfl.experiments import Experiment
from airfl.io import read_json
from airfl.models import build_model
from airfl.pipeline import paths
from airfl.pipeline.registry import build_scheme
from airfl.pipeline.trial import (channel_statistics, client_data, load_partition, test_data,
                                  torch_device, train_eval_data)


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


def run_trials(params: dict[str, Any], experiment: Experiment, block: dict[str, Any], curve: str,
               curve_params: dict[str, Any], server_lr: float, designs: list[dict[str, Any]],
               trials: range, progress: bool = True, final_only: bool = False
               ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Run the given trials of one curve; returns the per-round table and the records."""
    torch.set_num_threads(params["threads"])
    scheme = build_scheme(curve, curve_params)
    device = torch_device(params)
    data = client_data(params, block, load_partition(experiment.id), device)
    test = test_data(params, block, device)
    train_eval = train_eval_data(params, block, data, experiment.id)
    info = dataset_info(block["dataset"])
    model = build_model(block["model"]["name"], info.image_shape, info.num_classes,
                        block["model"]["l2"], block["model"]["engine"])
    training, scale = block["training"], block["scale"]
    reference = read_json(paths.reference(experiment.reference.name, "json")) \
        if experiment.reference else {}
    never = 10 ** 9                                          # final_only: evaluate at the end
    tables, records = [], []
    for trial, design in zip(trials, designs):
        setup = TrialSetup(experiment.id, params["seed"], trial, model, data, test, train_eval,
                           channel_statistics(params, block, experiment.id, trial, curve_params),
                           scale["rounds"], never if final_only else scale["eval_every"],
                           training["local_steps"], training["batch_size"], training["lr"],
                           server_lr, upload=training.get("upload", "delta"),
                           full_batch=training.get("full_batch", False),
                           projection_radius=reference.get("projection_radius"),
                           horizon_s=scale.get("horizon_s"),
                           eval_every_s=None if final_only else scale.get("eval_every_s"),
                           track_objective=bool(reference),
                           local_epochs=training.get("local_epochs"))
        table, trial_records = run_trial(setup, scheme, design, progress)
        tables.append(table.assign(trial=trial))
        records.append({"trial": trial, "rounds": trial_records})
    frame = pd.concat(tables, ignore_index=True)
    first = ["trial", "round", "time_s", "test_accuracy", "test_loss", "train_loss", "train_accuracy"]
    return frame[first + [c for c in frame.columns if c not in first]], records


def calibrated(experiment: Experiment, curve_params: dict[str, Any]) -> dict[str, Any]:
    """The curve's parameters with the experiment's stored calibration (stage `calibrate`)."""
    if experiment.calibration is None:
        return curve_params
    return {**curve_params, **read_json(paths.calibration(experiment.id))["params"]}
