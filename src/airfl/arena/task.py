"""The arena's common task, declared once (params.yaml `arena`): the generic run block every
scheme's curves share, so that every scheme of a figure sees the same devices, data split,
placement, fading, mini-batches and rounds (one experiment id: common random numbers, streams
from (seed, experiment, trial, round, client) as everywhere).

The channel: devices uniform in a disc around a base station with one antenna (`radio.antennas`
of them for the entrants that need a multi-antenna one: AirFL-DP), log-distance path
loss Lambda_m = 10^(-PL(d_m)/10) with PL(d) = PL0 + 10 n log10(d / 1 m), Rayleigh block fading
|h_{m,t}|^2 = Lambda_m Exp(1) (airfl.core.loop.draw_channel_power). The power budget and the
noise: every device's transmit power P (dBm) over the bandwidth B, receiver noise N0 B; the
schemes that state their budget as a cell-edge SNR get the one these imply (`edge_snr_db`).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from airfl.params.declare import resolve


def edge_snr_db(radio: dict[str, Any]) -> float:
    """Mean receive SNR of a device at the cell edge, dB: P - N0 - 10 log10(B) - PL(R), with
    PL(R) = PL0 + 10 n log10(R / 1 m) (the log-distance law of airfl.channel.pathloss)."""
    pathloss_db = radio["pl0_db"] + 10.0 * radio["exponent"] * math.log10(radio["radius_m"])
    return (radio["power_dbm"] - radio["n0_dbm_per_hz"]
            - 10.0 * math.log10(radio["bandwidth_hz"]) - pathloss_db)


def settings(params: dict[str, Any]) -> dict[str, Any]:
    """The arena block with every per-profile value resolved for params' profile (`lapa`: its
    LAPA entrants' allocation settings); stops with a one-line message when the SNR figure's eps target is not one of the eps targets (its
    schemes that do not depend on the SNR reuse their curve at that target)."""
    profile = params["profile"]
    arena = params["arena"]
    task = {k: resolve(v, profile) for k, v in arena["task"].items()}
    radio = {k: resolve(v, profile) for k, v in arena["radio"].items()}
    privacy = {k: resolve(v, profile) for k, v in arena["privacy"].items()}
    if privacy["snr_eps"] not in privacy["eps"]:
        raise ValueError(f"arena.privacy.snr_eps = {privacy['snr_eps']!r} ({profile}): must be "
                         f"one of arena.privacy.eps {privacy['eps']}")
    return {"task": task, "radio": radio, "privacy": privacy, "lapa": dict(arena["lapa"])}


def snr_sweep_db(radio: dict[str, Any]) -> dict[float, float]:
    """Each power budget of the accuracy-vs-SNR figure (dBm) with the edge SNR it implies (dB,
    rounded to 1e-6 dB so that it serves as a group key)."""
    return {float(p): round(edge_snr_db({**radio, "power_dbm": p}), 6)
            for p in radio["snr_sweep_power_dbm"]}


def run_block(params: dict[str, Any], curves: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The generic run block (airfl.core.experiments.Experiment.compose) of the arena's task with
    these curves."""
    arena = settings(params)
    task, radio = arena["task"], arena["radio"]
    return {
        "dataset": task["dataset"], "num_devices": task["num_devices"],
        "partition": dict(task["partition"]),
        "model": {"name": task["model"], "l2": 0.0, "engine": "auto"},
        "training": {"local_steps": task["local_steps"], "batch_size": task["batch_size"],
                     "lr": task["lr"], "server_lr": 1.0},
        "channel": {"model": "geometry", "radius_m": radio["radius_m"],
                    "min_radius_m": radio["min_radius_m"], "placement": "uniform",
                    "pathloss": {"model": "log_distance", "pl0_db": radio["pl0_db"],
                                 "exponent": radio["exponent"]},
                    "bandwidth_hz": radio["bandwidth_hz"]},
        "scale": task["scale"],
        "curves": curves,
    }


def trial_statistics(params: dict[str, Any], experiment_id: str, trial: int):
    """The statistical CSI a design of the arena sees in trial `trial`: the devices' distances
    (uniform in the disc, from the trial's (seed, experiment, 'trial', trial, 'placement')
    stream), their log-distance path gains Lambda_m and the cell edge's as the reference, as
    the design stage draws them for the arena's block (`channel.model: geometry`, uniform
    placement, no physical E_s: tests/arena checks the two equal). The arena's audit reads it to
    rebuild a trial's design without the pipeline."""
    from airfl.channel.geometry import uniform_disc
    from airfl.channel.pathloss import gain_from_db, log_distance_db
    from airfl.core.scheme import ChannelStatistics
    from airfl.runtime.rng import torch_generator

    arena = settings(params)
    radio, n = arena["radio"], arena["task"]["num_devices"]
    generator = torch_generator(params["seed"], experiment_id, "trial", trial, "placement")
    distances = uniform_disc(n, radius=radio["radius_m"], generator=generator,
                             min_radius=radio["min_radius_m"])

    def gain(d: torch.Tensor) -> torch.Tensor:
        return gain_from_db(log_distance_db(d, pl0_db=radio["pl0_db"],
                                            exponent=radio["exponent"]))

    edge = gain(torch.tensor([float(radio["radius_m"])], dtype=torch.float64))
    return ChannelStatistics(path_gain=gain(distances), reference_gain=float(edge[0]),
                             bandwidth_hz=float(radio["bandwidth_hz"]), distances_m=distances)


def partition(params: dict[str, Any], experiment_id: str):
    """The arena's data split as the partition stage draws it (one for the experiment, every
    trial's: the block leaves `partition_per` at `experiment`): its declared `partition` from
    the stream (seed, experiment, 'partition') over the training labels (params.yaml
    `data.root`), and its label histograms [K, C]. The arena's audit reads it to rebuild a
    design that reads the data sizes |D_k| and the histograms (LAPA's eqs. 18-21) without the
    pipeline; tests/arena check it equal to the partition stage's."""
    from airfl.data import dataset_info, load_labels
    from airfl.data.heterogeneity import label_histograms
    from airfl.data.partition_spec import declared_partition, partition_stream

    task = settings(params)["task"]
    labels = load_labels(task["dataset"], params["data"]["root"], "train")
    split = declared_partition(dict(task["partition"]), labels, task["num_devices"],
                               partition_stream(params["seed"], experiment_id))
    return split, label_histograms(labels, split, dataset_info(task["dataset"]).num_classes)
