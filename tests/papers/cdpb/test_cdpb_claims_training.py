"""The checks of CDPB's training-figure claims (claims/training.py) on stored figure data: final
accuracies per strategy (a reading's suffix dropped), Fig. 4's orderings with their quantitative
parts (IS at most 3 pp below CDPB-i, h_min at least 2 pp below the next lowest), "comparable"
within 1 pp, and Fig. 8(a)'s CDPB-n ahead early; each holds and fails as the data say."""

from __future__ import annotations

import pandas as pd

from airfl.papers.cdpb.claims import training as ct
from airfl.papers.cdpb.run_blocks import PER_COORDINATE

TRIALS = 3


def _frame(finals: dict[str, float], early: dict[str, float] | None = None) -> pd.DataFrame:
    """Per curve and trial: accuracy `early` (default 0.1) at times 0 and 1, `final` at times 2
    and 3 (round = time); trial i shifted by 0.002 * i, alternate curves by 0.001 * (-1)^i."""
    rows = []
    for n, (curve, final) in enumerate(finals.items()):
        start = (early or {}).get(curve.removesuffix(PER_COORDINATE), 0.1)
        for trial in range(TRIALS):
            shift = 0.002 * trial + (0.001 * (-1) ** trial if n % 2 else 0.0)
            for t, acc in ((0, start), (1, start), (2, final), (3, final)):
                rows.append({"curve": curve, "trial": trial, "round": t, "time_s": float(t),
                             "test_accuracy": acc + shift})
    return pd.DataFrame(rows)


def test_final_accuracy_and_per_trial_drop_the_readings_suffix():
    frame = _frame({"cdpb_i" + PER_COORDINATE: 0.80, "cdpb_n": 0.70})
    finals = ct.final_accuracy(frame)
    assert set(finals) == {"cdpb_i", "cdpb_n"}
    assert finals["cdpb_i"] == 100 * (0.80 + 0.002)                  # mean over trials 0, 1, 2
    values = ct.per_trial(frame)
    assert list(values.columns) == ["cdpb_i", "cdpb_n"] and len(values) == TRIALS


def test_fig4_orderings_with_their_sizes():
    pairs = [("cdpb_i", "cdpb_n"), ("cdpb_n", "hmin")]

    def both(values):
        return ct.all_of([ct.is_within_3pp(values), ct.hmin_2pp_below(values)])

    good = _frame({"cdpb_i": 0.80, "cdpb_n": 0.78, "is": 0.79, "hmin": 0.70})
    assert ct.beats(pairs, both)(good).verdict == "holds"
    assert ct.beats(pairs)(good).verdict == "holds"
    is_far_below = _frame({"cdpb_i": 0.80, "cdpb_n": 0.78, "is": 0.70, "hmin": 0.60})
    assert ct.is_within_3pp(ct.per_trial(is_far_below)).verdict == "contradicted"
    hmin_close = _frame({"cdpb_i": 0.80, "cdpb_n": 0.78, "is": 0.79, "hmin": 0.775})
    assert ct.hmin_2pp_below(ct.per_trial(hmin_close)).verdict == "contradicted"
    reversed_ = _frame({"cdpb_i": 0.70, "cdpb_n": 0.78, "is": 0.69, "hmin": 0.60})
    assert ct.beats(pairs)(reversed_).verdict == "contradicted"


def test_comparable_within_one_point_and_not_beyond():
    assert ct.comparable("cdpb_i", "cdpb_n")(_frame({"cdpb_i": 0.800,
                                                     "cdpb_n": 0.801})).verdict == "holds"
    assert ct.comparable("cdpb_i", "cdpb_n")(_frame({"cdpb_i": 0.80,
                                                     "cdpb_n": 0.70})).verdict == "contradicted"


def test_n_ahead_early_reads_the_first_half_of_the_time_axis_only():
    early_lead = _frame({"cdpb_i": 0.80, "cdpb_n": 0.80}, early={"cdpb_i": 0.2, "cdpb_n": 0.5})
    result = ct.n_ahead_early(early_lead)
    assert result.verdict == "holds" and "time <= 1.5" in result.numbers
    late_lead = _frame({"cdpb_i": 0.70, "cdpb_n": 0.90}, early={"cdpb_i": 0.5, "cdpb_n": 0.2})
    assert ct.n_ahead_early(late_lead).verdict == "contradicted"
