"""Designing and training the trials of one curve: the work of the `design` and `train` stages,
and of the `tune` stage's candidates (which design and train on the selection trials)."""

from __future__ import annotations

import functools
from typing import Any

import pandas as pd
import torch

from airfl.core.lockstep import batchable, local_batchable, run_lockstep
from airfl.core.loop import channel_power_sequence, run_trial
from airfl.core.scheme import ChannelStatistics, DesignContext
from airfl.data import dataset_info
from airfl.core.experiments import TRAINING_METRICS, Experiment
from airfl.runtime.io import read_json
from airfl.models.flat import build_model
from airfl.pipeline import paths
from airfl.pipeline.registry import build_scheme
from airfl.pipeline.partitioning import partition_trials
from airfl.pipeline.trial import (CurveInputs, channel_statistics, curve_inputs, load_partition,
                                 trial_setup)


def model_dim(block: dict[str, Any]) -> int:
    info = dataset_info(block["dataset"])
    model = block["model"]
    return build_model(model["name"], info.image_shape, info.num_classes, model["l2"]).dim


def design_trials(params: dict[str, Any], experiment_id: str, block: dict[str, Any], curve: str,
                  curve_params: dict[str, Any], trials: range) -> list[dict[str, Any]]:
    """The scheme's design for each trial, from that trial's statistical CSI and partition
    (the experiment's one, or the trial's own: `trial.partition_setting`; a stage checks the
    block's channel model first, naming its key: `trial.check_channel_model`)."""
    scheme = build_scheme(curve, curve_params, block["training"]["lr"])
    per_trial = partition_trials(block) is not None
    dim = model_dim(block)
    designs, solved = [], {}
    for trial in trials:
        partition = load_partition(experiment_id, block, trial)
        sizes = torch.tensor([len(i) for i in partition.indices], dtype=torch.long)
        stats = channel_statistics(params, block, experiment_id, trial, curve_params)
        future = functools.partial(channel_power_sequence, params["seed"], experiment_id, trial,
                                   stats.path_gain)
        context = DesignContext(block["num_devices"], dim, block["scale"]["rounds"], sizes, stats,
                                trial, future, params["seed"], experiment_id,
                                label_histograms=partition.labels_per_device)
        # A design depends on the trial only through its statistics (placement) and its
        # partition, unless the scheme reads the trial's future channels: equal statistics on
        # one shared partition reuse one solve.
        key = trial if scheme.uses_future_channels or per_trial else \
            tuple(stats.distances_m.tolist())
        if key not in solved:
            solved[key] = scheme.design(context)
        designs.append({"trial": trial, "statistics": stats.to_record(), **solved[key]})
    return designs


def trial_jobs(params: dict[str, Any], experiment: Experiment, block: dict[str, Any], curve: str,
               curve_params: dict[str, Any], server_lr: float, designs: list[dict[str, Any]],
               trials: range, final_only: bool = False, shared: CurveInputs | None = None,
               eval_last: int = 0, training_metrics: bool = True
               ) -> list[tuple[Any, Any, dict[str, Any]]]:
    """(set-up, scheme, design) of each given trial of one curve, each on the channel
    statistics its design stored; `shared`: the experiment's data and model when already
    loaded (a tune job's candidates share one copy, and so can run in lockstep);
    `training_metrics`: whether the runs measure them (`Experiment.measures_training`; with
    `shared`, its training subsets decide). A
    `final_only` job (a tune candidate) of a scheme that trains on a fixed subset of the clients
    also logs the objective over them (`Scheme.trained_clients`)."""
    torch.set_num_threads(params["threads"])
    scheme = build_scheme(curve, curve_params, block["training"]["lr"])
    shared = shared or curve_inputs(params, experiment, block, training_metrics=training_metrics)
    jobs = []
    for trial, stored in zip(trials, designs):
        design, statistics = stored_design(stored)
        setup = trial_setup(params, experiment, block, shared, trial, server_lr=server_lr,
                            statistics=statistics, final_only=final_only,
                            eval_last=eval_last, objective_clients=scheme.trained_clients(design) if final_only
                            else None)
        jobs.append((setup, scheme, design))
    return jobs


