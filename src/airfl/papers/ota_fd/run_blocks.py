"""The run blocks of OTA-FD's training experiments X1-X5, X7 from params.yaml `ota_fd`.

`ota_fd.x1` holds the CNN-MNIST training setting; every other experiment `ota_fd.x<n>` takes
X1's setting keys (`SETTING`) and overrides the ones it names, and says which curves it runs
(`CURVE_KEYS`, none inherited): `methods` once, `dp_methods` at every full-scale budget of
`eps_full` (or one run with per-WD budgets drawn from `eps_uniform`/`delta_uniform`), the
fixed-T sweep `fixed_T` and the SNR sweep `snr_grid` of the proposed method, `ablations` at
`benchmark_eps_full`. `otafl_dp` always runs at the FL budgets of `setting.fl` (stated).

Quick profile: local datasets shrunk by s = data_fraction (same 111:1 ratio), and the
privacy budgets scaled so that the per-entry DP noise nu ~ T / (eps^2 B_i^2) equals the full
run's: eps_run = eps_full / s * sqrt(T_run / T_full) (fact 2); a fixed-T curve keeps
its literal T, so its budget is scaled by 1/s only. Curves are named by the full-scale eps
they stand for; both eps are curve parameters (eps, eps_full).
"""

from __future__ import annotations

import math
from typing import Any

from airfl.params.declare import resolve
from airfl.data import substitute_if_missing
from airfl.papers.ota_fd.analytic_figures import closed_form_rounds
from airfl.papers.ota_fd.calibration import PREFIX
from airfl.papers.ota_fd.schemes import FL

# X1's training setting, inherited by every other experiment unless it overrides a key
SETTING = ("dataset", "model", "offline_substitute", "precision", "num_devices", "dominant",
           "others", "data_fraction", "full_batch", "local_steps", "batch_size", "eta0",
           "rounds", "trials", "eval_every", "test_subset", "train_eval_subset")
CURVE_KEYS = ("methods", "dp_methods", "eps_full", "eps_uniform", "delta_uniform",
              "benchmark_eps_full", "ablations", "fixed_T", "snr_grid", "eta0_grid")
SCHEME_KEYS = ("power", "snr_db", "delta", "gamma", "clip_S", "sensitivity_mode", "an_mode")


def token(value: float) -> str:
    """A number as a curve-name token: 0.1 -> 0p1."""
    return f"{value:g}".replace(".", "p").replace("-", "m").replace("+", "")


def dp_curve(eps_full: float) -> str:
    return f"otafd_prop_e{token(eps_full)}"


def settings(params: dict[str, Any], key: str) -> dict[str, Any]:
    """`ota_fd.<key>` resolved for the profile; X1's setting keys where it names none."""
    section, profile = params["ota_fd"], params["profile"]
    own = {k: resolve(v, profile) for k, v in section[key].items()}
    if key == "x1":
        return own
    base = {k: resolve(v, profile) for k, v in section["x1"].items() if k in SETTING}
    return {**base, **own}


def run_eps(eps_full: float, *, data_fraction: float, rounds: int, rounds_full: int) -> float:
    """The noise-equivalent budget of a shrunk run: eps_full / s * sqrt(T / T_full)."""
    return eps_full / data_fraction * math.sqrt(rounds / rounds_full)


def _fl_curve(base: dict[str, Any], fl: dict[str, Any], method: str) -> dict[str, Any]:
    """An FL benchmark: FedSGD/FedAvg with a global model, clipped to C; `otafl_dp` at the FL
    budgets eps_i ~ U(1e6, 1e7), delta_i ~ U(1e-3, 1e-2) (stated in Appendix E, no
    setting named; linear uniform, our reading)."""
    curve = {**base, "method": method, "clip_C": fl["clip_C"]}
    if method == "otafl_dp":
        curve.update(eps_uniform=list(fl["eps_uniform"]), delta_uniform=list(fl["delta_uniform"]))
    return curve


