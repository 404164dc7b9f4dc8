"""The paired ordering test of claims: ties are ties, a reversal is a no, and the verdicts reach
CLAIMS.md and its metrics."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from airfl.claims import (chain, combine_orderings, final_by_trial, paired_difference,
                          paired_order)
from airfl.experiments import ClaimResult
from airfl.pipeline.stages.claims import markdown, metrics, _tally


def _frame(finals: dict[str, list[float]]) -> pd.DataFrame:
    """Two evaluated rounds per (curve, trial); the last holds the given final value."""
    rows = []
    for curve, values in finals.items():
        for trial, value in enumerate(values):
            rows += [{"curve": curve, "trial": trial, "round": 0, "acc": 0.1},
                     {"curve": curve, "trial": trial, "round": 5, "acc": value}]
    return pd.DataFrame(rows)


def test_final_by_trial_takes_each_trials_last_round():
    values = final_by_trial(_frame({"a": [0.5, 0.6], "b": [0.4, 0.3]}), "acc")
    assert values.loc[1, "a"] == 0.6 and values.loc[0, "b"] == 0.4
    assert list(values.index) == [0, 1]


def test_interval_is_the_paired_t_interval_of_scipy():
    a = np.array([0.71, 0.74, 0.69, 0.75, 0.73])
    b = np.array([0.70, 0.71, 0.70, 0.72, 0.70])
    values = pd.DataFrame({"a": a, "b": b})
    result = paired_difference(values, "a", "b")
    low, high = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert result.mean - result.half_width == pytest.approx(low)
    assert result.mean + result.half_width == pytest.approx(high)


def test_small_difference_inside_the_trial_spread_is_a_tie_not_a_no():
    # b beats a by 0.2 pp on average but trial to trial the difference swings by +-1 pp
    values = pd.DataFrame({"a": [0.80, 0.78, 0.81, 0.77], "b": [0.79, 0.79, 0.80, 0.79]})
    assert paired_difference(values, "a", "b").verdict == "tie"
    result = paired_order(values, [("a", "b")])
    assert result.tie and result.holds is None and result.verdict == "tie"


def test_consistent_difference_is_significant_even_when_means_are_close():
    # common random numbers: a is 0.1 pp above b in every trial although the trials differ a lot
    base = np.array([0.60, 0.75, 0.70, 0.82])
    values = pd.DataFrame({"a": base + 0.001, "b": base + np.array([0.0, 0.0002, 0.0001, 0.0])})
    assert paired_order(values, [("a", "b")]).verdict == "yes"
    assert paired_order(values, [("b", "a")]).verdict == "no"


def test_lower_is_better_flips_the_sign():
    values = pd.DataFrame({"gap_small": [0.1, 0.12, 0.11], "gap_large": [0.5, 0.52, 0.49]})
    result = paired_order(values, [("gap_small", "gap_large")], higher_is_better=False)
    assert result.holds
    assert "gap_small − gap_large = -0.393 ± " in result.numbers      # the metric's own sign
    assert "[yes, lower is better]" in result.numbers
    assert paired_order(values, [("gap_small", "gap_large")]).holds is False


def test_identical_curves_tie_even_with_one_trial():
    values = pd.DataFrame({"a": [0.5], "b": [0.5], "c": [0.4]})
    assert paired_difference(values, "a", "b").verdict == "tie"
    one = paired_difference(values, "a", "c")
    assert one.verdict == "yes" and "(1 trial)" in one.describe()


def test_a_chain_is_no_when_any_link_reverses_and_tie_when_any_link_ties():
    values = pd.DataFrame({"a": [0.9, 0.91, 0.92], "b": [0.8, 0.81, 0.8],
                           "c": [0.81, 0.79, 0.82], "d": [0.5, 0.52, 0.51]})
    assert chain(["a", "b", "c"]) == [("a", "b"), ("b", "c")]
    assert paired_order(values, chain(["a", "b", "d"])).verdict == "yes"
    assert paired_order(values, chain(["a", "b", "c"])).verdict == "tie"
    assert paired_order(values, chain(["a", "d", "b"])).verdict == "no"


def test_combine_needs_every_part_and_reports_each():
    values = pd.DataFrame({"a": [1.0, 1.1], "b": [0.0, 0.1]})
    part = paired_difference(values, "a", "b")
    result = combine_orderings([part], scale=100, unit=" pp", note="n")
    assert result.holds and "a − b = +100 ± 89.8 pp [yes]" in result.numbers
    assert result.numbers.endswith("; n")


def test_unpaired_curves_are_an_error():
    values = pd.DataFrame({"a": [0.5, np.nan], "b": [np.nan, 0.4]})
    with pytest.raises(ValueError, match="no trial has both"):
        paired_difference(values, "a", "b")


def test_claims_table_counts_ties_apart_from_yes_and_no():
    results = [{"figure": "p/f", "claim": c, "statement": "s", "numbers": "n", "holds": h,
                "verdict": v}
               for c, h, v in [("a", True, "yes"), ("b", False, "no"), ("c", None, "tie"),
                               ("d", None, "n/a")]]
    assert _tally(results) == {"held": 1, "checked": 2, "ties": 1, "n/a": 1}
    text = markdown(results, {"profile": "quick", "seed": 0})
    assert "| tie |" in text and "| **no** |" in text
    assert "1 of 2 claims hold, 1 ties, 1 n/a." in text


def test_claims_metrics_score_each_verdict_so_a_flip_shows_in_dvc_metrics_diff():
    results = [{"figure": "p/f", "claim": c, "statement": "s", "numbers": "n", "holds": h,
                "verdict": v}
               for c, h, v in [("a", True, "yes"), ("b", False, "no"), ("c", None, "tie"),
                               ("d", None, "n/a")]]
    shown = metrics(results)
    assert shown["verdicts"] == {"p/f": {"a": 1.0, "b": 0.0, "c": 0.5}}   # n/a: no score
    assert (shown["held"], shown["no"], shown["ties"], shown["total"]) == (1, 1, 1, 4)
    flipped = metrics([{**results[0], "holds": False, "verdict": "no"}, *results[1:]])
    assert flipped["verdicts"]["p/f"]["a"] == 0.0 and flipped["held"] == 0


def test_claim_result_verdicts():
    assert ClaimResult(True, "").verdict == "yes"
    assert ClaimResult(False, "").verdict == "no"
    assert ClaimResult(None, "").verdict == "n/a"
    assert ClaimResult(None, "", tie=True).verdict == "tie"


def test_trend_holds_up_to_trial_noise_and_fails_on_a_significant_reversal():
    from airfl.claims import paired_trend

    noisy = pd.DataFrame({"e1": [0.50, 0.52, 0.51], "e2": [0.70, 0.69, 0.72],
                          "e3": [0.71, 0.68, 0.71]})          # e3 ~ e2: a tie inside the trend
    assert paired_trend(noisy, ["e1", "e2", "e3"]).verdict == "yes"
    reversed_ = noisy.assign(e3=[0.60, 0.61, 0.60])
    assert paired_trend(reversed_, ["e1", "e2", "e3"]).verdict == "no"
    flat = pd.DataFrame({"e1": [0.5, 0.52], "e2": [0.51, 0.5]})
    assert paired_trend(flat, ["e1", "e2"]).verdict == "tie"
    assert paired_trend(noisy, ["e3", "e2", "e1"], higher_is_better=False).verdict == "yes"


def test_a_zero_spread_of_one_resolution_step_is_a_tie_with_few_trials_not_a_verdict():
    """Accuracy on 2,000 test images moves in 0.05 pp steps: two trials that both differ by one
    image have zero sample spread, which is the measurement's resolution, not certainty."""
    from airfl.claims import resolution

    two = pd.DataFrame({"clip": [0.8050, 0.8060], "mimo": [0.8055, 0.8065]})
    assert resolution(two.to_numpy()) == pytest.approx(0.0005)
    assert paired_difference(two, "clip", "mimo").verdict == "tie"
    # the same one-step difference in every one of 12 trials is an ordering
    many = pd.DataFrame({"clip": 0.80 + 0.001 * np.arange(12)}).assign(
        mimo=lambda f: f["clip"] + 0.0005)
    assert paired_difference(many, "mimo", "clip").verdict == "yes"
    # a large difference with zero spread stays significant with two trials when the table
    # shows the measurement's fine step
    far = pd.DataFrame({"a": [0.9000, 0.9500], "b": [0.5000, 0.5500], "c": [0.9005, 0.5005]})
    assert paired_difference(far, "a", "b").verdict == "yes"