def stored_design(stored: dict[str, Any]) -> tuple[dict[str, Any], ChannelStatistics]:
    """A design as `design_trials` stores it, split into what the scheme reads and the
    channel statistics it was made for."""
    return ({k: v for k, v in stored.items() if k != "statistics"},
            ChannelStatistics.from_record(stored["statistics"]))


def run_jobs(experiment: Experiment, jobs: list[tuple[Any, Any, dict[str, Any]]],
             progress: bool = False, batched: bool = False) -> list[tuple[pd.DataFrame, list]]:
    """Run the jobs' trials: with `batched`, in lockstep where they allow it
    (airfl.core.lockstep: full-batch gradient uploads, their gradients one batched computation,
    equal to one-by-one runs up to float reassociation; local SGD where `trial_batching` picks
    the batched form for the model and device, bit-identical to one-by-one runs on CPU), else
    one after the other."""
    trainer = experiment.trainer or run_trial
    if batched and experiment.trainer is None and (batchable(jobs) or local_batchable(jobs)):
        return run_lockstep(jobs)
    return [trainer(setup, scheme, design, progress) for setup, scheme, design in jobs]


def trial_frame(tables: list[pd.DataFrame], trials: range) -> pd.DataFrame:
    """The trials' per-round tables as one frame, its leading columns in a fixed order."""
    return ordered_columns(pd.concat([t.assign(trial=trial) for t, trial in zip(tables, trials)],
                                     ignore_index=True))


def ordered_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """A run table's leading columns in a fixed order, the others as they first appear (the
    training metrics only where the run measured them: `Experiment.measures_training`)."""
    first = ["trial", "round", "time_s", "test_accuracy", "test_loss", "train_loss", "train_accuracy"]
    first = [c for c in first if c in frame.columns or c not in TRAINING_METRICS]
    return frame[first + [c for c in frame.columns if c not in first]]


def run_trials(params: dict[str, Any], experiment: Experiment, block: dict[str, Any], curve: str,
               curve_params: dict[str, Any], server_lr: float, designs: list[dict[str, Any]],
               trials: range, progress: bool = True, final_only: bool = False,
               batched: bool = False, eval_last: int = 0, training_metrics: bool = True
               ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Run the given trials of one curve, each on the channel statistics its design stored,
    one after the other or, with `batched`, in lockstep where they allow it (`run_jobs`);
    returns the per-round table and the records (`training_metrics`: `trial_jobs`)."""
    jobs = trial_jobs(params, experiment, block, curve, curve_params, server_lr, designs, trials,
                      final_only, eval_last=eval_last, training_metrics=training_metrics)
    results = run_jobs(experiment, jobs, progress, batched)
    records = [{"trial": trial, "rounds": r} for trial, (_, r) in zip(trials, results)]
    return trial_frame([table for table, _ in results], trials), records


def derived(experiment: Experiment, curve: str, curve_params: dict[str, Any],
            curves) -> dict[str, Any]:
    """The curve's parameters with those its derivations (stage `derive`) stored for it, among
    the experiment's `curves` of the profile (a derivation without sources there: none)."""
    out = dict(curve_params)
    for derivation in experiment.derivations_of(curve, curves):
        out.update(read_json(paths.derived(experiment.id, derivation.name))["params"][curve])
    return out


def calibrated(experiment: Experiment, curve_params: dict[str, Any]) -> dict[str, Any]:
    """The curve's parameters with the experiment's stored calibration (stage `calibrate`)."""
    if experiment.calibration is None:
        return curve_params
    return {**curve_params, **read_json(paths.calibration(experiment.id))["params"]}


def design_made_with(params: dict[str, Any], block: dict[str, Any],
                     curve_params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a curve's stored design is made with, as its provenance records them:
    the design stage writes them and the train stage checks them before training on it."""
    return {"seed": params["seed"], "curve": curve_params, "channel": block["channel"],
            "scale": block["scale"]}
