"""The verdicts of claims on constructed data: holds, contradicted, equivalent (inside the
declared margin, or below the numerical resolution) and inconclusive (with what the trials could
have detected), one trial never deciding; and how they reach CLAIMS.md and its metrics."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from airfl.core.claims import (ACCURACY_MARGIN, GAP_MARGIN, Margin, all_of, chain,
                               combine_orderings, combine_verdicts, final_by_trial, final_values,
                               paired_difference, paired_equivalence, paired_noninferior,
                               paired_order, paired_trend, value_within)
from airfl.core.experiments import ClaimResult, VERDICTS
from airfl.pipeline.stages.claims import by_paper, counts, markdown, metrics

PP = ACCURACY_MARGIN                      # 1 pp
NONE = Margin(0.0, False, "no margin (test)")


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


def test_final_values_weigh_every_trial_once_on_a_time_grid():
    """On a step-hold time grid a trial whose last round is held over three grid points used to
    count three times (Biased FL's QML: 1.628 reported for 1.484): one value per trial."""
    rows = [{"curve": "q", "trial": 0, "round": r, "time_s": t, "gap": g}
            for r, t, g in [(0, 0.0, 3.0), (1, 0.5, 2.0), (1, 1.0, 2.0), (1, 1.5, 2.0)]]
    rows += [{"curve": "q", "trial": 1, "round": r, "time_s": t, "gap": g}
             for r, t, g in [(0, 0.0, 3.0), (1, 0.5, 2.5), (2, 1.0, 1.0), (3, 1.5, 0.5)]]
    frame = pd.DataFrame(rows)
    assert final_values(frame, "gap") == {"q": pytest.approx((2.0 + 0.5) / 2)}
    assert final_by_trial(frame, "gap")["q"].tolist() == [2.0, 0.5]


def test_interval_is_the_paired_t_interval_of_scipy():
    a = np.array([0.71, 0.74, 0.69, 0.75, 0.73])
    b = np.array([0.70, 0.71, 0.70, 0.72, 0.70])
    result = paired_difference(pd.DataFrame({"a": a, "b": b}), "a", "b", PP)
    low, high = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert result.mean - result.half_width == pytest.approx(low)
    assert result.mean + result.half_width == pytest.approx(high)


def test_a_margin_must_be_declared():
    values = pd.DataFrame({"a": [0.5, 0.6], "b": [0.4, 0.5]})
    with pytest.raises(TypeError, match="Margin"):
        paired_difference(values, "a", "b", 0.01)
    with pytest.raises(ValueError, match="basis"):
        Margin(0.01, False, "")
    with pytest.raises(ValueError, match="size"):
        Margin(-1.0, False, "x")
    assert "overrides the default" in PP.because(0.005, "a 0.5 pp reading").basis


# -- each verdict on constructed data ------------------------------------------------------------

def test_holds_when_the_interval_excludes_0_on_the_claimed_side_beyond_the_margin():
    values = pd.DataFrame({"a": [0.80, 0.82, 0.81, 0.83], "b": [0.75, 0.76, 0.76, 0.77]})
    assert paired_difference(values, "a", "b", PP).verdict == "holds"
    result = paired_order(values, [("a", "b")], PP, scale=100, unit=" pp")
    assert result.verdict == "holds" and "margin ±1 pp: accuracy default" in result.numbers


def test_contradicted_when_the_interval_excludes_0_on_the_other_side():
    values = pd.DataFrame({"a": [0.80, 0.82, 0.81, 0.83], "b": [0.75, 0.76, 0.76, 0.77]})
    result = paired_order(values, [("b", "a")], PP, scale=100, unit=" pp")
    assert result.verdict == "contradicted" and result.holds is False
    assert result.reason.startswith("b − a = -5.5")


def test_equivalent_when_the_interval_lies_inside_the_margin_even_if_it_excludes_0():
    """A beats B by 0.2 pp in every trial (significant) but the paper would call 0.2 pp the
    same: equivalent, which is not a holds."""
    base = np.array([0.60, 0.75, 0.70, 0.82, 0.66])
    values = pd.DataFrame({"a": base + 0.002 + np.array([0, 1e-4, -1e-4, 2e-4, 0]), "b": base})
    d = paired_difference(values, "a", "b", PP)
    assert d.mean - d.half_width > 0                        # the interval alone: holds
    assert d.verdict == "equivalent"
    result = paired_order(values, [("a", "b")], PP)
    assert result.verdict == "equivalent" and result.holds is None
    assert "equivalent within ±0.01" in result.numbers
    assert paired_difference(values, "a", "b", NONE).verdict == "holds"   # no margin: holds


def test_inconclusive_says_what_the_trials_could_detect_and_how_many_would_detect_the_paper():
    values = pd.DataFrame({"a": [0.80, 0.78, 0.84, 0.77], "b": [0.79, 0.79, 0.80, 0.79]})
    d = paired_difference(values, "a", "b", PP, paper_gap=0.02)
    assert d.verdict == "inconclusive"
    s = float(np.std(values["a"] - values["b"], ddof=1))
    factor = (stats.t.ppf(0.975, 3) + stats.t.ppf(0.8, 3)) / 2
    assert d.detectable == pytest.approx(factor * s)
    need = d.trials_to_detect(0.02)
    assert need > 4
    n = need
    assert (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * s / math.sqrt(n) <= 0.02
    n = need - 1
    assert (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * s / math.sqrt(n) > 0.02
    text = d.describe(100, " pp")
    assert "inconclusive: detectable ≥" in text and f"needs {need} trials" in text
    result = paired_order(values, [("a", "b")], PP, paper_gaps={("a", "b"): 0.02})
    assert result.verdict == "inconclusive" and "needs" in result.reason


def test_one_trial_never_decides_a_random_quantity():
    values = pd.DataFrame({"a": [0.9], "b": [0.5]})
    d = paired_difference(values, "a", "b", PP)
    assert d.verdict == "inconclusive" and "(1 trial)" in d.describe()
    assert "one trial" in d.describe()
    assert paired_order(values, [("b", "a")], PP).verdict == "inconclusive"
    assert paired_trend(values, ["b", "a"], PP).verdict == "inconclusive"
    assert value_within([0.97], 0.94, 1.0, "acc").verdict == "inconclusive"
    assert paired_noninferior(values, "b", "a", PP).verdict == "inconclusive"
    assert paired_equivalence(values, "a", "b", PP).verdict == "inconclusive"


def test_identical_curves_are_equivalent_by_resolution_even_with_one_trial():
    values = pd.DataFrame({"a": [0.5], "b": [0.5]})
    d = paired_difference(values, "a", "b", PP)
    assert d.below_resolution and d.verdict == "equivalent"
    assert "below numerical resolution" in d.describe()


def test_the_resolution_floor_is_half_of_float32s_significand():
    """r = sqrt(eps_float32) = 2^-11.5 (airfl.core.resolution.RELATIVE_RESOLUTION): fixed from the dtype,
    above the float32 reordering bound of one round's longest reduction (785 u)."""
    from airfl.core.resolution import RELATIVE_RESOLUTION

    assert RELATIVE_RESOLUTION == pytest.approx(2.0 ** -11.5, rel=1e-12)
    assert RELATIVE_RESOLUTION > 785 * 2.0 ** -24


def test_pure_rounding_noise_is_equivalent_below_numerical_resolution():
    """The same float32 losses summed in two orders (pairwise and sequential, as a lockstep run
    reorders a reduction): the two 'curves' differ by rounding alone; whatever the t interval
    says, the verdict is equivalent, with no margin at all."""
    rng = np.random.default_rng(0)
    losses = rng.random((8, 1000)).astype(np.float32)
    pairwise = [float(np.sum(row, dtype=np.float32)) for row in losses]
    sequential = [float(np.cumsum(row, dtype=np.float32)[-1]) for row in losses]
    values = pd.DataFrame({"pairwise": pairwise, "sequential": sequential})
    assert not np.array_equal(values["pairwise"], values["sequential"])   # rounding differs
    result = paired_difference(values, "pairwise", "sequential", NONE, higher_is_better=False)
    assert result.below_resolution and result.verdict == "equivalent"


def test_the_lockstep_flip_of_biased_fl_fig3a_is_equivalent_and_says_what_the_interval_said():
    """Biased FL Fig. 3(a) at 60 dB: a difference of +2.95e-08 on gaps of 0.002654 with a tiny
    spread; the t interval alone calls it a reversal, the floor equivalent."""
    offsets = np.array([2.6e-8, 3.3e-8, 2.9e-8, 3.0e-8])
    values = pd.DataFrame({"opt": 0.002654 + offsets, "zb": np.full(4, 0.002654)})
    result = paired_difference(values, "opt", "zb", NONE, higher_is_better=False)
    assert result.interval_verdict == "contradicted" and result.verdict == "equivalent"
    assert "the interval alone: contradicted" in result.describe()
    assert paired_order(values, [("opt", "zb")], GAP_MARGIN,
                        higher_is_better=False).verdict == "equivalent"


def test_a_real_small_difference_with_a_tiny_spread_is_not_below_resolution():
    """A difference of 1e-3 relative (3x the floor) that every trial shows is an ordering when
    no margin covers it: the floor removes rounding, not small effects."""
    offsets = 1e-3 * 0.5 + np.array([1e-7, -1e-7, 0.0, 2e-7])
    values = pd.DataFrame({"a": np.full(4, 0.5) + offsets, "b": np.full(4, 0.5)})
    result = paired_difference(values, "a", "b", NONE)
    assert not result.below_resolution and result.verdict == "holds"
    assert paired_difference(values, "b", "a", NONE).verdict == "contradicted"


def test_lower_is_better_flips_the_sign_and_a_relative_margin_scales_with_the_values():
    values = pd.DataFrame({"gap_small": [0.1, 0.12, 0.11], "gap_large": [0.5, 0.52, 0.49]})
    result = paired_order(values, [("gap_small", "gap_large")], GAP_MARGIN,
                          higher_is_better=False)
    assert result.verdict == "holds"
    assert "gap_small − gap_large = -0.393 ± " in result.numbers      # the metric's own sign
    assert "[holds, lower is better]" in result.numbers
    assert paired_order(values, [("gap_small", "gap_large")], GAP_MARGIN).verdict == \
        "contradicted"
    d = paired_difference(values, "gap_small", "gap_large", GAP_MARGIN)
    assert d.margin == pytest.approx(0.05 * values["gap_large"].mean())


def test_a_zero_spread_of_one_resolution_step_is_inconclusive_with_few_trials():
    """Accuracy on 2,000 test images moves in 0.05 pp steps: two trials that both differ by one
    image have zero sample spread, which is the measurement's resolution, not certainty."""
    from airfl.core.claims import resolution

    two = pd.DataFrame({"clip": [0.8050, 0.8060], "mimo": [0.8055, 0.8065]})
    assert resolution(two.to_numpy()) == pytest.approx(0.0005)
    assert paired_difference(two, "clip", "mimo", NONE).verdict == "inconclusive"
    many = pd.DataFrame({"clip": 0.80 + 0.001 * np.arange(12)}).assign(
        mimo=lambda f: f["clip"] + 0.0005)
    assert paired_difference(many, "mimo", "clip", NONE).verdict == "holds"
    assert paired_difference(many, "mimo", "clip", PP).verdict == "equivalent"


def test_unpaired_curves_are_an_error():
    values = pd.DataFrame({"a": [0.5, np.nan], "b": [np.nan, 0.4]})
    with pytest.raises(ValueError, match="no trial has both"):
        paired_difference(values, "a", "b", PP)


# -- combining parts -------------------------------------------------------------------------------

def test_parts_combine_contradicted_first_then_equivalent_then_inconclusive():
    assert combine_verdicts(["holds", "holds"]) == "holds"
    assert combine_verdicts(["holds", "inconclusive"]) == "inconclusive"
    assert combine_verdicts(["inconclusive", "equivalent", "holds"]) == "equivalent"
    assert combine_verdicts(["equivalent", "contradicted"]) == "contradicted"
    assert combine_verdicts(["n/a", "holds"]) == "holds"
    assert combine_verdicts(["n/a"]) == "n/a"


def test_a_chain_is_contradicted_when_any_link_reverses_and_inconclusive_when_one_cannot_tell():
    values = pd.DataFrame({"a": [0.9, 0.91, 0.92], "b": [0.8, 0.81, 0.8],
                           "c": [0.81, 0.75, 0.85], "d": [0.5, 0.52, 0.51]})
    assert chain(["a", "b", "c"]) == [("a", "b"), ("b", "c")]
    assert paired_order(values, chain(["a", "b", "d"]), PP).verdict == "holds"
    chained = paired_order(values, chain(["a", "b", "c"]), PP)
    assert chained.verdict == "inconclusive" and chained.reason.startswith("b − c")
    assert paired_order(values, chain(["a", "d", "b"]), PP).verdict == "contradicted"


def test_combine_reports_each_part_and_the_margin():
    values = pd.DataFrame({"a": [1.0, 1.1], "b": [0.0, 0.1]})
    part = paired_difference(values, "a", "b", PP)
    result = combine_orderings([part], scale=100, unit=" pp", note="n")
    assert result.verdict == "holds" and "a − b = +100 ± 89.8 pp [holds]" in result.numbers
    assert result.numbers.endswith("; n")


def test_trend_holds_up_to_trial_noise_and_fails_on_a_significant_reversal():
    noisy = pd.DataFrame({"e1": [0.50, 0.52, 0.51], "e2": [0.70, 0.69, 0.72],
                          "e3": [0.71, 0.68, 0.71]})          # e3 ~ e2 inside the trend
    assert paired_trend(noisy, ["e1", "e2", "e3"], PP).verdict == "holds"
    reversed_ = noisy.assign(e3=[0.60, 0.61, 0.60])
    assert paired_trend(reversed_, ["e1", "e2", "e3"], PP).verdict == "contradicted"
    flat = pd.DataFrame({"e1": [0.5, 0.52], "e2": [0.51, 0.5]})
    assert paired_trend(flat, ["e1", "e2"], PP).verdict == "inconclusive"
    same = pd.DataFrame({"e1": [0.5, 0.52, 0.51, 0.53], "e2": [0.501, 0.521, 0.512, 0.531]})
    assert paired_trend(same, ["e1", "e2"], PP).verdict == "equivalent"
    assert paired_trend(noisy, ["e3", "e2", "e1"], PP, higher_is_better=False).verdict == \
        "holds"


def test_all_of_combines_checks_and_gives_the_deciding_reason():
    ok, bad = ClaimResult(True, "fine"), ClaimResult(False, "broken", reason="why broken")
    result = all_of([ok, bad, ClaimResult.of("inconclusive", "unsure")])
    assert result.verdict == "contradicted" and result.reason == "why broken"
    assert all_of([ok, ClaimResult(None, "not run")]).verdict == "holds"
    from airfl.core.claims import named

    part = named("SNR 3 dB", bad)
    assert part.verdict == "contradicted" and part.reason == "SNR 3 dB: why broken"
    assert all_of([ok, part]).reason == "SNR 3 dB: why broken"


# -- the other kinds of comparison ----------------------------------------------------------------

def test_equivalence_claims_hold_inside_the_margin_and_fail_beyond_it():
    base = np.array([0.80, 0.70, 0.75, 0.78])
    same = pd.DataFrame({"a": base + np.array([0.001, -0.002, 0.0, 0.001]), "b": base})
    assert paired_equivalence(same, "a", "b", PP).verdict == "holds"
    far = pd.DataFrame({"a": base + 0.05 + np.array([0.001, -0.002, 0.0, 0.001]), "b": base})
    assert paired_equivalence(far, "a", "b", PP).verdict == "contradicted"
    noisy = pd.DataFrame({"a": base + np.array([0.03, -0.03, 0.02, -0.01]), "b": base})
    assert paired_equivalence(noisy, "a", "b", PP).verdict == "inconclusive"


def test_noninferiority_holds_above_minus_the_margin_and_fails_below_it():
    base = np.array([0.80, 0.70, 0.75, 0.78])
    wiggle = np.array([0.002, -0.002, 0.0, 0.001])
    fd = pd.DataFrame({"fl": base})
    assert paired_noninferior(fd.assign(fd=base - 0.02 + wiggle), "fd", "fl",
                              PP.because(0.05, "5 pp")).verdict == "holds"
    assert paired_noninferior(fd.assign(fd=base - 0.10 + wiggle), "fd", "fl",
                              PP.because(0.05, "5 pp")).verdict == "contradicted"
    assert paired_noninferior(fd.assign(fd=base - 0.05 + 3 * wiggle), "fd", "fl",
                              PP.because(0.05, "5 pp")).verdict == "inconclusive"


def test_a_value_in_a_target_range_uses_the_interval_of_its_trials():
    assert value_within([0.97, 0.975, 0.968], 0.94, 1.0, "acc").verdict == "holds"
    assert value_within([0.90, 0.905, 0.91], 0.94, 1.0, "acc").verdict == "contradicted"
    assert value_within([0.93, 0.99, 0.95], 0.94, 1.0, "acc").verdict == "inconclusive"
    assert value_within([1.005, 1.006, 1.004], 0.95, 1.01, "acc").verdict == "holds"


# -- the results, CLAIMS.md and the metrics ----------------------------------------------------------

def test_claim_result_verdicts():
    assert ClaimResult(True, "").verdict == "holds"
    assert ClaimResult(False, "").verdict == "contradicted"
    assert ClaimResult(None, "").verdict == "n/a"
    assert ClaimResult(None, "", "equivalent").verdict == "equivalent"
    assert ClaimResult.of("inconclusive", "x").holds is None
    with pytest.raises(ValueError, match="undecided"):
        ClaimResult(None, "", "tie")
    with pytest.raises(ValueError, match="one of them"):
        ClaimResult(True, "", "equivalent")
    with pytest.raises(ValueError, match="verdict"):
        ClaimResult.of("yes", "")


def _rows():
    return [{"figure": f"{p}/f", "claim": c, "statement": "s", "numbers": f"numbers {c}",
             "verdict": v, "reason": f"reason {c}"}
            for p, c, v in [("p", "a", "holds"), ("p", "b", "contradicted"),
                            ("p", "c", "inconclusive"), ("p", "d", "n/a"),
                            ("q", "e", "equivalent")]]


def test_claims_md_reads_top_down_counts_then_what_fails_then_every_row():
    text = markdown(_rows(), {"profile": "quick", "seed": 0})
    counts_at, open_at, all_at = (text.index("## Verdicts by paper"),
                                  text.index("## Contradicted and inconclusive"),
                                  text.index("## Every claim"))
    assert counts_at < open_at < all_at
    assert "| p | 1 | 1 | 0 | 1 | 1 | 4 |" in text and "| q | 0 | 0 | 1 | 0 | 0 | 1 |" in text
    assert "| **all** | 1 | 1 | 1 | 1 | 1 | 5 |" in text
    failing = text[open_at:all_at]
    assert "| p/f | b | **contradicted** | reason b |" in failing
    assert "| p/f | c | *inconclusive* | reason c |" in failing
    assert "reason a" not in failing and "reason e" not in failing
    assert "tie" not in text.lower().replace("statement", "")


def test_claims_metrics_are_compact_and_a_flip_shows_in_dvc_metrics_diff():
    shown = metrics(_rows())
    assert set(shown) == {"counts", "papers", "verdicts"}
    assert shown["counts"] == {**{v: 1 for v in VERDICTS}, "total": 5}
    assert shown["papers"]["q"]["equivalent"] == 1
    assert shown["verdicts"] == {"p/f": {"a": "holds", "b": "contradicted", "c": "inconclusive",
                                         "d": "n/a"}, "q/f": {"e": "equivalent"}}
    assert "numbers" not in str(shown) and "reason" not in str(shown)
    flipped = metrics([{**_rows()[0], "verdict": "contradicted"}, *_rows()[1:]])
    assert flipped["verdicts"]["p/f"]["a"] == "contradicted"
    assert flipped["counts"]["holds"] == 0 and flipped["counts"]["contradicted"] == 2
    assert counts(_rows())["total"] == 5 and list(by_paper(_rows())) == ["p", "q"]


def test_the_stage_writes_rows_and_compact_metrics_and_collects_every_paper_from_the_rows(
        tmp_path, monkeypatch):
    import json

    from airfl.pipeline import paths
    from airfl.pipeline.stages import claims as stage

    monkeypatch.chdir(tmp_path)
    rows = {"p": _rows()[:4], "q": _rows()[4:]}
    monkeypatch.setattr(stage, "evaluate_paper", lambda paper, params: rows[paper])
    monkeypatch.setattr(stage, "papers", lambda: ["p", "q"])
    monkeypatch.setattr(stage, "audit_claims", lambda wings: [])
    params = {"profile": "quick", "seed": 0}
    for paper in ("p", "q"):
        stage.run(params, paper)
        assert json.loads(paths.claims_rows(paper).read_text())["claims"] == rows[paper]
        shown = json.loads(paths.claims_metrics(paper).read_text())
        assert shown["counts"]["total"] == len(rows[paper]) and "claims" not in shown
    stage.run(params)
    collected = json.loads(paths.claims_metrics().read_text())
    assert collected["papers"]["p"]["contradicted"] == 1 and collected["counts"]["total"] == 5
    assert "| **all** | 1 | 1 | 1 | 1 | 1 | 5 |" in paths.claims_markdown().read_text()


def test_a_value_whose_trials_agree_exactly_uses_the_measurements_step_as_its_spread():
    """Two trials with the same accuracy on a finite test set: a zero spread is the step of the
    measurement, not certainty."""
    exact = value_within([0.9990, 0.9990], 0.95, 1.0, "acc")
    assert exact.verdict == "holds" and "± 0 " in exact.numbers        # no step given
    stepped = value_within([0.9990, 0.9990], 0.95, 1.0, "acc", step=0.0005)
    assert stepped.verdict == "inconclusive"                           # 0.999 ± 0.0045


def _power(n: int, spread: float) -> float:
    return (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * spread / math.sqrt(n)


def test_trials_to_decide_is_the_power_calculation_with_the_observed_difference():
    values = pd.DataFrame({"a": [0.83, 0.79, 0.85, 0.80], "b": [0.80, 0.79, 0.80, 0.79]})
    d = paired_difference(values, "a", "b", NONE)
    assert d.verdict == "inconclusive"
    s = float(np.std(values["a"] - values["b"], ddof=1))
    need = d.trials_to_decide
    assert need > 4
    assert _power(need, s) <= abs(d.mean) < _power(need - 1, s)
    # with that many trials and the same mean and spread the interval excludes 0
    assert stats.t.ppf(0.975, need - 1) * s / math.sqrt(need) < abs(d.mean)
    result = paired_order(values, [("a", "b")], NONE)
    assert (result.trials, result.trials_to_decide) == (4, need)


def test_trials_to_decide_counts_equivalence_when_the_margin_is_nearer():
    values = pd.DataFrame({"a": [0.801, 0.790, 0.812, 0.795], "b": [0.80, 0.80, 0.80, 0.80]})
    d = paired_difference(values, "a", "b", PP)
    assert d.verdict == "inconclusive"
    s = d.spread
    need = d.trials_to_decide
    assert _power(need, s) <= PP.size - abs(d.mean) < _power(need - 1, s)
    assert need < paired_difference(values, "a", "b", NONE).trials_to_decide


def test_trials_to_decide_none_when_decided_or_one_trial_and_inf_on_the_boundary():
    decided = pd.DataFrame({"a": [0.9, 0.91, 0.92], "b": [0.5, 0.52, 0.51]})
    assert paired_difference(decided, "a", "b", PP).trials_to_decide is None
    assert paired_order(decided, [("a", "b")], PP).trials_to_decide is None
    one = pd.DataFrame({"a": [0.9], "b": [0.5]})
    assert paired_difference(one, "a", "b", PP).trials_to_decide is None
    flat = pd.DataFrame({"a": [0.80, 0.82], "b": [0.82, 0.80]})         # mean difference 0
    assert paired_difference(flat, "a", "b", NONE).trials_to_decide == math.inf


def test_a_claim_of_several_parts_needs_the_trials_of_its_slowest_undecided_part():
    values = pd.DataFrame({"a": [0.80, 0.78, 0.84, 0.77], "b": [0.79, 0.79, 0.80, 0.79],
                           "c": [0.70, 0.69, 0.71, 0.70], "d": [0.792, 0.788, 0.801, 0.79]})
    parts = [paired_difference(values, x, y, NONE) for x, y in [("a", "b"), ("b", "c"),
                                                                ("a", "d")]]
    combined = combine_orderings(parts)
    assert combined.verdict == "inconclusive"
    assert combined.trials_to_decide == max(p.trials_to_decide for p in parts
                                            if p.verdict == "inconclusive")
    both = all_of([paired_order(values, [("a", "b")], NONE),
                   paired_order(values, [("a", "d")], NONE)])
    assert both.trials_to_decide == combined.trials_to_decide and both.trials == 4
    inside = value_within([0.80, 0.78, 0.84, 0.77], 0.78, 0.9, "acc")
    assert inside.trials_to_decide is not None and inside.trials == 4


def test_claims_markdown_says_what_more_trials_would_decide():
    from airfl.pipeline.stages.claims import REACH, more_trials, row

    near = ClaimResult.of("inconclusive", "n", "r", 2, 3)
    far = ClaimResult.of("inconclusive", "n", "r", 2, 2 * REACH + 1)
    never = ClaimResult.of("inconclusive", "n", "r", 2, math.inf)
    single = ClaimResult.of("inconclusive", "n", "r", 1)
    unsized = ClaimResult.of("inconclusive", "n", "r")
    decided = ClaimResult.of("holds", "n", "r", 5, 7)
    assert decided.trials_to_decide is None                 # decided: nothing more to size
    assert "within this scale" in more_trials(near) and "~3 trials" in more_trials(near)
    assert "a larger scale" in more_trials(far)
    assert "no number of trials" in more_trials(never)
    assert "one trial" in more_trials(single)
    assert "not sized" in more_trials(unsized)
    assert more_trials(decided) == "decided at 5 trials"
    rows = [row("p/f", f"c{i}", "s", r) for i, r in enumerate([near, far, never, decided])]
    assert rows[1]["trials_to_decide"] == 2 * REACH + 1 and rows[2]["trials_to_decide"] is None
    text = markdown(rows, {"profile": "quick", "seed": 1})
    assert "| more trials |" in text
    assert "Of 3 inconclusive claims, 1 would be decided within this scale" in text
    assert "1 need a larger scale, 1 cannot be sized" in text
