"""Stage `train`: run every trial of one curve; write the per-round table and records."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from airfl import paths
from airfl.core.loop import TrialSetup, run_trial
from airfl.core.scheme import build_scheme
from airfl.data import dataset_info
from airfl.experiments import Experiment, get_experiment
from airfl.io import provenance, read_json, record_run, write_csv, write_json
from airfl.models import build_model
from airfl.stages import StageError
from airfl.stages.setup import (channel_statistics, client_data, load_partition, test_data,
                                torch_device, train_eval_data)


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


def stored_designs(path: Path, trials: int) -> list[dict[str, Any]]:
    """The design stage's per-trial designs. A file that is not such a design (hand-edited,
    truncated, garbage) is removed, so that the next run rebuilds it instead of this stage
    crashing on it again (issue 18, item 5)."""
    try:
        designs = json.loads(path.read_text())["trials"]
        if not (isinstance(designs, list) and len(designs) >= trials
                and all(isinstance(d, dict) for d in designs[:trials])):
            raise ValueError(f"it holds no design for each of the {trials} trials")
    except (ValueError, KeyError, TypeError) as error:
        path.unlink(missing_ok=True)
        raise StageError(f"{path} is not a design made by the design stage ({error}); removed "
                         "it: run again and the design stage rebuilds it") from None
    return designs


def check_finite_losses(frame: pd.DataFrame, experiment_id: str, curve: str) -> None:
    """Stop a run whose loss became NaN or infinite at an evaluated round (a diverged step size,
    an overflow) before it writes anything a figure would draw (issue 18, item 3). Rounds that
    were not evaluated hold NaN by design and are not looked at."""
    evaluated = frame[frame["test_accuracy"].notna()]
    for column in ("train_loss", "test_loss", "objective"):
        if column not in evaluated:
            continue
        values = evaluated[column].astype(float)
        bad = evaluated[~values.map(math.isfinite)]
        if len(bad):
            first = bad.sort_values(["trial", "round"]).iloc[0]
            raise StageError(
                f"{experiment_id} curve {curve!r}: {column} is {first[column]} at round "
                f"{int(first['round'])} of trial {int(first['trial'])} (training diverged); no "
                "run table written. Lower the step size or check the curve's parameters.")


def run(params: dict[str, Any], experiment_id: str, curve: str, progress: bool = True) -> None:
    from airfl.stages.tune import tuned_curve

    started = time.perf_counter()
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params, server_lr = tuned_curve(experiment, block, curve)
    curve_params = calibrated(experiment, curve_params)
    designs = stored_designs(paths.design(experiment_id, curve), block["scale"]["trials"])
    frame, records = run_trials(params, experiment, block, curve, curve_params, server_lr, designs,
                                range(block["scale"]["trials"]), progress)
    check_finite_losses(frame, experiment_id, curve)
    write_csv(paths.run_table(experiment_id, curve), frame)
    write_json(paths.run_records(experiment_id, curve),     # what the privacy stage composes
               {"curve": curve, "params": curve_params, "trials": records})
    write_json(paths.run_info(experiment_id, curve), {
        "provenance": provenance({"seed": params["seed"], "profile": params["profile"],
                                  "experiment": {k: v for k, v in block.items() if k != "curves"},
                                  "curve": curve_params, "server_lr": server_lr,
                                  # as params.yaml states it (before tuning and calibration):
                                  # the figure stage checks it is current (issue 18, item 2)
                                  "declared_curve": block["curves"][curve]})})
    record_run(paths.run_table(experiment_id, curve), device=str(torch_device(params)),
               wall_time_s=round(time.perf_counter() - started, 3))
