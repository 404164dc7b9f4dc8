"""DP as a perk's catalogue (experiments.py): the legends and panel selections of the training
figures, and the analytic figures as registered: tidy frames with every panel's metric, whose
claims read the same from the stored CSV as from the computed frame."""

from __future__ import annotations


from airfl.papers.dp_perk import analytic_figures as af
from airfl.papers.dp_perk import experiments as ex

#: Two trials keep the Monte Carlo parts cheap (as in the analytic frames' tests).
SMALL = {**af.DEFAULTS, "trials": 2, "threshold_eps_tilde": [0.05, 0.1, 0.2],
         "fig3_eps_tilde": [0.04, 0.1]}


def test_legends_carry_the_budget_and_the_beamformer():
    assert ex.curve_label("c", {"method": "airfl_dp", "in_fig3": True, "eps_tilde": 0.1}) \
        == "AirFL-DP, ε̃ = 0.1"
    assert ex.curve_label("c", {"method": "airfl_dp", "eps_tilde": 0.1}) == "AirFL-DP"
    assert ex.curve_label("c", {"method": "airfl_mimo", "beamformer": "phase"}) \
        == "AirFL-MIMO, optimised phases"
    assert ex.curve_label("c", {"method": "vanilla"}) == "Vanilla FL"


def test_fig6_panels_pick_their_beamformer_and_the_references_once():
    zf, phase = ex._fig6_curves("zf"), ex._fig6_curves("phase")
    reference = {"method": "vanilla"}
    dp_zf = {"method": "airfl_dp", "in_fig6": True, "beamformer": "zf"}
    dp_phase = {"method": "airfl_dp", "in_fig6": True, "beamformer": "phase"}
    assert zf("r", reference) and not phase("r", reference)
    assert zf("a", dp_zf) and not zf("b", dp_phase) and phase("b", dp_phase)
    assert not zf("c", {**dp_zf, "in_fig6": False})
    assert ex._panel("in_fig5")("c", {"in_fig5": True}) and not ex._panel("in_fig5")("c", {})


def test_analytic_figures_are_tidy_and_their_claims_survive_storage(
        assert_claims_survive_storage):
    assert {f.figure for f in ex.ANALYTIC} == {"fig2", "perk_threshold", "allocation",
                                              "fig6_forecast", "privacy"}
    assert {f.config_key for f in ex.ANALYTIC} == {"dp_perk.analytic"}
    for figure in ex.ANALYTIC:
        if figure.figure not in ("fig2", "allocation"):
            continue                                       # the Monte Carlo ones: seconds each
        frame = figure.compute(SMALL)
        assert {"x", "scheme", "metric", "value"} <= set(frame.columns)
        assert {p.metric for p in figure.panels} <= set(frame["metric"])
        assert frame.attrs["figure"] == figure.figure
        if figure.check is None:
            continue
        assert_claims_survive_storage(figure, frame)
