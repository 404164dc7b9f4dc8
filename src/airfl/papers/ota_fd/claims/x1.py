"""The claims of X1, evaluated on the stored figure CSV (one row per curve, trial and
evaluated round). Comparisons over trials against the declared margin (`airfl.core.claims`: holds,
contradicted, equivalent, inconclusive); one trial never decides one."""

from __future__ import annotations

import pandas as pd

from airfl.core.claims import (ACCURACY_MARGIN, chain, combine_verdicts, final_by_trial,
                               paired_difference, paired_equivalence, paired_order, paired_trend)
from airfl.core.experiments import HOLDS, ClaimResult

ACCURACY = "test_accuracy"
#: "Same accuracy" claims (same noise nu, Prop. 1's Case II family): within 0.5 pp, our
#: tolerance (the appendix states none).
SAME_MARGIN = ACCURACY_MARGIN.because(0.005, "ours: 0.5 pp; the appendix gives no tolerance "
                                      "for 'the same'")


def _dp_curves(frame: pd.DataFrame) -> list[str]:
    """The proposed OTA-FD curves (no benchmark variants) in increasing eps."""
    dp = frame[frame["curve"].str.startswith("otafd_prop_e")]
    return list(dp.sort_values("param_eps_full")["curve"].drop_duplicates())


def _eps(frame: pd.DataFrame, curve: str) -> float:
    return float(frame.loc[frame["curve"] == curve, "param_eps_full"].iloc[0])


def dp_beats_local(frame: pd.DataFrame) -> ClaimResult:
    """Per eps: OTA-FD minus local only (paired over trials); holds when some eps beats it
    significantly, and names the smallest such eps (all larger ones must not lose)."""
    values = final_by_trial(frame, ACCURACY)
    parts = [(e, paired_difference(values, c, "local_only", ACCURACY_MARGIN))
             for e, c in ((_eps(frame, c), c) for c in _dp_curves(frame))]
    text = "; ".join(f"ε = {e:g}: {p.describe(100, ' pp')}" for e, p in parts)
    wins = [e for e, p in parts if p.verdict == HOLDS]
    if not wins:         # none holds: the others' verdicts decide (contradicted first)
        verdict = combine_verdicts(p.verdict for _, p in parts)
        return ClaimResult.of(verdict, f"no ε of the sweep beats local only: {text}",
                              "; ".join(f"ε = {e:g}: {p.describe(100, ' pp')}" for e, p in parts
                                        if p.verdict == verdict))
    return ClaimResult(True, f"from ε = {min(wins):g} on (smallest ε that wins): {text}")


def distillation_helps(frame: pd.DataFrame) -> ClaimResult:
    return paired_order(final_by_trial(frame, ACCURACY), [("fd_noiseless", "local_only")],
                        ACCURACY_MARGIN, scale=100, unit=" pp")


def cost_of_dp(frame: pd.DataFrame) -> ClaimResult:
    dp = _dp_curves(frame)
    return paired_order(final_by_trial(frame, ACCURACY),
                        chain(["fd_noiseless", "fd_ota_nodp", dp[0]]), ACCURACY_MARGIN,
                        scale=100, unit=" pp")


def tradeoff(frame: pd.DataFrame) -> ClaimResult:
    values = final_by_trial(frame, ACCURACY)
    curves = _dp_curves(frame)
    finals = ", ".join(f"ε = {_eps(frame, c):g}: {100 * values[c].mean():.1f} %" for c in curves)
    return paired_trend(values, curves, ACCURACY_MARGIN, scale=100, unit=" pp",
                        note=f"final acc {finals}")


def privacy_met(frame: pd.DataFrame) -> ClaimResult:
    worst = frame.groupby("curve")["eps_real_ratio_max"].max()
    text = ", ".join(f"{c}: {v:.4f}" for c, v in worst.items())
    return ClaimResult(bool((worst <= 1.0 + 1e-9).all()),
                       f"max realised ε_i / ε_i per curve: {text}")


def _benchmark(frame: pd.DataFrame, prefix: str) -> str | None:
    names = [c for c in frame["curve"].unique() if c.startswith(prefix)]
    return names[0] if names else None


def _versus(prefix: str, proposed_wins: bool):
    """The proposed design at the benchmark's eps against the benchmark (n/a when not run)."""
    def check(frame: pd.DataFrame) -> ClaimResult:
        other = _benchmark(frame, prefix)
        if other is None:
            return ClaimResult(None, f"{prefix} not run in this profile")
        mine = "otafd_prop_e" + other.rsplit("_e", 1)[1]
        if mine not in set(frame["curve"]):
            return ClaimResult(None, f"{mine} not run in this profile")
        values = final_by_trial(frame, ACCURACY)
        if proposed_wins:
            return paired_order(values, [(mine, other)], ACCURACY_MARGIN, scale=100,
                                unit=" pp")
        return paired_equivalence(values, mine, other, SAME_MARGIN, scale=100, unit=" pp")
    return check
