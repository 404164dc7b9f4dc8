"""The claims of DP as a perk's training figures (claims/training.py) on stored figure data:
Fig. 6's identity and published powers, the authors' paper-scale numbers and the model they
apply to, the claims table."""

from __future__ import annotations

import math

import pandas as pd

from airfl.papers.dp_perk.claims import training as dpx


def _fig6_frame(dp_values, threshold=-45.0, full=-43.0):
    rows = []
    for trial in range(4):
        for snr, (dp, mimo) in dp_values.items():
            spread = 0.001 * trial if dp != mimo else 0.0     # trials differ above the threshold
            for method, acc in (("AirFL-DP", dp), ("AirFL-MIMO", mimo + spread)):
                rows.append({"curve": f"{method}{snr}", "trial": trial, "round": 20,
                             "style_key": method, "param_snr_wc_db": snr,
                             "param_power_w": 10 ** (snr / 10), "test_accuracy": acc,
                             "test_loss": 1 - acc, "train_loss": 1 - acc,
                             "snr_threshold_db": threshold if method == "AirFL-DP" else math.nan,
                             "snr_full_db": full if method == "AirFL-DP" else math.nan})
    return pd.DataFrame(rows)


def test_fig6_claims_detect_a_broken_identity():
    good = _fig6_frame({-50.0: (0.7, 0.7), -40.0: (0.75, 0.76), 3.0: (0.75, 0.77)})
    assert dpx._identical_below(good).holds and dpx._flat_above_full(good).holds
    assert dpx._dp_below_mimo_above(good).holds
    broken = _fig6_frame({-50.0: (0.69, 0.7), -40.0: (0.75, 0.76), 3.0: (0.74, 0.77)})
    assert not dpx._identical_below(broken).holds
    assert not dpx._flat_above_full(broken).holds


def test_authors_numbers_do_not_apply_to_the_quick_model():
    frame = pd.DataFrame({"curve": ["vanilla"], "trial": [0], "round": [20],
                          "test_accuracy": [0.8], "model": ["mlp32"]})
    result = dpx._authors({"vanilla": 0.895}, lambda f: {"vanilla": 0.8})(frame)
    assert result.holds is None and "not the paper's model" in result.numbers
    paper = frame.assign(model="fedavg_cnn")
    assert dpx._authors({"vanilla": 0.895}, lambda f: {"vanilla": 0.8})(paper).holds is False
    assert dpx._authors({"vanilla": 0.81}, lambda f: {"vanilla": 0.8})(paper).holds is True


def test_claims_table_escapes_pipes_and_counts_not_applicable_apart():
    from airfl.pipeline.stages.claims import markdown

    results = [{"figure": "p/f", "claim": "a", "statement": "|x| small", "numbers": "||w||",
                "verdict": "holds", "reason": "||w||"},
               {"figure": "p/f", "claim": "b", "statement": "s", "numbers": "n",
                "verdict": "n/a", "reason": "n"}]
    text = markdown(results, {"profile": "quick", "seed": 0})
    row = next(line for line in text.splitlines() if line.startswith("| p/f | a"))
    assert row.count("|") - row.count("\\|") == 6              # five cells, unbroken
    assert "| n/a |" in text and "| p | 1 | 0 | 0 | 0 | 1 | 2 |" in text


def test_authors_claims_read_theta_T_or_theta_T_minus_1():
    """theta^(T-1) (the last model the authors' code evaluates) and theta^T are read apart: a
    reference met at one round and missed at the other flips the verdict."""
    frame = pd.DataFrame({"curve": ["vanilla"] * 3, "trial": [0] * 3, "round": [18, 19, 20],
                          "test_accuracy": [0.80, 0.85, 0.90], "model": ["fedavg_cnn"] * 3})
    pick = lambda f: {"vanilla": float(f.sort_values("round")["test_accuracy"].iloc[-1])}  # noqa: E731
    at_t = dpx._authors({"vanilla": 0.895}, pick)(frame)
    before = dpx._authors({"vanilla": 0.895}, pick, rounds_back=1, model="theta^(T-1)")(frame)
    assert at_t.holds is True and "theta^T (round 20)" in at_t.numbers
    assert before.holds is False and "theta^(T-1) (round 19)" in before.numbers
    gap = frame[frame["round"] != 19]
    assert dpx._authors({"vanilla": 0.895}, pick, rounds_back=1)(gap).holds is None


def test_fig6_reference_lists_the_published_powers():
    """Every power of the authors' Fig. 6 grid has its published numbers; AirFL-DP at 2e-11 W is
    not published and is left out of the comparison, not invented."""
    from airfl.papers.dp_perk.claims.training import FIG6_AUTHORS, FIG6_REFERENCE

    assert sorted(FIG6_AUTHORS) == [2e-11, 7e-11, 2e-10, 7e-10, 2e-9, 7e-9, 2e-8, 7e-8, 2e-7]
    assert FIG6_AUTHORS[2e-11][0] is None and "AirFL-DP 2e-11 W" not in FIG6_REFERENCE
    assert FIG6_REFERENCE["AirFL-MIMO 2e-11 W"] == 0.557 and len(FIG6_REFERENCE) == 17
