"""Stage `design`: run a scheme's design step for every trial, from statistical CSI only."""

from __future__ import annotations

from typing import Any

from airfl.runtime.io import provenance, write_json
from airfl.pipeline import paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.effective import effective_curve
from airfl.pipeline.runs import design_made_with, design_trials
from airfl.pipeline.trial import check_channel_model
from airfl.pipeline.stage_params import declared


@declared("design")
def run(params: dict[str, Any], experiment_id: str, curve: str) -> None:
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    curve_params, _ = effective_curve(experiment, block, curve, with_calibration=False)
    check_channel_model(block, f"{experiment.config_key}.channel")
    designs = design_trials(params, experiment_id, block, curve, curve_params,
                            range(block["scale"]["trials"]))
    write_json(paths.design(experiment_id, curve), {
        "provenance": provenance(design_made_with(params, block, curve_params)),
        "scheme": curve_params["scheme"], "trials": designs})
