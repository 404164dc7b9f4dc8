"""The choice of the initial step size eta_0 from calibration runs of noiseless FD (the
reproduction's protocol: calibrate on fd_noiseless, mnist {0.5, 1, 2}, cifar {0.05, 0.1, 0.2};
eta_0 is not stated in the appendix, so the calibration is [R]).

The rule, fixed before any run is looked at: the eta_0 with the best mean final test accuracy
over trials wins; a larger eta_0 replaces it only when its mean lies within one standard error
of the winner's mean (s.e. over the winner's trials; with one trial there is no s.e. and the
best mean wins outright). Larger steps win ties because the paper's schedule eta_t = eta_0 /
sqrt(t + 1) only shrinks from there and the DP runs are short (Theorem 1's 3 f_max / (eta_0
sqrt(T)) term falls with eta_0).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

PREFIX = "eta0_cal_"          # the calibration curves (run_blocks.py): noiseless FD at one eta_0 each


def choose_eta0(finals: Mapping[float, Sequence[float]]) -> dict[str, float | str]:
    """{eta0: final test accuracies over trials} -> {"eta0": chosen, "best": the best mean's
    eta0, "se": its standard error (nan with one trial), "rule": the rule in words}."""
    if not finals:
        raise ValueError("eta0 calibration: no calibration runs")
    runs = {float(e): [float(a) for a in v] for e, v in finals.items()}
    means = {e: sum(v) / len(v) for e, v in runs.items()}
    best = max(means, key=lambda e: (means[e], e))        # an exact tie: the larger step
    n = len(runs[best])
    se = math.sqrt(sum((v - means[best]) ** 2 for v in runs[best]) / (n - 1) / n) if n > 1 \
        else float("nan")
    near = [e for e in means if e > best and n > 1 and means[best] - means[e] <= se]
    return {"eta0": max(near, default=best), "best": best, "se": se,
            "rule": "best mean final test accuracy; a larger eta_0 within one s.e. of it wins"}


def derive_eta0(params: dict[str, Any], block: dict[str, Any], inputs: dict[str, Any]
                ) -> dict[str, Any]:
    """Stage `derive` of X1/X2 (`Derivation("eta0")`): the final test accuracy of every
    calibration run (each trial's last row of its run table), `choose_eta0`, and the chosen
    eta_0 for every curve that is not a calibration run. Runs only where the profile has
    calibration curves (`eta0_grid`; the quick profile keeps the fixed eta_0)."""
    rows = []
    for curve, stored in inputs.items():
        table = stored["table"]
        last = table[table["round"] == table.groupby("trial")["round"].transform("max")]
        for trial, acc in zip(last["trial"], last["test_accuracy"]):
            rows.append({"curve": curve, "eta0": float(block["curves"][curve]["eta0"]),
                         "trial": int(trial), "final_test_accuracy": float(acc)})
    frame = pd.DataFrame(rows)
    choice = choose_eta0({e: list(g["final_test_accuracy"]) for e, g in frame.groupby("eta0")})
    targets = [c for c in block["curves"] if not c.startswith(PREFIX)]
    means = frame.groupby("eta0")["final_test_accuracy"].mean()
    report = {**choice, "se": None if math.isnan(choice["se"]) else choice["se"],   # one trial
              "means": {f"{e:g}": float(a) for e, a in means.items()}}
    return {"params": {c: {"eta0": choice["eta0"]} for c in targets}, "report": report,
            "table": frame, "arrays": {}}
