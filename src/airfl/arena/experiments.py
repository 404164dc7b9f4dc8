"""The arena's experiment: every present entrant on the common task, one figure of final test
accuracy against the eps target (equal power), one of accuracy against rounds (every curve),
the leaderboard (figures/arena/leaderboard.{csv,md}) and the claims checked on them."""

from __future__ import annotations

from typing import Any

import pandas as pd

from airfl.arena import entrants, leaderboard
from airfl.arena.task import run_block, settings
from airfl.core.claims import ACCURACY_MARGIN, final_by_trial, paired_order, paired_trend
from airfl.core.experiments import Claim, ClaimResult, Experiment, FigureSpec, Table


def compose(params: dict[str, Any]) -> dict[str, Any]:
    """The run block: the common task with every present entrant's curves."""
    return run_block(params, entrants.curves(settings(params)))


def label(curve: str, params: dict[str, Any]) -> str:
    """The entrant's legend (one line per scheme across the eps sweep)."""
    return params["entrant"]


def _private(curve: str, params: dict[str, Any]) -> bool:
    return "target_eps" in params


def _by_eps(frame: pd.DataFrame, key: str) -> list[str]:
    """The curves of the private entrant `key`, by rising eps target."""
    rows = frame[frame["curve"].str.startswith(key + "_eps")]
    return list(rows.groupby("curve")["param_target_eps"].first().sort_values().index)


def _privacy_costs_accuracy(frame: pd.DataFrame) -> ClaimResult:
    """Ideal FedAvg (no privacy) ends above the most accurate private curve at the smallest eps
    target (paired by trial)."""
    values = final_by_trial(frame, "test_accuracy")
    private = frame.dropna(subset=["param_target_eps"])
    smallest = private["param_target_eps"].min()
    at = private[private["param_target_eps"] == smallest]["curve"].unique()
    best = max(at, key=lambda c: float(values[c].mean()))
    return paired_order(values, [("ideal", best)], ACCURACY_MARGIN, scale=100, unit=" pp",
                        note=f"most accurate private curve at eps {smallest:g}: {best}")


def _dp_fedavg_rises(frame: pd.DataFrame) -> ClaimResult:
    """DP-FedAvg's final accuracy rises along the eps targets (paired trend, ends tested)."""
    curves = _by_eps(frame, "dp_fedavg")
    if len(curves) < 2:
        return ClaimResult(None, f"one eps target only ({', '.join(curves)})")
    return paired_trend(final_by_trial(frame, "test_accuracy"), curves, ACCURACY_MARGIN,
                        scale=100, unit=" pp")


ROUNDS_PANEL = "accuracy_vs_rounds"

ARENA = Experiment(
    paper="arena", figure="accuracy_vs_eps", config_key="arena",
    title="Arena: final test accuracy vs ε at equal power",
    description=("Every scheme of the arena on one task (non-i.i.d. MNIST, K devices in one "
                 "cell: log-distance path loss, Rayleigh fading, a single-antenna base "
                 "station, one transmit power and noise level), each private scheme set by its "
                 "own design to meet (ε, δ) at every point of the sweep, trials paired (common "
                 "random numbers). The leaderboard ranks them per ε; the schemes not posed on "
                 "this model are listed there with why."),
    figure_spec=FigureSpec(x="param_target_eps", y="test_accuracy", final=True, logx=True,
                           xlabel="ε target (δ fixed)", ylabel="Final test accuracy",
                           curves=_private, label=label),
    extra_figures=(FigureSpec(x="round", y="test_accuracy", name=ROUNDS_PANEL,
                              xlabel="Communication round", ylabel="Test accuracy",
                              title="Arena: test accuracy vs rounds (every curve)"),),
    tables=(Table("leaderboard", "Arena leaderboard: schemes ranked per (ε, SNR)",
                  leaderboard.build, leaderboard.NOTE),),
    label=label, compose=compose, panel_keys=("entrant", "arena_snr_db", "target_eps"),
    claims=(
        Claim("arena_privacy_costs_accuracy", "At the smallest ε of the sweep, non-private "
              "Ideal FedAvg ends above the most accurate private scheme (privacy costs "
              "accuracy on this task).", _privacy_costs_accuracy, panel=ROUNDS_PANEL),
        Claim("arena_dp_fedavg_rises_with_eps", "DP-FedAvg's final accuracy rises with the ε "
              "target.", _dp_fedavg_rises, panel=ROUNDS_PANEL),
    ))

EXPERIMENTS = (ARENA,)
