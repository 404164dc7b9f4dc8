"""Stage `calibrate`: parameters an experiment measures before training, from one noise-free
round at theta_0 (e.g. CDPB's clip norm W_clip = the median client update norm).

The core measures every client's upload norm at theta_0 of trial 0 with round 1's data draws (the
uploads the first round of that trial computes), the experiment's `calibration` hook turns them
into curve parameters, and the train stage merges them into every curve (stages/train.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from airfl.core.loop import initial_update_norms
from airfl.runtime.io import provenance, write_json
from airfl.pipeline import paths
from airfl.pipeline.registry import get_experiment
from airfl.pipeline.trial import channel_statistics, curve_inputs, trial_setup
from airfl.pipeline.stage_params import declared

CALIBRATION_TRIAL = 0


def update_norms(params: dict[str, Any], experiment_id: str) -> np.ndarray:
    """Norms of the clients' noise-free uploads at theta_0 of trial 0 (core.initial_update_norms)."""
    torch.set_num_threads(params["threads"])
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    first_curve = next(iter(block["curves"].values()))         # placement only (no channel use)
    setup = trial_setup(params, experiment, block, curve_inputs(params, experiment, block,
                                                                evaluate=False),
                        CALIBRATION_TRIAL, server_lr=1.0, rounds=1,
                        statistics=channel_statistics(params, block, experiment_id,
                                                      CALIBRATION_TRIAL, first_curve,
                                                      f"{experiment.config_key}.channel"))
    return initial_update_norms(setup).cpu().numpy()


@declared("calibrate")
def run(params: dict[str, Any], experiment_id: str) -> None:
    experiment = get_experiment(experiment_id)
    if experiment.calibration is None:
        raise ValueError(f"experiment {experiment_id!r} has no calibration")
    norms = update_norms(params, experiment_id)
    block = experiment.params(params)
    write_json(paths.calibration(experiment_id), {
        "provenance": provenance({"seed": params["seed"], "profile": params["profile"],
                                  "experiment": {k: v for k, v in block.items() if k != "curves"},
                                  "trial": CALIBRATION_TRIAL}),
        "params": experiment.calibration(norms),
        "update_norms": {"n": int(norms.size), "median": float(np.median(norms)),
                         "q10": float(np.quantile(norms, 0.1)),
                         "q90": float(np.quantile(norms, 0.9)),
                         "min": float(norms.min()), "max": float(norms.max())}})
