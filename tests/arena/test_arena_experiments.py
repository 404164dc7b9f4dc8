"""The arena's catalogue (airfl.arena.experiments): its figure job and legends, and its claims on
constructed figure data where each must say no."""

from __future__ import annotations


import pandas as pd

from airfl.arena.experiments import (ARENA, _dp_fedavg_rises, label, _ota_fl_same_across_snr,
                                     _privacy_costs_accuracy,
                                     _privacy_costs_accuracy_at_every_snr)
from airfl.pipeline.params import load_params

from arena_helpers import CURVES, EPS, LEVELS, frame_of


def test_privacy_costs_accuracy_holds_and_fails():
    assert _privacy_costs_accuracy(frame_of(LEVELS, EPS)).verdict == "holds"
    flipped = frame_of({**LEVELS, "ideal": 0.4}, EPS)           # a private scheme above ideal
    assert _privacy_costs_accuracy(flipped).verdict == "contradicted"


def test_a_private_curve_above_its_target_is_no_private_scheme_of_the_claims():
    """A private curve whose epsilon as simulated exceeds its target (the LAPA entrants at their
    paper's eps_T) is left out: more accurate than Ideal FedAvg, it neither wins the "most
    accurate private scheme" nor contradicts the claims."""
    above = {**EPS, "other_eps1": 900.0, "other_eps4_pm3dbm": 900.0}
    levels = {**LEVELS, "other_eps1": 0.95, "other_eps4_pm3dbm": 0.95}
    result = _privacy_costs_accuracy(frame_of(levels, above))
    assert result.verdict == "holds" and "other_eps1" not in result.numbers
    assert _privacy_costs_accuracy(frame_of(levels, EPS)).verdict == "contradicted"
    assert _privacy_costs_accuracy_at_every_snr(frame_of(levels, above)).verdict == "holds"
    assert _privacy_costs_accuracy_at_every_snr(frame_of(levels, EPS)).verdict == "contradicted"


def test_dp_fedavg_rising_with_eps_holds_and_fails():
    assert _dp_fedavg_rises(frame_of(LEVELS, EPS)).verdict == "holds"
    falling = frame_of({**LEVELS, "dp_fedavg_eps1": 0.8}, EPS)
    assert _dp_fedavg_rises(falling).verdict == "contradicted"


def test_the_figure_job_writes_the_leaderboard_beside_its_panels(repo_root):
    """The table is one more output of the figure job (both tools), never a plot of it."""
    from airfl.pipeline import dag

    (figure,) = [j for j in dag.experiment_jobs(ARENA, load_params(repo_root / "params.yaml"))
                 if j.stage == "figure"]
    assert {"figures/arena/leaderboard.csv", "figures/arena/leaderboard.md"} <= set(figure.outs)
    assert [p.path for p in figure.plots] == ["figures/arena/accuracy_vs_eps.csv",
                                              "figures/arena/accuracy_vs_snr.csv",
                                              "figures/arena/accuracy_vs_rounds.csv"]


def _snr_panel(levels: dict[str, float]) -> pd.DataFrame:
    """The SNR figure's CSV: its curves only (those drawn at snr_eps), final rows."""
    frame = frame_of(levels, EPS)
    drawn = frame[frame["curve"].map(lambda c: "snr" in CURVES[c]["arena_panels"])]
    return drawn[drawn["round"] == drawn["round"].max()]


def test_privacy_costs_accuracy_at_every_snr_holds_and_fails():
    result = _privacy_costs_accuracy_at_every_snr(_snr_panel(LEVELS))
    assert result.verdict == "holds"
    assert "0 dB dp_fedavg_eps4" in result.numbers
    # a private scheme set for 0 dB ends above the noiseless reference: no at that SNR only
    beaten = _privacy_costs_accuracy_at_every_snr(_snr_panel({**LEVELS,
                                                              "other_eps4_pm3dbm": 0.95}))
    assert beaten.verdict == "contradicted"
    # the one scheme a 10 dB-only claim would read (DP-FedAvg) still ends below ideal
    assert _privacy_costs_accuracy(frame_of({**LEVELS, "other_eps4_pm3dbm": 0.95}, EPS)
                                   ).verdict == "holds"


def test_ota_fl_same_across_snr_holds_and_fails():
    assert _ota_fl_same_across_snr(_snr_panel(LEVELS)).verdict == "holds"
    noisy = _snr_panel({**LEVELS, "ota_fl_pm3dbm": 0.80})     # the 0 dB curve 8 pp lower
    assert _ota_fl_same_across_snr(noisy).verdict == "contradicted"
    one = _snr_panel(LEVELS).query("curve != 'ota_fl_p17dbm' and curve != 'ota_fl'")
    assert _ota_fl_same_across_snr(one).verdict == "n/a"


def test_the_legends_keep_the_snr_sweeps_curves_apart(params):
    """No two curves of a panel fall on one line at one x: in the rounds panel every curve has
    its own legend (the figure stage adds eps to a private curve's), in a final-value panel
    every (legend, x) pair is one curve's."""
    curves = ARENA.curves(params)
    for spec in (ARENA.figure_spec, *ARENA.extra_figures):
        drawn = {c: p for c, p in curves.items() if spec.curves is None or spec.curves(c, p)}
        if spec.final:
            key = spec.x.removeprefix("param_")
            points = [(spec.label(c, p), p.get(key)) for c, p in drawn.items()]
        else:
            points = [(ARENA.label(c, p), p.get("target_eps")) for c, p in drawn.items()]
        assert len(set(points)) == len(drawn), spec.name
    assert label("ota_fl_pm3dbm", curves["ota_fl_pm3dbm"]) == "OTA-FL (0 dB edge SNR)"