def curves_of(params: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """The curves of experiment `ota_fd.<key>` (see the module docstring)."""
    common = params["ota_fd"]["setting"]
    pick = settings(params, key)
    s, rounds = pick["data_fraction"], pick["rounds"]
    rounds_full = resolve(params["ota_fd"][key].get("rounds", params["ota_fd"]["x1"]["rounds"]),
                          "paper")
    base = {"scheme": "ota_fd", **{k: common[k] for k in SCHEME_KEYS}}

    def budget(eps_full: float, literal_T: bool = False) -> dict[str, float]:
        eps = eps_full / s if literal_T else run_eps(eps_full, data_fraction=s, rounds=rounds,
                                                     rounds_full=rounds_full)
        return {"eps": round(eps, 12), "eps_full": eps_full}

    curves: dict[str, dict[str, Any]] = {}
    for method in pick.get("methods", []):
        curves[method] = _fl_curve(base, common["fl"], method) if method in FL else \
            {**base, "method": method}
    for method in pick.get("dp_methods", []):
        if "eps_uniform" in pick:           # per-WD budgets (X2, stated for ResNet-CIFAR10)
            lo, hi = pick["eps_uniform"]
            curves[method] = {**base, "method": method,
                              "eps_uniform": [budget(lo)["eps"], budget(hi)["eps"]],
                              "eps_uniform_full": [lo, hi],
                              "delta_uniform": list(pick["delta_uniform"])}
            continue
        for eps_full in pick["eps_full"]:
            name = dp_curve(eps_full) if method == "otafd_prop" else f"{method}_e{token(eps_full)}"
            curves[name] = {**base, "method": method, **budget(eps_full)}
    for T in pick.get("fixed_T", []):        # otafd_fixedT: literal T, eps / s
        for eps_full in pick["eps_full"]:
            curves[f"otafd_fixedt_e{token(eps_full)}_t{T}"] = {
                **base, "method": "otafd_prop", "T": int(T), **budget(eps_full, literal_T=True),
                "T_star": closed_form_rounds(params["ota_fd"]["analysis"], eps_full),
                # Theorem 1's Omega on the run's trajectory (theorem1.py): X6's L_1, L_2 [R]
                "theory": {k: params["ota_fd"]["analysis"][k] for k in ("L1", "L2")}}
    for snr in pick.get("snr_grid", []):     # X5: the proposed design across SNR
        for eps_full in pick["eps_full"]:
            curves[f"otafd_prop_e{token(eps_full)}_snr{token(snr)}"] = {
                **base, "method": "otafd_prop", "snr_db": float(snr), **budget(eps_full)}
    for eta0 in pick.get("eta0_grid", []):   # eta_0 calibration runs (calibration.py)
        curves[f"{PREFIX}{token(eta0)}"] = {**base, "method": "fd_noiseless", "eta0": float(eta0)}
    for name in pick.get("ablations", []):   # X7 (and X1's paper benchmarks) at one budget
        method, extra = {"otafd_an": ("otafd_prop", {"an_mode": "full_power"}),
                         "otafd_per_class": ("otafd_prop", {"sensitivity_mode": "per_class"})
                         }.get(name, (name, {}))
        curves[f"{name}_e{token(pick['benchmark_eps_full'])}"] = {
            **base, "method": method, **extra, **budget(pick["benchmark_eps_full"]),
            "benchmark": True}
    return curves


def block_of(params: dict[str, Any], key: str) -> dict[str, Any]:
    """The generic block the stages read (dataset, partition, model, training, channel, scale);
    an offline substitute dataset and model where the figure's cannot be supplied (X2's CIFAR:
    `substituted_for` names what it replaces, the caption and CSV say so)."""
    pick = settings(params, key)
    pick.update(substitute_if_missing(pick, params["data"]))
    s = pick["data_fraction"]
    substituted = {"substituted_for": pick["substituted_for"]} if "substituted_for" in pick else {}
    return {
        **substituted,
        "dataset": pick["dataset"], "num_devices": pick["num_devices"],
        # MNIST 1110 of one class + 10 of each other (stated); CIFAR 4440 + 9x40 [R];
        # quick: times s (111:1 kept)
        "partition": {"kind": "dominant_class", "dominant": round(pick["dominant"] * s),
                      "others": round(pick["others"] * s)},
        "model": {"name": pick["model"], "l2": 0.0, "engine": "loop",
                  "precision": pick["precision"]},
        "training": {"local_steps": pick["local_steps"], "batch_size": pick["batch_size"],
                     "lr": pick["eta0"], "server_lr": 1.0, "full_batch": pick["full_batch"]},
        # h ~ CN(0, 1) i.i.d. per round [R] (not stated)
        "channel": {"model": "rayleigh_mean_gain", "mean_gain": 1.0},
        "scale": {"rounds": max([pick["rounds"]] + [int(T) for T in pick.get("fixed_T", [])]),
                  "trials": pick["trials"], "eval_every": pick["eval_every"],
                  "test_subset": pick["test_subset"],
                  "train_eval_subset": pick["train_eval_subset"]},
        "curves": curves_of(params, key)}


def x1_block(params: dict[str, Any]) -> dict[str, Any]:
    return block_of(params, "x1")


def composer(key: str):
    """`Experiment.compose` of `ota_fd.<key>`."""
    def compose(params: dict[str, Any]) -> dict[str, Any]:
        return block_of(params, key)
    compose.__name__ = f"{key}_block"
    return compose
