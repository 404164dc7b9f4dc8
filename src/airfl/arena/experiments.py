"""The arena's experiment: every present entrant on the common task, one figure of final test
accuracy against the eps target (equal power), one against the edge SNR (equal eps: a sweep of
the power budget), one of accuracy against rounds (every curve at the base power),
the leaderboard (figures/arena/leaderboard.{csv,md}) and the claims checked on them."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pandas as pd

from airfl.arena import entrants, leaderboard
from airfl.arena.task import run_block, settings
from airfl.core.claims import (ACCURACY_MARGIN, final_by_trial, paired_equivalence,
                               paired_order, paired_trend)
from airfl.core.experiments import Claim, ClaimResult, Experiment, FigureSpec, Table


def compose(params: dict[str, Any]) -> dict[str, Any]:
    """The run block: the common task with every present entrant's curves."""
    return run_block(params, entrants.curves(settings(params)))


def label(curve: str, params: dict[str, Any]) -> str:
    """The entrant's legend (one line per scheme across the eps sweep), with the edge SNR where
    its curve depends on the power (one line per power: the SNR sweep's curves stay apart)."""
    snr = params.get("arena_snr_db")
    return params["entrant"] + (f" ({snr:.0f} dB edge SNR)" if snr is not None else "")


def label_with_eps(curve: str, params: dict[str, Any]) -> str:
    """The entrant's legend with its eps target (the SNR figure: one target, named)."""
    eps = params.get("target_eps")
    return params["entrant"] + (f" (ε target {eps:g})" if eps is not None else "")


def _in_panel(name: str) -> Callable[[str, dict[str, Any]], bool]:
    """The curves filter of the figure `name` ("eps" or "snr"; entrants.curves tags them)."""
    return lambda curve, params: name in params["arena_panels"]


def _by_eps(frame: pd.DataFrame, key: str) -> list[str]:
    """The curves of the private entrant `key`, by rising eps target."""
    rows = frame[frame["curve"].str.startswith(key + "_eps")]
    return list(rows.groupby("curve")["param_target_eps"].first().sort_values().index)


