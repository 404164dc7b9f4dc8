"""Stage `figure`: draw one experiment's figure from stored runs only; write what is drawn as CSV.

Also writes the experiment's summary (final mean and s.d. over trials per curve; DVC metrics).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from airfl import paths
from airfl.experiments import Experiment, get_experiment
from airfl.io import write_csv, write_json
from airfl.plotting import line_plot, save_figure


def caption(params: dict[str, Any], experiment: Experiment) -> str:
    """What the figure shows, and the profile and dataset it was made with."""
    block = experiment.params(params)
    scale = block["scale"]
    return (f"{experiment.description} Dataset: {block['dataset']}, {block['num_devices']} devices, "
            f"{block['partition']['kind']} partition, model {block['model']['name']}. "
            f"Profile '{params['profile']}': {scale['rounds']} rounds, mean and +-1 s.d. band over "
            f"{scale['trials']} trials (seed {params['seed']}).")


def _curve_frame(experiment: Experiment, params: dict[str, Any], curve: str,
                 curve_params: dict[str, Any]) -> pd.DataFrame:
    runs = pd.read_csv(paths.run_table(experiment.id, curve))
    eps = pd.read_csv(paths.privacy(experiment.id, curve))
    runs = runs.merge(eps[["trial", "round", "epsilon"]], on=["trial", "round"], how="left")
    runs = runs.dropna(subset=[experiment.figure_spec.y])
    base = experiment.curve_label(curve, curve_params)
    label = base
    if "delta" in curve_params:                      # DP curves show their final guarantee
        final_eps = eps.groupby("trial")["epsilon"].last().max()
        label = f"{base} (ε = {final_eps:.3g}, δ = {curve_params['delta']:g})" \
            if math.isfinite(final_eps) else base
    columns = ["trial", "round", "time_s", "test_accuracy", "test_loss", "train_loss", "epsilon"]
    frame = runs[[c for c in columns if c in runs.columns]].copy()
    frame.insert(0, "style_key", base)
    frame.insert(0, "label", label)
    frame.insert(0, "curve", curve)
    return frame


def run(params: dict[str, Any], experiment_id: str) -> None:
    experiment = get_experiment(experiment_id)
    curves = experiment.curves(params)
    frame = pd.concat([_curve_frame(experiment, params, c, p) for c, p in curves.items()],
                      ignore_index=True)
    spec = experiment.figure_spec
    write_csv(paths.figure(experiment_id, "csv"), frame)
    fig = line_plot(frame, spec.x, spec.y, spec.xlabel, spec.ylabel, experiment.title, spec.logy)
    save_figure(fig, paths.figure(experiment_id, "png").with_suffix(""))
    write_json(paths.summary(experiment_id), {"caption": caption(params, experiment),
                                              "final": _final_summary(frame)})


def _final_summary(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    last = frame[frame["round"] == frame.groupby("curve")["round"].transform("max")]
    summary = {}
    for curve, rows in last.groupby("curve", sort=False):
        summary[curve] = {"test_accuracy_mean": float(rows["test_accuracy"].mean()),
                          "test_accuracy_sd": float(rows["test_accuracy"].std(ddof=1))
                          if len(rows) > 1 else 0.0,
                          "epsilon_max": float(rows["epsilon"].max()),
                          "round": int(rows["round"].max())}
    return summary
