"""Stage `partition`: split the training set over devices, measure heterogeneity, draw a heat map.

Outputs the index sets (NPZ), the per-device label histograms, each device's 1-D Wasserstein
distance to the global label distribution (LAPA eq. 20) and the derived weights (LAPA eq. 21,
and data-size weights), plus a heat map of labels per device. With `partition_per: trial`
(pipeline.trial) one split per trial, each from its trial's stream, all in the one NPZ; the
summary then lists each trial's measures and the heat map shows trial 0's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from airfl.pipeline import paths
from airfl.data import dataset_info, load_labels
from airfl.data.heterogeneity import (data_size_weights, label_histograms, wasserstein_softmax_weights,
                                      wasserstein_to_global)
from airfl.data.partition import Partition, save_trial_partitions
from airfl.data.partition_spec import declared_partition
from airfl.pipeline.registry import get_experiment
from airfl.runtime.io import provenance, write_json
from airfl.pipeline.partitioning import partition_setting, partition_trials
from airfl.pipeline.trial import partition_generator
from airfl.pipeline.stage_params import declared

@declared("partition")
def run(params: dict[str, Any], experiment_id: str) -> None:
    experiment = get_experiment(experiment_id)
    block = experiment.params(params)
    spec = block["partition"]
    per = partition_setting(block, f"{experiment.config_key}.partition_per")
    labels = load_labels(block["dataset"], params["data"]["root"], "train")
    num_classes = dataset_info(block["dataset"]).num_classes
    trials = partition_trials(block)

    def split(trial: int | None) -> Partition:
        return declared_partition(spec, labels, block["num_devices"],
                                  partition_generator(params, experiment_id, trial))

    made = {"seed": params["seed"], "dataset": block["dataset"],
            "num_devices": block["num_devices"], "partition": spec, "partition_per": per}
    if trials is None:
        partition = split(None)
        partition.to_npz(paths.partition(experiment_id), labels=labels, num_classes=num_classes)
        histograms, measures = _measures(labels, partition, num_classes)
        write_json(paths.partition_summary(experiment_id),
                   {"provenance": provenance(made), "partition_per": per, **measures})
        _heatmap(histograms, measures["wasserstein"], experiment_id, block,
                 f"Profile '{params['profile']}', seed {params['seed']}: the partition of "
                 f"{experiment_id}'s devices (the same in every trial).")
        return
    partitions = [split(trial) for trial in trials]
    save_trial_partitions(paths.partition(experiment_id), partitions, labels=labels,
                          num_classes=num_classes)
    measured = [_measures(labels, partition, num_classes) for partition in partitions]
    write_json(paths.partition_summary(experiment_id), {
        "provenance": provenance({**made, "trials": len(partitions)}), "partition_per": per,
        "trials": [{"trial": trial, **measures} for trial, (_, measures) in zip(trials, measured)]})
    histograms, measures = measured[0]
    _heatmap(histograms, measures["wasserstein"], experiment_id, block,
             f"Profile '{params['profile']}', seed {params['seed']}: the partition of "
             f"{experiment_id}'s devices in trial 0 of {len(partitions)} (one partition per "
             "trial).", "trial 0")


def _measures(labels: np.ndarray, partition: Partition, num_classes: int
              ) -> tuple[np.ndarray, dict[str, Any]]:
    """A partition's label histograms and the summary's measures of it: sizes, histograms,
    Wasserstein distances (LAPA eq. 20) and the weights derived from them (eq. 21, data size)."""
    histograms = label_histograms(labels, partition, num_classes)
    distances = wasserstein_to_global(histograms)
    sizes = histograms.sum(axis=1)
    return histograms, {"sizes": sizes, "label_histograms": histograms, "wasserstein": distances,
                        "wasserstein_softmax_weights": wasserstein_softmax_weights(distances,
                                                                                   sizes),
                        "data_size_weights": data_size_weights(sizes)}


def _heatmap(histograms: np.ndarray, distances: np.ndarray, experiment_id: str,
             block: dict[str, Any], footer: str, which: str = "") -> None:
    from airfl.figures.plotting import plt, save_figure, set_theme, sns

    set_theme()
    n = histograms.shape[0]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.25 * n + 2), 4.0))
    sns.heatmap(histograms.T, ax=ax, cmap="viridis", cbar_kws={"label": "samples"},
                xticklabels=[f"{m}\n{d:.2f}" for m, d in enumerate(distances)] if n <= 30 else False)
    ax.set(xlabel="device (and Wasserstein distance to the global label distribution)",
           ylabel="label", title=f"{block['dataset']}: {block['partition']['kind']} partition, "
                                 f"{n} devices" + (f" ({which})" if which else ""))
    ax.tick_params(axis="x", labelsize=6)
    fig.tight_layout()
    fig.text(0.01, 0.0, footer, ha="left", va="top", fontsize=7, color="#333333")
    stem = paths.partition_heatmap(experiment_id).with_suffix("")
    save_figure(fig, stem, formats=("png",))         # a diagnostic: PNG only
