"""The training experiments of DP as a perk (Figs. 3-6) as generic run blocks.

Two experiments, one per data split (a partition is made once per experiment):

* ``iid`` - every i.i.d. run: Vanilla FL, FL w/ clipping, AirFL-MIMO and AirFL-DP at every
  eps_tilde of the Fig. 3 and Fig. 5 grids at P = 2 mW, and AirFL-DP / AirFL-MIMO at every P of
  the Fig. 6 grid (eps_tilde of Fig. 6), with the authors' ZF (u = 1) and with optimised phases
  (``zf_opt``). Figs. 3, 5 and 6 are panels of it, so they share runs (Fig. 5's benchmark lines
  are Fig. 3's runs; Fig. 6's 2 mW point is Fig. 3's run at its eps_tilde) and common random
  numbers (one plan of channels and active sets per trial).
* ``noniid`` - Fig. 4: the same methods at the Fig. 3 grid on a label-skewed split (k = 2
  classes per device, 2 equal shards of 2 classes).

The radio and privacy constants come from ``dp_perk.analytic`` (the paper's setting);
``dp_perk.training`` resolves the profile (quick, our small setting: 20 devices x 200 images, MLP
784-32-10, m = 40, 20 rounds, one local epoch, eta = 0.05).
"""

from __future__ import annotations

from typing import Any

from airfl.params.declare import resolve

RADIO_KEYS = ("sample_ratio", "clip_factor", "sigma2_w", "carrier_hz", "radius_m",
              "min_distance_m", "distance_mode", "zf_columns", "noise_model", "delta")
BASELINES = ("vanilla", "fl_clip", "airfl_mimo")


def token(value: float) -> str:
    """A number as a curve-name token: 0.1 -> 0p1, 3e-09 -> 3em09."""
    return f"{value:g}".replace(".", "p").replace("-", "m").replace("+", "")


def dp_curve(eps_tilde: float) -> str:
    return f"airfl_dp_e{token(eps_tilde)}"


def power_curve(method: str, power_w: float, beamformer: str) -> str:
    suffix = "" if beamformer == "zf" else f"_{beamformer}"
    return f"{method}_p{token(power_w)}{suffix}"


def settings(params: dict[str, Any]) -> dict[str, Any]:
    """`dp_perk.training` resolved for the profile."""
    profile = params["profile"]
    return {k: resolve(v, profile) for k, v in params["dp_perk"]["training"].items()}


def _snr_db(power_w: float, analytic: dict[str, Any]) -> float:
    """The curve's x on Fig. 6 (rounded: it is a curve parameter, compared across runs)."""
    from .uplink import edge_snr_db

    return round(edge_snr_db(power_w, analytic["radius_m"], analytic["carrier_hz"],
                             analytic["sigma2_w"]), 6)


def _curves(params: dict[str, Any], pick: dict[str, Any], split: str) -> dict[str, dict]:
    """Every curve of the split, tagged with the panels that draw it (in_fig3/5/6)."""
    analytic = params["dp_perk"]["analytic"]
    power = analytic["power_w"]
    base = {"scheme": "dp_perk", "antennas": pick["antennas"],
            "power_w": power, "beamformer": pick["beamformer"],
            "dp_noise_convention": pick["dp_noise_convention"],
            "accountant": pick["accountant"], **{k: analytic[k] for k in RADIO_KEYS},
            "in_fig3": True, "in_fig5": split == "iid", "in_fig6": False}
    curves = {m: {**base, "method": m} for m in BASELINES}
    eps6 = pick["fig6_eps_tilde"]
    grid = pick["fig3_eps_tilde"] if split == "noniid" else \
        sorted({*pick["fig3_eps_tilde"], *pick["fig5_eps_tilde"]})
    for eps in grid:
        curves[dp_curve(eps)] = {**base, "method": "airfl_dp", "eps_tilde": eps,
                                 "in_fig3": eps in pick["fig3_eps_tilde"]}
    if split != "iid":
        return curves
    for name in ("airfl_mimo", dp_curve(eps6)):           # the 2 mW points of Fig. 6
        curves[name].update(in_fig6=True, snr_wc_db=_snr_db(power, analytic))
    sweep = {**base, "in_fig3": False, "in_fig5": False, "in_fig6": True}
    for beamformer in ("zf", "zf_opt"):                    # Fig. 6: P sweep, both beamformers
        powers = list(pick["fig6_power_w"]) + ([] if beamformer == "zf" else [power])
        for p in powers:
            for method in ("airfl_dp", "airfl_mimo"):
                curves[power_curve(method, p, beamformer)] = {
                    **sweep, "method": method, "power_w": p, "beamformer": beamformer,
                    "snr_wc_db": _snr_db(p, analytic),
                    **({"eps_tilde": eps6} if method == "airfl_dp" else {})}
    return curves


def compose(split: str):
    """The generic run block of the ``iid`` or ``noniid`` experiment (Experiment.compose)."""
    def block(params: dict[str, Any]) -> dict[str, Any]:
        pick = settings(params)
        if split == "iid":
            partition = {"kind": "iid", "samples_per_device": pick["samples_per_device"],
                         "balanced": True}                       # class-balanced
        else:
            partition = {"kind": "shards", "classes_per_device": 2}
            if pick["noniid_pool_per_class"] is not None:
                partition["pool_per_class"] = pick["noniid_pool_per_class"]
        epochs = pick["local_mode"] == "epochs"
        scale = resolve(params["dp_perk"]["training"]["scale"], params["profile"])
        return {
            "dataset": pick["dataset"], "num_devices": pick["num_devices"],
            # preprocessing: x/255 then (x - 0.5)/0.5 (the authors' code); the default
            "input_normalization": pick["input_normalization"],
            "partition": partition,
            "model": {"name": pick["model"], "l2": 0.0, "engine": "auto",
                      "precision": pick.get("precision", "fp32")},
            "training": {"local_steps": pick["local_steps"], "batch_size": pick["batch_size"],
                         "lr": pick["lr"], "server_lr": 1.0,
                         "local_epochs": pick["local_epochs"] if epochs else None},
            # unused: the scheme draws the SIMO uplink itself
            "channel": {"model": "rayleigh_mean_gain", "mean_gain": 1.0},
            "scale": scale, "curves": _curves(params, pick, split)}
    return block