def test_the_resolution_floor_is_half_of_float32s_significand():
    """r = sqrt(eps_float32) = 2^-11.5 (airfl.claims.RELATIVE_RESOLUTION): fixed from the dtype,
    above the float32 reordering bound of one round's longest reduction (785 u)."""
    from airfl.claims import RELATIVE_RESOLUTION

    assert RELATIVE_RESOLUTION == pytest.approx(2.0 ** -11.5, rel=1e-12)
    assert RELATIVE_RESOLUTION > 785 * 2.0 ** -24


def test_pure_rounding_noise_is_a_tie_below_numerical_resolution():
    """The same float32 losses summed in two orders (pairwise and sequential, as a lockstep run
    reorders a reduction): the two 'curves' differ by rounding alone, within Higham's bound
    gamma_{n-1} sum|x| < r; whatever the t interval says, the verdict is a tie."""
    rng = np.random.default_rng(0)
    losses = rng.random((8, 1000)).astype(np.float32)
    pairwise = [float(np.sum(row, dtype=np.float32)) for row in losses]
    sequential = [float(np.cumsum(row, dtype=np.float32)[-1]) for row in losses]
    values = pd.DataFrame({"pairwise": pairwise, "sequential": sequential})
    assert not np.array_equal(values["pairwise"], values["sequential"])   # rounding differs
    result = paired_difference(values, "pairwise", "sequential", higher_is_better=False)
    assert result.below_resolution and result.verdict == "tie"
    exact = pd.DataFrame({"a": pairwise, "b": pairwise})           # the same value: no note
    assert paired_difference(exact, "a", "b").describe().endswith("[tie]")


