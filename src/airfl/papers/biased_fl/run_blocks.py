"""The run blocks of Biased FL's training figures: how its params sections (problem, radio, one
block per panel) become the generic run block the stages read, and the paper's reference (w*,
data constants).

Design constants of a panel (G, kappa, eta, T_max_s, radius_m) are passed to every curve whose
scheme takes them (the same G and kappa for all schemes of a panel; eta common in the
variant panels, per scheme where a curve sets its own).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from airfl.params.declare import resolve
from airfl.papers.biased_fl.schemes.params import PANEL_DEFAULTS, PARAMS_SCHEMA, RADIO_DEFAULTS


def _accepted(kind: str) -> set[str]:
    return set(PARAMS_SCHEMA[kind]["properties"]) if kind in PARAMS_SCHEMA else set()


def curve_params(params: dict[str, Any], panel: dict[str, Any], curve: dict[str, Any],
                 experiment_id: str) -> dict[str, Any]:
    """A curve's params with the panel's design constants, the radio's receiver-noise reading
    (OTA schemes) and the problem's mu filled in."""
    kind = curve["scheme"]
    accepted = _accepted(kind)
    out = dict(curve)
    radio = params["biased_fl"]["radio"]
    sources = {**{k: panel[k] for k in PANEL_DEFAULTS if k in panel},
               **{k: radio[k] for k in RADIO_DEFAULTS if k in radio},
               "mu": params["biased_fl"]["problem"]["mu"], "design_seed": params["seed"],
               "design_key": experiment_id}
    for key, value in sources.items():
        if key in accepted and key not in out:
            out[key] = value
    return out


def compose_panel(panel_key: str, experiment_id: str | None = None, curves_of=None,
                  scale_key: str | None = None, trials_key: str | None = None):
    """A compose function (see airfl.core.experiments.Experiment) for one panel of params.yaml; the
    sensitivity experiments reuse a panel's setting with their own curves and scale (`scale_key`:
    another section's scale; `trials_key`: the panel's schedule with that section's trials)."""
    experiment_id = experiment_id or f"biased_fl/{panel_key}"

    def compose(params: dict[str, Any]) -> dict[str, Any]:
        section = params["biased_fl"]
        problem, radio, panel = section["problem"], section["radio"], section[panel_key]
        scale = copy.deepcopy(resolve(section[scale_key or panel_key]["scale"], params["profile"]))
        if trials_key is not None:
            scale["trials"] = resolve(section[trials_key]["sota_trials"], params["profile"])
        scale.setdefault("eval_every", 1)
        scale.update(test_subset=resolve(problem["test_subset"], params["profile"]),
                     train_eval_subset=problem["per_class"] * radio["num_devices"],
                     rounds=panel["max_rounds"], horizon_s=panel.get("horizon_s"))
        raw = curves_of(params) if curves_of else literal_curves(panel)
        tuning = resolve(section[scale_key or panel_key]["tuning"], params["profile"])
        return {
            "tuning": tuning,
            "dataset": problem["dataset"], "num_devices": radio["num_devices"],
            "partition": {"kind": "per_class_one_class", "per_class": problem["per_class"]},
            "model": {"name": "softmax", "l2": problem["mu"], "engine": "auto"},
            "training": {"upload": "gradient", "full_batch": True, "local_steps": 1,
                         "batch_size": problem["per_class"], "lr": 0.0, "server_lr": panel["eta"]},
            "channel": {"model": "geometry", "radius_m": panel["radius_m"], "min_radius_m": 0.0,
                        "placement": radio["placement"],
                        "pathloss": {"model": "log_distance", "pl0_db": radio["pl0_db"],
                                     "exponent": radio["exponent"]},
                        "bandwidth_hz": radio["bandwidth_hz"], "power_dbm": radio["power_dbm"],
                        "n0_dbm_per_hz": radio["n0_dbm_per_hz"],
                        "snr_offset_db": radio["snr_offset_db"]},
            "scale": scale,
            "curves": {name: curve_params(params, panel, c, experiment_id)
                       for name, c in raw.items()},
        }

    return compose


def literal_curves(panel: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The panel's own curves, less `offset_only_curves`: schemes whose design leaves no device
    transmitting at the panel's SNR (NoTransmissionError) run only in its SNR-offset copies."""
    skip = set(panel.get("offset_only_curves", ()))
    unknown = skip - set(panel["curves"])
    if unknown:
        raise ValueError(f"offset_only_curves names {sorted(unknown)}, not curves of the panel; "
                         f"allowed: {sorted(panel['curves'])}")
    return {name: c for name, c in panel["curves"].items() if name not in skip}


def sensitivity_curves(source_panel: str, offsets_key: str):
    """The source panel's curves repeated at every SNR offset, named <curve>_<off>db."""

    def curves_of(params: dict[str, Any]) -> dict[str, dict[str, Any]]:
        section = params["biased_fl"]
        out = {}
        for name, curve in section[source_panel]["curves"].items():
            for offset in section[offsets_key]["snr_offsets_db"]:
                out[f"{name}_{int(offset)}db"] = {**curve, "snr_offset_db": float(offset)}
        return out

    return curves_of


def offset_curves(source_panel: str, offset_db: float):
    """The source panel's curves, unchanged but for the SNR offset."""

    def curves_of(params: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {name: {**curve, "snr_offset_db": float(offset_db)}
                for name, curve in params["biased_fl"][source_panel]["curves"].items()}

    return curves_of


def compute_reference(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """w*, F(w*), the accuracy of w* on the test set the experiments use, and the data constants."""
    from airfl.data import load_dataset
    from airfl.data.partitioners import make_partition
    from airfl.papers.biased_fl.problem import accuracy, build_problem, constants, solve_optimum

    problem_params = params["biased_fl"]["problem"]
    root = params["data"]["root"]
    x, y = load_dataset(problem_params["dataset"], root, "train")
    xt, yt = load_dataset(problem_params["dataset"], root, "test")
    subset = resolve(problem_params["test_subset"], params["profile"])
    if subset is not None:
        xt, yt = xt[:subset], yt[:subset]
    partition = make_partition("per_class_one_class", y, params["biased_fl"]["radio"]["num_devices"],
                               np.random.default_rng(0), per_class=problem_params["per_class"])
    problem = build_problem(x, y, partition.indices, 10, problem_params["mu"])
    w_star = solve_optimum(problem)
    scalars = {**constants(problem, w_star), "accuracy_star": accuracy(w_star, xt, yt, 10),
               "test_size": int(len(yt))}
    return {"w_star": w_star}, scalars
