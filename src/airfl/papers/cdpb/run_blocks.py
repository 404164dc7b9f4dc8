"""CDPB's training figure (Fig. 4): every strategy trains the same federation
with the same channel and data draws; params.yaml `cdpb.fig4` with the analytic setting of
`cdpb.analytic` (each strategy's rho is designed from it, K = its number of clients).

The paper trains ResNet-18 (GroupNorm) on CIFAR-100 with K = 100 IID clients. CIFAR cannot be
downloaded on the machines this pipeline is tested on, so the quick profile substitutes
Fashion-MNIST and a small CNN (the figure's caption and CSV name the dataset and model).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from airfl.params.declare import resolve
from airfl.data import substitute_if_missing
from airfl.papers.cdpb.schemes import SETTING_KEYS


def median_update_norm(norms: np.ndarray) -> dict[str, Any]:
    """The calibration of every CDPB training figure (Experiment.calibration): W_clip = the median
    norm of the clients' noise-free model deltas at theta_0 (one calibration
    round), measured by the `calibrate` stage for whatever dataset and model the profile trains;
    the scheme clips to it and divides by it (W = 1)."""
    norms = np.asarray(norms, dtype=np.float64)
    if norms.size == 0 or not np.all(np.isfinite(norms)) or not float(np.median(norms)) > 0:
        raise ValueError(f"W_clip calibration needs finite update norms with a positive median, "
                         f"got {norms.size} norms (median {np.median(norms) if norms.size else None})")
    return {"w_clip": float(np.median(norms))}


def _block(params: dict[str, Any], key: str, curves_of) -> dict[str, Any]:
    """The generic run block of a CDPB training figure from `cdpb.<key>` and the analytic
    setting (its own keys override the analytic ones: Fig. 8's K, P, gamma_bar)."""
    section, profile = params["cdpb"], params["profile"]
    fig = section[key]
    pick = {k: resolve(v, profile) for k, v in fig.items() if k != "scale"}
    pick.update(substitute_if_missing(pick, params["data"]))
    analytic = {**section["analytic"], **{k: pick[k] for k in SETTING_KEYS + ("K",)
                                          if k in pick}}
    base = {"scheme": "cdpb", "simulation": pick["simulation"],
            "noise_variance": pick["noise_variance"], **{k: analytic[k] for k in SETTING_KEYS}}
    partition = {"kind": "iid"}
    if pick["samples_per_device"] is not None:
        partition["samples_per_device"] = pick["samples_per_device"]
    substituted = {"substituted_for": pick["substituted_for"]} if "substituted_for" in pick else {}
    return {
        **substituted,
        # the substitute as params.yaml names it, used or not: whether the dataset is here is
        # the machine's matter, so the jobs depend on it either way (the same dvc.yaml
        # everywhere)
        "offline_substitute": fig.get("offline_substitute"),
        "dataset": pick["dataset"], "num_devices": analytic["K"], "partition": partition,
        "model": {"name": pick["model"], "l2": pick["weight_decay"], "engine": "auto",
                  "precision": pick.get("precision", "fp32")},
        "training": {"local_steps": pick["local_steps"], "batch_size": pick["batch_size"],
                     "lr": pick["lr"], "server_lr": 1.0},
        "channel": {"model": "rayleigh_mean_gain",                   # i.i.d. Rayleigh
                    "mean_gain": analytic["h_bar"] if key == "fig4" else 1.0},
        "scale": resolve(fig["scale"], profile),
        "curves": curves_of(pick, base),
    }


#: Suffix of the Fig.-4 curves simulated under Theorem 1's reading of sigma_q^2 (per coordinate);
#: they share the experiment, hence every channel, coin and data draw, with the main curves.
PER_COORDINATE = "_per_coordinate"


def compose_fig4(params: dict[str, Any]) -> dict[str, Any]:
    """The generic run block of Fig. 4 (see airfl.core.experiments.Experiment.compose): every strategy
    under `cdpb.fig4.noise_variance` (panel fig4; default total, as (11)/(13)/(19) define
    sigma_q^2) and again under the per-coordinate reading of Theorem 1 (panel
    fig4_per_coordinate, curves `<strategy>_per_coordinate`)."""
    def curves(pick: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
        main = {s: {**base, "strategy": s} for s in pick["strategies"]}
        other = {s + PER_COORDINATE: {**base, "strategy": s, "noise_variance": "per_coordinate"}
                 for s in pick["strategies"]}
        return {**main, **other}
    return _block(params, "fig4", curves)


def compose_fig8(panel: str):
    """Fig. 8(a) or 8(b): CDPB-i and CDPB-n under a channel distribution that changes every
    `cdpb.fig8.periods.<panel>` rounds (the channel is drawn with unit mean gain and scaled by
    the period's h_bar inside the scheme)."""
    def compose(params: dict[str, Any]) -> dict[str, Any]:
        return _block(params, "fig8", lambda pick, base: {
            strategy: {**base, "strategy": strategy, "change_every": pick["periods"][panel],
                       "h_bar_range": list(pick["h_bar_range"])}
            for strategy in ("cdpb_i", "cdpb_n")})
    return compose
