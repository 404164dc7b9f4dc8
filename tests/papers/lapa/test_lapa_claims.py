"""The claims of LAPA's figures (claims.py) on stored figure data: Fig. 7's P1 claim against the
direct searches, the SER fallback named in Fig. 4's claims, ARB's rounds equal to uniform DP,
and the Fashion-MNIST Fig. 6 panels."""

from __future__ import annotations

import pandas as pd

from airfl.papers.lapa import claims as cl


def _panel_frame(stem, shift):
    rows = []
    for curve, acc in (("nodp", 0.9), ("lapa_nu4", 0.88 + shift), ("uniform_nu4", 0.7),
                       ("arb_nu4", 0.75)):
        for trial in (0, 1):
            for rnd in range(1, 8):
                rows.append({"figure": stem, "curve": curve, "trial": trial, "round": rnd,
                             "test_accuracy": acc + 0.001 * trial})
    return pd.DataFrame(rows)


def test_fig6_claims_read_fashion_mnist_panels():
    """The Fig. 6 claims key a panel by its IID count for both stems (fig6_iid<n>,
    fig6b_iid<n>): the no-DP - LAPA gap shrinking with more IID devices holds here."""
    frame = pd.concat([_panel_frame("fig6b_iid0", 0.0), _panel_frame("fig6b_iid5", 0.01),
                       _panel_frame("fig6b_iid15", 0.015)], ignore_index=True)
    assert set(cl._panels(frame)) == {0, 5, 15}
    assert cl.fig6_gap_shrinks(frame).holds is True
    assert cl.fig6_lapa_best_dp(frame).holds is True
    assert "final: LAPA 89.55" in cl.fig6_all_iid(frame).numbers


HOLDS = ("holds",)
FAILS = ("contradicted",)


def _fig7_frame(ddpg, line, random, rounds: int = 3) -> pd.DataFrame:
    """Config 5's and LAPA(p_bar)'s rows: one P1 value per trial, repeated every round (as
    the run records log them), T_th predicted and realised."""
    rows = []
    for trial, (d, ln, r) in enumerate(zip(ddpg, line, random)):
        for t in range(1, rounds + 1):
            rows.append({"curve": "config5", "trial": trial, "round": t, "p1_value": d,
                         "p1_line_equal_evals": ln, "p1_random_equal_evals": r,
                         "t_th_predicted": 7, "t_th": 8 if t == rounds else None,
                         "test_accuracy": 0.5})
            rows.append({"curve": "lapa_avgp", "trial": trial, "round": t, "p1_value": 2 * d,
                         "t_th_predicted": 9, "t_th": 9 if t == rounds else None,
                         "test_accuracy": 0.5})
    return pd.DataFrame(rows)


def test_fig7_p1_is_contradicted_where_ddpg_is_worse_than_the_direct_searches():
    """The quick run's trial 0 (DDPG 0.024022 vs line 0.023493 and random 0.023433), with
    three more trials worse by about as much: the paired comparison says so."""
    frame = _fig7_frame(ddpg=[0.024022, 0.0251, 0.0230, 0.0242],
                        line=[0.023493, 0.0246, 0.0225, 0.0236],
                        random=[0.023433, 0.0245, 0.0224, 0.0237])
    result = cl.fig7_ddpg_vs_direct(frame)
    assert result.verdict in FAILS
    assert "trial 0: DDPG 0.024022, line 0.023493, random 0.023433" in result.numbers
    assert "T_th at p* predicted [7, 7, 7, 7] realised [8, 8, 8, 8]" in result.numbers
    assert "DDPG above a direct search in trial(s) [0, 1, 2, 3]" in result.numbers


def test_fig7_p1_holds_where_ddpg_beats_both_searches_in_every_trial():
    frame = _fig7_frame(ddpg=[0.0200, 0.0211, 0.0190, 0.0203],
                        line=[0.0235, 0.0246, 0.0226, 0.0236],
                        random=[0.0234, 0.0244, 0.0224, 0.0239])
    result = cl.fig7_ddpg_vs_direct(frame)
    assert result.verdict in HOLDS and "DDPG above a direct search in trial(s) none" in \
        result.numbers
    values = cl.p1_values(frame)
    assert list(values.columns) == ["ddpg", "line_search", "random_search"]
    assert values.loc[1, "ddpg"] == 0.0211


def _fig4_frame(fallback_trials: set[int]) -> pd.DataFrame:
    """Final accuracies falling with the SER threshold; select_ser0p001 keeps one device in
    `fallback_trials` (its rows' ser_fallback)."""
    accuracy = {"select_ser0p1": 0.90, "select_ser0p01": 0.85, "select_ser0p001": 0.60,
                "wasserstein": 0.88, "beda": 0.86, "fedavg": 0.84}
    rows = []
    for curve, acc in accuracy.items():
        for trial in range(3):
            for t in range(1, 7):
                row = {"curve": curve, "trial": trial, "round": t,
                       "test_accuracy": acc + 0.002 * trial + 0.0001 * t}
                if curve.startswith("select"):
                    row["ser_fallback"] = float(curve == "select_ser0p001"
                                                and trial in fallback_trials)
                rows.append(row)
    return pd.DataFrame(rows)


def test_the_ser_fallback_is_named_in_the_fig4_claims():
    frame = _fig4_frame({0, 2})
    assert cl.fallback_trials(frame) == {"select_ser0p001": [0, 2]}
    note = "select_ser0p001: no device meets the SER threshold in trial(s) 0, 2"
    assert note in cl.fig4_ser_order(frame).numbers
    assert note in cl.fig4_ordering(frame).numbers
    quiet = _fig4_frame(set())
    assert cl.fallback_trials(quiet) == {} and "SER threshold" not in \
        cl.fig4_ser_order(quiet).numbers


def test_the_summary_counts_arbs_rounds_equal_to_uniform_dp():
    rows = [{"figure": "fig5_rounds", "curve": "arb_nu4", "label": "ARB", "trial": trial,
             "round": t, "test_accuracy": 0.8, "arb_as_uniform": float(t <= 10),
             "partition_per": "trial"} for trial in range(2) for t in range(1, 16)]
    table = cl.summary_table(pd.DataFrame(rows))
    assert table.loc[0, "arb_rounds_as_uniform"] == "10/15, 10/15"
    numbers = cl.summary(pd.DataFrame(rows)).numbers
    assert "rounds equal to uniform DP per trial 10/15, 10/15" in numbers
    assert numbers.startswith("data split per trial (partition_per)")
