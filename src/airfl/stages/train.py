"""Stage `train`: run every trial of one curve; write the per-round table and records."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
import torch

from airfl import paths
from airfl.core.loop import TrialSetup, run_trial
from airfl.core.scheme import build_scheme
from airfl.data import dataset_info
from airfl.experiments import get_experiment
from airfl.io import provenance, read_json, record_run, write_csv, write_json
from airfl.models import build_model
from airfl.stages.setup import (channel_statistics, client_data, load_partition, test_data,
                                torch_device, train_eval_data)


def run(params: dict[str, Any], experiment_id: str, curve: str, progress: bool = True) -> None:
    torch.set_num_threads(params["threads"])
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params = experiment.curves(params)[curve]
    scheme = build_scheme(curve, curve_params)
    designs = read_json(paths.design(experiment_id, curve))["trials"]
    device = torch_device(params)
    data = client_data(params, block, load_partition(experiment_id), device)
    test = test_data(params, block, device)
    train_eval = train_eval_data(params, block, data, experiment_id)
    info = dataset_info(block["dataset"])
    model = build_model(block["model"]["name"], info.image_shape, info.num_classes,
                        block["model"]["l2"], block["model"]["engine"])
    training, scale = block["training"], block["scale"]
    tables, records, started = [], [], time.perf_counter()
    for trial in range(scale["trials"]):
        setup = TrialSetup(experiment_id, params["seed"], trial, model, data, test, train_eval,
                           channel_statistics(params, block, experiment_id, trial), scale["rounds"],
                           scale["eval_every"], training["local_steps"], training["batch_size"],
                           training["lr"], training["server_lr"])
        table, trial_records = run_trial(setup, scheme, designs[trial], progress)
        tables.append(table.assign(trial=trial))
        records.append({"trial": trial, "rounds": trial_records})
    frame = pd.concat(tables, ignore_index=True)
    first = ["trial", "round", "time_s", "test_accuracy", "test_loss", "train_loss", "train_accuracy"]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    write_csv(paths.run_table(experiment_id, curve), frame)
    write_json(paths.run_records(experiment_id, curve), {"curve": curve, "trials": records})
    write_json(paths.run_info(experiment_id, curve), {
        "provenance": provenance({"seed": params["seed"], "profile": params["profile"],
                                  "experiment": {k: v for k, v in block.items() if k != "curves"},
                                  "curve": curve_params})})
    record_run(paths.run_table(experiment_id, curve), device=str(device),
               wall_time_s=round(time.perf_counter() - started, 3))
