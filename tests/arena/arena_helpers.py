"""Constructed figure data for the arena's leaderboard and claims tests (not collected by pytest;
the test files import it by module name, since tests/ is not a package): eight curves at two eps
targets and three edge SNRs, and the figure stage's frame of them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


#: the curves: eps targets 1 and 4 at 10 dB, 4 also at 0 and 20 dB; a private entrant "Other"
CURVES = {
    "ideal": {"scheme": "ideal_fedavg", "entrant": "Ideal FedAvg", "arena_panels": ["snr"],
              "arena_points": [[1.0, 10.0], [4.0, 10.0], [4.0, 0.0], [4.0, 20.0]]},
    "ota_fl": {"scheme": "ota_truncated_inversion", "entrant": "OTA-FL", "arena_snr_db": 10.0,
               "arena_points": [[1.0, 10.0], [4.0, 10.0]], "arena_panels": ["snr"]},
    "ota_fl_pm3dbm": {"scheme": "ota_truncated_inversion", "entrant": "OTA-FL",
                      "arena_snr_db": 0.0, "arena_points": [[4.0, 0.0]],
                      "arena_panels": ["snr"]},
    "ota_fl_p17dbm": {"scheme": "ota_truncated_inversion", "entrant": "OTA-FL",
                      "arena_snr_db": 20.0, "arena_points": [[4.0, 20.0]],
                      "arena_panels": ["snr"]},
    "dp_fedavg_eps1": {"scheme": "gaussian_dp", "entrant": "FedAvg + DP", "delta": 1e-5,
                       "target_eps": 1.0, "arena_points": [[1.0, 10.0]],
                       "arena_panels": ["eps"]},
    "dp_fedavg_eps4": {"scheme": "gaussian_dp", "entrant": "FedAvg + DP", "delta": 1e-5,
                       "target_eps": 4.0, "arena_panels": ["eps", "snr"],
                       "arena_points": [[4.0, 10.0], [4.0, 0.0], [4.0, 20.0]]},
    "other_eps1": {"scheme": "x", "entrant": "Other", "delta": 1e-5, "target_eps": 1.0,
                   "arena_points": [[1.0, 10.0]], "arena_panels": ["eps"]},
    "other_eps4_pm3dbm": {"scheme": "x", "entrant": "Other", "delta": 1e-5, "target_eps": 4.0,
                          "arena_snr_db": 0.0, "arena_points": [[4.0, 0.0]],
                          "arena_panels": ["snr"]},
}


def frame_of(levels: dict[str, float], eps: dict[str, float], trials: int = 4,
           spread: float = 0.004, seed: int = 0) -> pd.DataFrame:
    """The figure stage's frame: two evaluated rounds per (curve, trial), the final accuracy at
    the curve's level plus a per-trial offset, the final eps as given."""
    rng = np.random.default_rng(seed)
    rows = []
    for curve, level in levels.items():
        for trial in range(trials):
            value = level + rng.normal(0, spread)
            for round_, accuracy in ((0, 0.1), (30, value)):
                rows.append({"curve": curve, "trial": trial, "round": round_,
                             "test_accuracy": accuracy, "epsilon_paper": eps[curve],
                             "epsilon_simulated": eps[curve],
                             "param_target_eps": CURVES[curve].get("target_eps", np.nan),
                             "param_arena_snr_db": CURVES[curve].get("arena_snr_db", np.nan)})
    return pd.DataFrame(rows)


EPS = {"ideal": math.inf, "ota_fl": 50.0, "ota_fl_pm3dbm": 40.0, "ota_fl_p17dbm": 60.0,
       "dp_fedavg_eps1": 1.0, "dp_fedavg_eps4": 4.0, "other_eps1": 0.9,
       "other_eps4_pm3dbm": 3.9}


LEVELS = {"ideal": 0.9, "ota_fl": 0.88, "ota_fl_pm3dbm": 0.878, "ota_fl_p17dbm": 0.881,
          "dp_fedavg_eps1": 0.5, "dp_fedavg_eps4": 0.7, "other_eps1": 0.6,
          "other_eps4_pm3dbm": 0.65}