def test_the_lockstep_flip_of_biased_fl_fig3a_is_a_tie_and_says_what_the_interval_said():
    """Biased FL Fig. 3(a) at 60 dB: a difference of +2.95e-08 on gaps of
    0.002654 with a tiny spread; the t interval alone calls it a reversal, the floor a tie."""
    offsets = np.array([2.6e-8, 3.3e-8, 2.9e-8, 3.0e-8])
    values = pd.DataFrame({"opt": 0.002654 + offsets, "zb": np.full(4, 0.002654)})
    result = paired_difference(values, "opt", "zb", higher_is_better=False)
    assert result.interval_verdict == "no" and result.verdict == "tie"
    assert "the interval alone: no" in result.describe()
    claim = paired_order(values, [("opt", "zb")], higher_is_better=False)
    assert claim.tie and claim.holds is None


def test_a_real_small_difference_with_a_tiny_spread_is_not_a_tie():
    """A difference of 1e-3 relative (3x the floor) that every trial shows, give or take 1e-7,
    is an ordering: the floor removes rounding, not small effects."""
    offsets = 1e-3 * 0.5 + np.array([1e-7, -1e-7, 0.0, 2e-7])
    values = pd.DataFrame({"a": np.full(4, 0.5) + offsets, "b": np.full(4, 0.5)})
    result = paired_difference(values, "a", "b")
    assert not result.below_resolution and result.verdict == "yes"
    assert paired_difference(values, "b", "a").verdict == "no"
