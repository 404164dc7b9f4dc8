"""The checks of Biased FL's claims (paper Sec. V, its text on Figs. 2 and 3) on the stored
figure data: orderings and the "loses little" comparison paired by trial (common random numbers)
against the gap's margin, final values within the paper's "about" ranges, and speed-ups. The
claims themselves, in the paper's words, are declared with their figures in
:mod:`airfl.papers.biased_fl.experiments`."""

from __future__ import annotations

import pandas as pd

from airfl.core.claims import (GAP_MARGIN, Margin, final_by_trial, final_values, fmt,
                               paired_difference, paired_order, resolution, speedups,
                               value_within)
from airfl.core.experiments import CONTRADICTED, HOLDS, INCONCLUSIVE, ClaimResult


def _not_run(final: dict[str, float], curves: list[str]) -> list[str]:
    """Curves a claim names that are not in this panel (offset_only_curves: their design leaves
    no device transmitting at this SNR, so they run only in the SNR-offset panels)."""
    return [c for c in curves if c not in final]


NOT_RUN = "not run at this SNR (its design leaves no device transmitting; see offset_only_curves)"


def ordering(lower: list[str], higher: list[str], metric="suboptimality_gap"):
    """Every curve of `lower` ends with a lower final gap than every curve of `higher`, each
    pair tested across trials, paired by trial (common random numbers), against the gap's
    default margin (5 % relative: `airfl.core.claims.GAP_MARGIN`). A curve of `higher` not run at
    this SNR drops out of the comparison (noted); when a curve of `lower`, or every curve of
    `higher`, is not run, the claim does not apply (n/a)."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        final = final_values(frame, metric)
        missing = _not_run(final, lower + higher)
        present = [c for c in higher if c in final]
        if _not_run(final, lower) or not present:
            return ClaimResult(None, f"n/a: {', '.join(missing)} {NOT_RUN}")
        note = "means " + fmt({c: final[c] for c in lower + present}) + \
            (f"; {', '.join(missing)} {NOT_RUN}" if missing else "")
        return paired_order(final_by_trial(frame, metric),
                            [(a, b) for a in lower for b in present], GAP_MARGIN,
                            higher_is_better=False, note=note)
    return evaluate


def within(curve: str, low: float, high: float, metric: str):
    """The curve's final value in [low, high]: the t interval of its per-trial final values
    inside the range (`airfl.core.claims.value_within`; one trial: inconclusive), the metric's step
    over the panel (`resolution`) standing in for a zero spread."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        return value_within(final_by_trial(frame, metric)[curve], low, high, curve,
                            step=resolution(frame[metric].to_numpy(dtype=float)))
    return evaluate


def speedup(proposed: str, others: list[str], threshold: float, metric: str, lower: bool,
             best_only: bool = False):
    """Speed-up against each other scheme (or only the best one) >= threshold."""
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        final = final_values(frame, metric)
        present = [c for c in others if c in final]            # offset_only_curves are absent
        left_out = f"; {', '.join(sorted(set(others) - set(present)))} {NOT_RUN}" \
            if len(present) < len(others) else ""
        targets = present
        if best_only:
            targets = [min(present, key=final.get) if lower else max(present, key=final.get)]
        ratios = speedups(frame, proposed, targets, metric, lower)
        numbers = f"speed-ups {fmt(ratios, 3)} (need >= {threshold:g}){left_out}"
        if frame["trial"].nunique() < 2:          # one draw of the curves decides nothing
            return ClaimResult.of(INCONCLUSIVE, numbers + " (1 trial)",
                                  f"one trial, no spread over trials: {numbers}")
        return ClaimResult(min(ratios.values()) >= threshold, numbers)
    return evaluate


THRESHOLD_ONLY = Margin(0.0, False, "none: the claim's own threshold is its tolerance")


def small_difference(a: str, b: str, reference: str, fraction: float):
    """b 'loses little' against a (Fig. 3(a)): the loss gap_b - gap_a, signed (b ending
    below a is no loss), stays below fraction * (gap_reference - gap_a), per trial and paired:
    the interval of loss - allowance below 0 holds, above 0 contradicts (one trial: inconclusive).
    """
    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        v = final_by_trial(frame, "suboptimality_gap")
        table = pd.DataFrame({"loss": v[b] - v[a], "allowance": fraction * (v[reference] - v[a])})
        d = paired_difference(table, "loss", "allowance", THRESHOLD_ONLY, higher_is_better=False)
        verdict = d.interval_verdict if d.interval_verdict in (HOLDS, CONTRADICTED) and \
            not d.below_resolution else INCONCLUSIVE
        text = (f"loss {b} - {a} = {table['loss'].mean():+.4g} vs allowance {fraction:g} x "
                f"({reference} - {a}) = {table['allowance'].mean():.4g} (means); "
                + d.describe())
        return ClaimResult.of(verdict, text + " (95 % paired t interval over trials)", text)
    return evaluate


def at_offset(claim_eval, offset: float):
    """Evaluate a variant-ordering claim on the curves of one SNR offset (ids <curve>_<off>db)."""
    suffix = f"_{int(offset)}db"

    def evaluate(frame: pd.DataFrame) -> ClaimResult:
        rows = frame[frame["curve"].str.endswith(suffix)].copy()
        rows["curve"] = rows["curve"].str[: -len(suffix)]
        return claim_eval(rows)
    return evaluate
