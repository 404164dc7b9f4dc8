"""The arena's leaderboard (airfl.arena.leaderboard) on constructed figure data: ranks among the
schemes that meet the target, one group per (eps, SNR) point, the audit column, its table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from airfl.arena import entrants, leaderboard
from airfl.core.claims import ACCURACY_MARGIN, paired_difference
from airfl.pipeline.stages.figure import markdown_table

from arena_helpers import CURVES, EPS, LEVELS, frame_of


def test_the_leaderboard_ranks_the_schemes_that_meet_the_target():
    frame = frame_of(LEVELS, EPS)
    table = leaderboard.build(frame, CURVES)
    at1 = table[table["eps_target"] == 1.0].set_index("curve")
    assert at1.loc["other_eps1", "rank"] == 1 and at1.loc["dp_fedavg_eps1", "rank"] == 2
    assert math.isnan(at1.loc["ota_fl", "rank"]) and math.isnan(at1.loc["ideal", "rank"])
    assert "reference" in at1.loc["ota_fl", "status"]
    expected = paired_difference(
        frame[frame["round"] == 30].pivot_table(index="trial", columns="curve",
                                                values="test_accuracy"),
        "other_eps1", "dp_fedavg_eps1", ACCURACY_MARGIN)
    assert at1.loc["dp_fedavg_eps1", "vs_best_pp"] == pytest.approx(100 * expected.mean)
    assert at1.loc["dp_fedavg_eps1", "vs_best_verdict"] == "holds"
    absent = table[table["status"].str.startswith("absent")]
    assert list(absent["scheme"]) == [a.legend for a in entrants.ABSENT]
    assert list(table.columns) == list(leaderboard.COLUMNS)


def test_a_scheme_over_its_target_is_not_ranked():
    """A private curve whose simulated eps exceeds its target is listed, never ranked, even
    when it is the most accurate."""
    eps = {**EPS, "other_eps1": 1.5}
    frame = frame_of({**LEVELS, "other_eps1": 0.8}, eps)
    at1 = leaderboard.build(frame, CURVES).query("eps_target == 1.0").set_index("curve")
    assert math.isnan(at1.loc["other_eps1", "rank"])
    assert at1.loc["dp_fedavg_eps1", "rank"] == 1


def test_a_reference_whose_channel_noise_meets_the_target_is_ranked():
    eps = {**EPS, "ota_fl": 0.5}
    frame = frame_of(LEVELS, eps)
    at1 = leaderboard.build(frame, CURVES).query("eps_target == 1.0").set_index("curve")
    assert at1.loc["ota_fl", "rank"] == 1


def test_the_leaderboard_has_one_group_per_eps_and_snr_point():
    """At 0 dB the OTA-FL curve set for 0 dB and the private scheme set for it join the schemes
    that do not depend on the power; the 10 dB curves of OTA-FL stay out."""
    table = leaderboard.build(frame_of(LEVELS, EPS), CURVES)
    groups = table.dropna(subset=["eps_target"]).groupby(["eps_target", "snr_db"])["curve"]
    assert {k: sorted(v) for k, v in groups.apply(list).items()} == {
        (1.0, 10.0): ["dp_fedavg_eps1", "ideal", "ota_fl", "other_eps1"],
        (4.0, 0.0): ["dp_fedavg_eps4", "ideal", "ota_fl_pm3dbm", "other_eps4_pm3dbm"],
        (4.0, 10.0): ["dp_fedavg_eps4", "ideal", "ota_fl"],
        (4.0, 20.0): ["dp_fedavg_eps4", "ideal", "ota_fl_p17dbm"]}
    at0 = table.query("eps_target == 4.0 and snr_db == 0.0").set_index("curve")
    assert at0.loc["dp_fedavg_eps4", "rank"] == 1 and at0.loc["other_eps4_pm3dbm", "rank"] == 2
    assert at0.loc["ota_fl_pm3dbm", "status"] == "epsilon as simulated 40 > target (reference)"


def test_a_private_scheme_over_its_target_is_not_called_a_reference():
    at1 = leaderboard.build(frame_of(LEVELS, {**EPS, "other_eps1": 1.5}), CURVES).query(
        "eps_target == 1.0").set_index("curve")
    assert at1.loc["other_eps1", "status"] == "epsilon as simulated 1.5 > target"


def _point(curve: str, lower: float, simulated: float, paper: float, trial: int = 0) -> dict:
    """An audit point as the audit stage stores it (the fields the leaderboard reads)."""
    return {"mechanism": leaderboard.point_name(curve, trial), "eps_audited_lower": lower,
            "eps_simulated": simulated, "eps_claimed": paper,
            "settings": {"curve": curve, "trial": trial}}


def test_the_leaderboard_shows_each_private_curves_audit_and_says_not_private():
    """Beside the accounted epsilons (largest over the trials): a private curve's largest
    audited bound over its trials and which trial's accounting it exceeds (none, as simulated,
    as its paper states, both); a private curve without an audit says so; the non-private
    entrants say "not private", the channel-noise reference too."""
    audits = [_point("dp_fedavg_eps1", 0.4, 1.0, 1.0), _point("dp_fedavg_eps1", 0.6, 0.9, 1.0, 1),
              _point("dp_fedavg_eps4", 3.0, 2.5, 3.5), _point("dp_fedavg_eps4", 2.0, 3.9, 3.9, 1),
              _point("other_eps1", 2.0, 0.9, 1.5)]
    table = leaderboard.build(frame_of(LEVELS, EPS), CURVES, audits)
    at1 = table.query("eps_target == 1.0").set_index("curve")
    assert at1.loc["dp_fedavg_eps1", "eps_audited_lower"] == 0.6
    assert at1.loc["dp_fedavg_eps1", "audit"] == "within both accountings in every trial " \
        "(largest over 2 trials: audited >= 0.6, simulated 1, paper 1)"
    assert at1.loc["other_eps1", "audit"].startswith(
        "trial 0 2 exceeds epsilon_simulated and epsilon_paper")
    assert at1.loc["ideal", "audit"] == "not private"
    assert math.isnan(at1.loc["ideal", "eps_audited_lower"])
    assert at1.loc["ota_fl", "audit"] == "not private (reference, not audited)"
    at4 = table.query("eps_target == 4.0 and snr_db == 0.0").set_index("curve")
    # trial 0's 3.0 exceeds trial 0's 2.5 though not the largest accounted (3.9, trial 1)
    assert at4.loc["dp_fedavg_eps4", "eps_audited_lower"] == 3.0
    assert at4.loc["dp_fedavg_eps4", "audit"] == "trial 0 3 exceeds epsilon_simulated " \
        "(largest over 2 trials: audited >= 3, simulated 3.9, paper 3.9)"
    assert at4.loc["other_eps4_pm3dbm", "audit"] == "not audited"
    assert table[table["status"].str.startswith("absent")]["audit"].isna().all()
    without = leaderboard.build(frame_of(LEVELS, EPS), CURVES)          # a table with no audits
    assert without["audit"].isna().all() and without["eps_audited_lower"].isna().all()


def test_the_markdown_table_holds_every_row_and_escapes_pipes():
    rows = pd.DataFrame({"a": [1.23456, np.nan], "b": ["x|y", "z"]})
    text = markdown_table(rows, "T", "note")
    assert text.splitlines()[:4] == ["# T", "", "| a | b |", "|---|---|"]
    assert "| 1.235 | x\\|y |" in text and "|  | z |" in text and text.endswith("note\n")


def test_a_private_entrant_without_an_audit_says_why():
    """A LAPA uniform DP curve (private, no audit points) carries its entrant's reason; another private
    curve without points says "not audited"."""
    from airfl.arena.entrants import PRESENT

    reason = next(e.not_audited for e in PRESENT if e.legend.startswith("LAPA uniform DP"))
    assert reason.startswith("not audited: ")
    lapa = {"entrant": "LAPA uniform DP (sample-level ε_T)", "target_eps": 4.0}
    assert leaderboard.audit_cells("lapa_uniform_eps4", lapa, 900.0, {}) == {"audit": reason}
    assert leaderboard.audit_cells("x_eps4", {"entrant": "Other", "target_eps": 4.0}, 4.0,
                                   {}) == {"audit": "not audited"}
