"""The claims of X1 (spec §7), evaluated on the stored figure CSV (one row per curve, trial and
evaluated round). Orderings inside the spread over trials are ties (`airfl.claims`)."""

from __future__ import annotations

import pandas as pd

from airfl.claims import chain, final_by_trial, paired_difference, paired_order, paired_trend
from airfl.experiments import ClaimResult

ACCURACY = "test_accuracy"


def _dp_curves(frame: pd.DataFrame) -> list[str]:
    """The OTA-FD curves in increasing eps."""
    dp = frame.dropna(subset=["param_eps_full"]) if "param_eps_full" in frame else frame[:0]
    return list(dp.sort_values("param_eps_full")["curve"].drop_duplicates())


def _eps(frame: pd.DataFrame, curve: str) -> float:
    return float(frame.loc[frame["curve"] == curve, "param_eps_full"].iloc[0])


def dp_beats_local(frame: pd.DataFrame) -> ClaimResult:
    """Per eps: OTA-FD minus local only (paired over trials); holds when some eps beats it
    significantly, and names the smallest such eps (all larger ones must not lose)."""
    values = final_by_trial(frame, ACCURACY)
    parts = [(e, paired_difference(values, c, "local_only"))
             for e, c in ((_eps(frame, c), c) for c in _dp_curves(frame))]
    text = "; ".join(f"ε = {e:g}: {p.describe(100, ' pp')}" for e, p in parts)
    wins = [e for e, p in parts if p.verdict == "yes"]
    if not wins:
        ties = any(p.verdict == "tie" for _, p in parts)
        return ClaimResult(None if ties else False,
                           f"no ε of the sweep beats local only: {text}", tie=ties)
    return ClaimResult(True, f"from ε = {min(wins):g} on (smallest ε that wins): {text}")


def distillation_helps(frame: pd.DataFrame) -> ClaimResult:
    return paired_order(final_by_trial(frame, ACCURACY), [("fd_noiseless", "local_only")],
                        scale=100, unit=" pp")


def cost_of_dp(frame: pd.DataFrame) -> ClaimResult:
    dp = _dp_curves(frame)
    return paired_order(final_by_trial(frame, ACCURACY),
                        chain(["fd_noiseless", "fd_ota_nodp", dp[0]]), scale=100, unit=" pp")


def tradeoff(frame: pd.DataFrame) -> ClaimResult:
    values = final_by_trial(frame, ACCURACY)
    curves = _dp_curves(frame)
    finals = ", ".join(f"ε = {_eps(frame, c):g}: {100 * values[c].mean():.1f} %" for c in curves)
    return paired_trend(values, curves, scale=100, unit=" pp", note=f"final acc {finals}")


def privacy_met(frame: pd.DataFrame) -> ClaimResult:
    worst = frame.groupby("curve")["eps_real_ratio_max"].max()
    text = ", ".join(f"{c}: {v:.4f}" for c, v in worst.items())
    return ClaimResult(bool((worst <= 1.0 + 1e-9).all()),
                       f"max realised ε_i / ε_i per curve: {text}")
