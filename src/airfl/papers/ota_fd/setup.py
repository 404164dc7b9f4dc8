"""The run block of OTA-FD's training experiments from params.yaml `ota_fd` (spec §7, §9).

Quick profile (spec §9): local datasets shrunk by s = data_fraction (same 111:1 ratio), and the
privacy budgets scaled so that the per-entry DP noise nu ~ T / (eps^2 B_i^2) equals the full
run's: eps_run = eps_full / s * sqrt(T_run / T_full) (spec §9, fact 2). Curves are named by the
full-scale eps they stand for; both eps are curve parameters (eps, eps_full).
"""

from __future__ import annotations

import math
from typing import Any

from airfl.config import profiled


def token(value: float) -> str:
    """A number as a curve-name token: 0.1 -> 0p1."""
    return f"{value:g}".replace(".", "p").replace("-", "m").replace("+", "")


def dp_curve(eps_full: float) -> str:
    return f"otafd_prop_e{token(eps_full)}"


def settings(params: dict[str, Any], key: str) -> dict[str, Any]:
    """`ota_fd.<key>` resolved for the profile."""
    return {k: profiled(v, params["profile"]) for k, v in params["ota_fd"][key].items()}


def run_eps(eps_full: float, *, data_fraction: float, rounds: int, rounds_full: int) -> float:
    """The noise-equivalent budget of a shrunk run (spec §9): eps_full / s * sqrt(T / T_full)."""
    return eps_full / data_fraction * math.sqrt(rounds / rounds_full)


def x1_curves(params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """X1's methods (step 1 of issue 15): proposed OTA-FD at each eps of the sweep, OTA FD without
    DP, noiseless FD, local only."""
    common = settings(params, "setting")
    pick = settings(params, "x1")
    base = {"scheme": "ota_fd", **{k: common[k] for k in (
        "power", "snr_db", "delta", "gamma", "clip_S", "sensitivity_mode", "an_mode")}}
    curves = {m: {**base, "method": m} for m in ("local_only", "fd_noiseless", "fd_ota_nodp")}
    def budget(eps_full: float) -> dict[str, float]:
        eps = run_eps(eps_full, data_fraction=pick["data_fraction"], rounds=pick["rounds"],
                      rounds_full=params["ota_fd"]["x1"]["rounds"]["paper"])
        return {"eps": round(eps, 12), "eps_full": eps_full}

    for eps_full in pick["eps_full"]:
        curves[dp_curve(eps_full)] = {**base, "method": "otafd_prop", **budget(eps_full)}
    for name in pick["benchmarks"]:          # spec 7 ablations at one budget (X3, X7 in part)
        method, an_mode = ("otafd_prop", "full_power") if name == "otafd_an" else (name, None)
        curves[f"{name}_e{token(pick['benchmark_eps_full'])}"] = {
            **base, "method": method, "an_mode": an_mode or base["an_mode"],
            **budget(pick["benchmark_eps_full"]), "benchmark": True}
    return curves


def x1_block(params: dict[str, Any]) -> dict[str, Any]:
    """The generic block the stages read (dataset, partition, model, training, channel, scale)."""
    pick = settings(params, "x1")
    s = pick["data_fraction"]
    return {
        "dataset": pick["dataset"], "num_devices": pick["num_devices"],
        # spec 6.1 (stated): 1110 of one class + 10 of each other; quick: times s (111:1 kept)
        "partition": {"kind": "dominant_class", "dominant": round(1110 * s),
                      "others": round(10 * s)},
        "model": {"name": "cnn_mnist_k3", "l2": 0.0, "engine": "loop"},
        "training": {"local_steps": pick["local_steps"], "batch_size": pick["batch_size"],
                     "lr": pick["eta0"], "server_lr": 1.0, "full_batch": pick["full_batch"]},
        "channel": {"mean_gain": 1.0},           # h ~ CN(0, 1) i.i.d. per round [R] (A5)
        "scale": {"rounds": pick["rounds"], "trials": pick["trials"],
                  "eval_every": pick["eval_every"], "test_subset": pick["test_subset"],
                  "train_eval_subset": pick["train_eval_subset"]},
        "curves": x1_curves(params)}
