"""Stage `privacy`: compose each run's per-round privacy records into (eps, delta) per round.

Two accountings, named for what they hold:

* ``epsilon_paper``: the round records' ``privacy`` events, the scheme's accounting as its paper
  states it (CDPB: Theorem 1 with sigma_q^2 as the mechanism's variance; DP as a perk:
  Proposition III.1 with sigma^2 and Bernoulli(r) amplification; LAPA: each round's worst
  device at the clipped update's sensitivity 2C; OTA-FD: Lemma 1's sensitivity
  under Theorem 2's design, per (WD, class), composed over the T rounds; DP-FedAvg and the OTA
  baselines: the RDP of the Gaussian mechanism they add).
* ``epsilon_simulated``: the mechanism as the run simulates it. A record's
  ``privacy_simulated`` events where the scheme's paper accounts something else (CDPB: the
  Poisson-subsampled Gaussian at the per-coordinate variance the run adds; DP as a perk: the
  receiver's sigma^2/2 on its fixed subset of clients; LAPA: each device's own composition,
  then the worst device; OTA-FD: the sensitivity the code's shared vectors have, sqrt(2)/B_i^k
  for a soft label, 2C for a clipped FL update); ``privacy_simulated: null``
  where that is not computed, written as an empty value; no such key: the scheme's
  accounting is of the mechanism it simulates, the same events.

A round whose record has no privacy events (`privacy: null`) carries no DP guarantee, so eps is
infinite from then on. Events are composed by the RDP accountant (privacy/) and converted with
both the improved (Balle et al. 2020) and the classic (Mironov 2017) conversion (``..._classic``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from airfl.pipeline import paths
from airfl.runtime.io import read_json, write_csv
from airfl.privacy import epsilon_curve
from airfl.pipeline.stage_params import declared

def trial_epsilons(rounds: list[dict[str, Any]], delta: float, key: str = "privacy"
                   ) -> dict[str, np.ndarray]:
    """eps after each round under both conversions; inf after the first unprotected round."""
    private = np.array([r.get(key) is not None for r in rounds])
    events = [r[key] if r.get(key) is not None else [] for r in rounds]
    out = {}
    for conversion in ("improved", "classic"):
        eps = epsilon_curve(events, delta, conversion=conversion) if rounds else np.zeros(0)
        eps = np.where(np.cumprod(private) == 1, eps, np.inf)
        out[conversion] = eps
    return out


def simulated_epsilons(rounds: list[dict[str, Any]], delta: float) -> dict[str, np.ndarray]:
    """eps of the mechanism as simulated: a round's `privacy_simulated` events where it has
    them (else its `privacy` events); NaN, not computed, when any round says null."""
    if any("privacy_simulated" in r and r["privacy_simulated"] is None for r in rounds):
        return {conversion: np.full(len(rounds), np.nan) for conversion in ("improved", "classic")}
    return trial_epsilons([{"privacy": r.get("privacy_simulated", r.get("privacy"))}
                           for r in rounds], delta)


def conversion_delta(params: dict[str, Any], curve_params: dict[str, Any]) -> float:
    """The delta of a curve's (epsilon, delta): its own `delta` where its scheme has one
    (DP-FedAvg, DP as a perk, LAPA, OTA-FD), else params.yaml `privacy.delta` (declared with
    its default, 1e-5: CDPB states RDP only; the OTA baselines' privacy is the channel's)."""
    return float(curve_params["delta"] if "delta" in curve_params else params["privacy"]["delta"])


@declared("privacy")
def run(params: dict[str, Any], experiment_id: str, curve: str) -> None:
    """The curve's parameters come with its records (the parameters that made them), so this
    stage needs neither torch nor the experiment registry (a job starts in ~0.5 s, not ~2 s)."""
    records = read_json(paths.run_records(experiment_id, curve))
    delta = conversion_delta(params, records["params"])
    frames = []
    for trial in records["trials"]:
        paper = trial_epsilons(trial["rounds"], delta)
        simulated = simulated_epsilons(trial["rounds"], delta) \
            if any("privacy_simulated" in r for r in trial["rounds"]) else paper
        frames.append(pd.DataFrame({"trial": trial["trial"],
                                    "round": [r["round"] for r in trial["rounds"]],
                                    "delta": delta,
                                    "epsilon_paper": paper["improved"],
                                    "epsilon_paper_classic": paper["classic"],
                                    "epsilon_simulated": simulated["improved"],
                                    "epsilon_simulated_classic": simulated["classic"]}))
    write_csv(paths.privacy(experiment_id, curve), pd.concat(frames, ignore_index=True))
