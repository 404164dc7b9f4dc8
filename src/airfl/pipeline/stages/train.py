"""Stage `train`: run every trial of one curve; write the per-round table and records."""

from __future__ import annotations

import time
from typing import Any

from airfl.io import provenance, read_json, record_run, write_csv, write_json
from airfl.pipeline import paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.runs import calibrated, run_trials
from airfl.pipeline.trial import torch_device
from airfl.pipeline.tuning import tuned_curve


def run(params: dict[str, Any], experiment_id: str, curve: str, progress: bool = True) -> None:
    started = time.perf_counter()
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params, server_lr = tuned_curve(experiment, block, curve)
    curve_params = calibrated(experiment, curve_params)
    designs = read_json(paths.design(experiment_id, curve))["trials"]
    frame, records = run_trials(params, experiment, block, curve, curve_params, server_lr, designs,
                                range(block["scale"]["trials"]), progress)
    write_csv(paths.run_table(experiment_id, curve), frame)
    write_json(paths.run_records(experiment_id, curve),     # what the privacy stage composes
               {"curve": curve, "params": curve_params, "trials": records})
    write_json(paths.run_info(experiment_id, curve), {
        "provenance": provenance({"seed": params["seed"], "profile": params["profile"],
                                  "experiment": {k: v for k, v in block.items() if k != "curves"},
                                  "curve": curve_params, "server_lr": server_lr})})
    record_run(paths.run_table(experiment_id, curve), device=str(torch_device(params)),
               wall_time_s=round(time.perf_counter() - started, 3))