def _meeting(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the private curves that meet their eps target as simulated in every trial
    (the leaderboard's rule, `leaderboard.meets`): a curve above its target is not private at
    it (the LAPA entrants at their paper's eps_T), so it is no private scheme of a claim."""
    private = frame.dropna(subset=["param_target_eps"])
    targets = private.groupby("curve")["param_target_eps"].first()
    simulated = leaderboard.final_eps(private, "epsilon_simulated")
    keep = [c for c in targets.index if leaderboard.meets(simulated[c], targets[c])]
    return private[private["curve"].isin(keep)]


def _privacy_costs_accuracy(frame: pd.DataFrame) -> ClaimResult:
    """Ideal FedAvg (no privacy) ends above the most accurate private curve (one that meets its
    target: `_meeting`) at the smallest eps target (paired by trial)."""
    values = final_by_trial(frame, "test_accuracy")
    private = _meeting(frame)
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


def _snr_groups(frame: pd.DataFrame) -> dict[float, list[str]]:
    """The SNR figure's private curves (those meeting their target: `_meeting`) per edge SNR of
    its sweep: those set for that SNR and
    those that do not depend on the power (no `param_arena_snr_db`: in every group)."""
    if "param_arena_snr_db" not in frame:
        return {}
    snr = frame.groupby("curve")["param_arena_snr_db"].first()
    private = _meeting(frame)["curve"].unique()
    return {float(s): [c for c in private if pd.isna(snr[c]) or snr[c] == s]
            for s in sorted(snr.dropna().unique())}


def _privacy_costs_accuracy_at_every_snr(frame: pd.DataFrame) -> ClaimResult:
    """At the SNR figure's eps, Ideal FedAvg ends above the most accurate private curve of every
    edge SNR of the sweep (paired by trial; one pair per distinct best curve)."""
    values = final_by_trial(frame, "test_accuracy")
    groups = _snr_groups(frame)
    best = {s: max(c, key=lambda curve: float(values[curve].mean()))
            for s, c in groups.items() if c}
    if not best:
        return ClaimResult(None, "no private curve in the SNR figure")
    pairs = list(dict.fromkeys(("ideal", b) for b in best.values()))
    return paired_order(values, pairs, ACCURACY_MARGIN, scale=100, unit=" pp",
                        note="most accurate private curve per edge SNR: " + ", ".join(
                            f"{s:g} dB {b}" for s, b in best.items()))


def _ota_fl_same_across_snr(frame: pd.DataFrame) -> ClaimResult:
    """OTA-FL's final accuracy at the lowest and at the highest edge SNR of the sweep are the
    same within the accuracy margin (paired equivalence by trial)."""
    ota = frame[frame["curve"].str.startswith("ota_fl")].dropna(subset=["param_arena_snr_db"])
    ends = ota.groupby("curve")["param_arena_snr_db"].first().sort_values()
    if len(ends) < 2:
        return ClaimResult(None, f"one edge SNR only ({', '.join(ends.index)})")
    return paired_equivalence(final_by_trial(frame, "test_accuracy"), ends.index[-1],
                              ends.index[0], ACCURACY_MARGIN, scale=100, unit=" pp",
                              note=f"{ends.iloc[-1]:g} dB vs {ends.iloc[0]:g} dB")


def _audit_within_records(frame: pd.DataFrame) -> ClaimResult:
    """`_audit_within_accounted` for an entrant whose audit's claimed epsilon is its records'
    device-level accounting, not its paper's statement (LAPA: its paper's eps_T is a
    sample's): the reasons name it so."""
    result = _audit_within_accounted(frame)
    return dataclasses.replace(
        result, numbers=result.numbers.replace("(simulated / paper)", "(simulated / records)"),
        reason=result.reason.replace("as its paper states", "as its records account it"))


def _audit_within_accounted(frame: pd.DataFrame) -> ClaimResult:
    """Every audited point of an entrant (its audit figure's CSV: one row per curve and trial,
    airfl.arena.audit) has its audited lower bound on epsilon at most both of that trial's
    accounted epsilons, as simulated and as its paper states; contradicted names the point
    (curve and trial) and the accounting it exceeds. The numbers give per curve the largest
    bound over its trials beside its largest accounted epsilons (the leaderboard's columns).
    The bound is valid at 95 % per point (Clopper-Pearson), so holds or contradicted, no
    margin."""
    if frame.empty:
        return ClaimResult(None, "no audited curve")
    exceeded, largest = [], {}
    for row in frame.itertuples(index=False):
        lower = float(row.eps_audited_lower)
        over = [name for name, value in (("as simulated", row.eps_simulated),
                                         ("as its paper states", row.eps_claimed))
                if lower > float(value)]
        if over:
            exceeded.append(f"{row.label}: {lower:.3g} exceeds its epsilon {' and '.join(over)}")
        values = largest.setdefault(leaderboard.curve_of_point(row.label), [0.0, 0.0, 0.0, 0])
        for i, value in enumerate((lower, float(row.eps_simulated), float(row.eps_claimed))):
            values[i] = max(values[i], value)
        values[3] += 1
    numbers = "largest over the trials, audited >= vs accounted (simulated / paper): " + \
        "; ".join(f"{curve} {v[0]:.3g} vs {v[1]:.3g} / {v[2]:.3g} ({v[3]} trials)"
                  for curve, v in largest.items())
    return ClaimResult(not exceeded, numbers, reason="; ".join(exceeded))


ROUNDS_PANEL = "accuracy_vs_rounds"
SNR_PANEL = "accuracy_vs_snr"

ARENA = Experiment(
    paper="arena", figure="accuracy_vs_eps", config_key="arena",
    title="Arena: final test accuracy vs ε at equal power",
    description=("Every scheme of the arena on one task (non-i.i.d. MNIST, K devices in one "
                 "cell: log-distance path loss, Rayleigh fading, a single-antenna base "
                 "station (multi-antenna for AirFL-DP), one transmit power and noise level), each private scheme set by its "
                 "own design to meet (ε, δ) at every point of the sweep, trials paired (common "
                 "random numbers); one ε target is also run along a sweep of the power budget (the "
                 "edge-SNR figure). The leaderboard ranks them per (ε, SNR) point; the schemes "
                 "not posed on this model are listed there with why."),
    figure_spec=FigureSpec(x="param_target_eps", y="test_accuracy", final=True, logx=True,
                           xlabel="ε target (δ fixed)", ylabel="Final test accuracy",
                           curves=_in_panel("eps"), label=label),
    extra_figures=(FigureSpec(x="param_arena_snr_db", y="test_accuracy", final=True,
                              name=SNR_PANEL, curves=_in_panel("snr"), label=label_with_eps,
                              xlabel="Mean receive SNR at the cell edge (dB)",
                              ylabel="Final test accuracy",
                              title="Arena: final test accuracy vs edge SNR at one ε "
                                    "target (dashed: independent of the power)"),
                   FigureSpec(x="round", y="test_accuracy", name=ROUNDS_PANEL,
                              curves=lambda curve, params: entrants.at_base_power(curve),
                              xlabel="Communication round", ylabel="Test accuracy",
                              title="Arena: test accuracy vs rounds (every curve at the base "
                                    "power)"),),
    tables=(Table("leaderboard", "Arena leaderboard: schemes ranked per (ε, SNR)",
                  leaderboard.build, leaderboard.NOTE, audits=True,
                  running_sums=leaderboard.RUNNING_SUMS),),
    label=label, compose=compose,
    panel_keys=("entrant", "arena_snr_db", "target_eps", "arena_points", "arena_panels"),
    claims=(
        Claim("arena_privacy_costs_accuracy", "At the smallest ε of the sweep, non-private "
              "Ideal FedAvg ends above the most accurate private scheme (privacy costs "
              "accuracy on this task).", _privacy_costs_accuracy, panel=ROUNDS_PANEL),
        Claim("arena_dp_fedavg_rises_with_eps", "DP-FedAvg's final accuracy rises with the ε "
              "target.", _dp_fedavg_rises, panel=ROUNDS_PANEL),
        Claim("arena_privacy_costs_accuracy_at_every_snr", "At the SNR figure's ε, non-private "
              "Ideal FedAvg ends above the most accurate private scheme at every edge SNR of "
              "the sweep.", _privacy_costs_accuracy_at_every_snr, panel=SNR_PANEL),
        Claim("arena_ota_fl_same_across_snr", "OTA-FL (truncated channel inversion) ends at the "
              "same accuracy at the lowest and the highest edge SNR of the sweep (within 1 pp): "
              "its receiver noise does not limit training over the sweep.",
              _ota_fl_same_across_snr, panel=SNR_PANEL),
        Claim("arena_dp_fedavg_audit_within_accounted", "DP-FedAvg as the arena runs it (T "
              "rounds, every eps target): the audited lower bound on epsilon does not exceed "
              "its accounted epsilon, as simulated or as its paper states.",
              _audit_within_accounted, panel="audit_dp_fedavg"),
        Claim("arena_airfl_dp_audit_within_accounted", "AirFL-DP as the arena runs it (T "
              "rounds, every eps target and power): the audited lower bound on epsilon does not "
              "exceed its accounted epsilon, as simulated or as its paper states.",
              _audit_within_accounted, panel="audit_airfl_dp"),
        Claim("arena_lapa_uniform_user_audit_within_accounted", "LAPA uniform DP at the "
              "arena's (user-level) budget as the arena runs it (T rounds, every eps target "
              "and power; its worst device's decoded upload): the audited lower bound on "
              "epsilon does not exceed its accounted epsilon, as simulated or as the lapa "
              "wing's records account the upload.", _audit_within_records,
              panel="audit_lapa_uniform_user"),
    ))

EXPERIMENTS = (ARENA,)
