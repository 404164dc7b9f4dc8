"""The arena: its common task, its calibrated private curves, its leaderboard and its claims,
on the committed params.yaml and on constructed figure data where a verdict must come out no."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from airfl.arena import entrants, leaderboard
from airfl.arena.experiments import (ARENA, _dp_fedavg_rises, label, _ota_fl_same_across_snr,
                                     _privacy_costs_accuracy,
                                     _privacy_costs_accuracy_at_every_snr)
from airfl.arena.task import edge_snr_db, run_block, settings, snr_sweep_db
from airfl.channel.pathloss import dbm_to_watt, gain_from_db, log_distance_db
from airfl.core.claims import ACCURACY_MARGIN, paired_difference
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import scheme_wings, wings
from airfl.pipeline.stages.figure import markdown_table
from airfl.privacy import epsilon_curve
from airfl.privacy.conversion import eps_from_rdp
from airfl.privacy.events import GaussianEvent

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", params=["quick", "paper"])
def params(request):
    loaded = load_params(REPO / "params.yaml")
    return {**loaded, "profile": request.param}


def test_edge_snr_is_power_over_noise_times_the_edge_gain(params):
    radio = settings(params)["radio"]
    gain = gain_from_db(log_distance_db(torch.tensor([radio["radius_m"]], dtype=torch.float64),
                                        pl0_db=radio["pl0_db"], exponent=radio["exponent"]))
    noise_w = dbm_to_watt(torch.tensor(radio["n0_dbm_per_hz"])) * radio["bandwidth_hz"]
    snr = dbm_to_watt(torch.tensor(radio["power_dbm"])) * gain / noise_w
    assert edge_snr_db(radio) == pytest.approx(10 * math.log10(float(snr[0])), abs=1e-9)


def test_every_scheme_shares_one_task_and_channel(params):
    """One block for every curve: the same data, split, model, local work, channel and scale
    (common random numbers come from the one experiment id)."""
    block = ARENA.params(params)
    assert block == run_block(params, block["curves"])
    assert block["channel"]["model"] == "geometry"
    assert block["partition"]["kind"] in ("dirichlet", "shards")
    radio = settings(params)["radio"]
    noise_w = dbm_to_watt(torch.tensor(radio["n0_dbm_per_hz"])) * radio["bandwidth_hz"]
    power_keys = ARENA.panel_keys + ("snr_db", "power_w")
    for name, curve in block["curves"].items():      # the power only sets the scheme's SNR
        if "arena_snr_db" in curve:
            if "snr_db" in curve:
                assert curve["snr_db"] == pytest.approx(curve["arena_snr_db"], abs=1e-6)
            else:                                    # its power P in W: P Lambda_edge / (N0 B)
                edge = gain_from_db(log_distance_db(
                    torch.tensor([radio["radius_m"]], dtype=torch.float64),
                    pl0_db=radio["pl0_db"], exponent=radio["exponent"]))
                snr = 10 * math.log10(float(curve["power_w"] * edge[0] / noise_w))
                assert snr == pytest.approx(curve["arena_snr_db"], abs=1e-6)
            base = block["curves"][re.sub(r"_pm?[0-9p]+dbm$", "", name)]
            assert {k: v for k, v in curve.items() if k not in power_keys} \
                == {k: v for k, v in base.items() if k not in power_keys}
    assert block["curves"]["ota_fl"]["snr_db"] == pytest.approx(edge_snr_db(radio))


def test_the_grid_holds_every_eps_at_the_base_power_and_the_snr_eps_at_every_power(params):
    """The leaderboard's (eps, SNR) points: each eps target at power_dbm, snr_eps at each power
    of the SNR sweep; every point has every present entrant (one curve each), and the SNR
    figure draws snr_eps's curves and the references at every power."""
    arena = settings(params)
    curves = ARENA.curves(params)
    base = round(edge_snr_db(arena["radio"]), 6)
    sweep = snr_sweep_db(arena["radio"])
    expected = {(float(e), base) for e in arena["privacy"]["eps"]} | {
        (float(arena["privacy"]["snr_eps"]), s) for s in sweep.values()}
    assert set(leaderboard.points(curves)) == expected
    assert all(re.fullmatch("[a-z][a-z0-9_]*", c) for c in curves)  # the rules' curve wildcard
    for point in expected:
        members = [c for c, p in curves.items() if list(point) in p["arena_points"]]
        assert sorted(curves[c]["entrant"] for c in members) == sorted(
            e.legend for e in entrants.PRESENT)
    snr_panel = {c: p for c, p in curves.items() if "snr" in p["arena_panels"]}
    assert {p.get("target_eps", arena["privacy"]["snr_eps"]) for p in snr_panel.values()} == {
        arena["privacy"]["snr_eps"]}
    ota = sorted(p["arena_snr_db"] for p in snr_panel.values() if p["entrant"] == "OTA-FL")
    assert ota == sorted(sweep.values())
    assert [c for c, p in curves.items() if "eps" in p["arena_panels"]] == [
        c for c, p in curves.items() if "target_eps" in p and p.get("arena_snr_db", base) == base]


def test_an_snr_eps_outside_the_eps_targets_stops(params):
    bad = {**params, "arena": {**params["arena"],
                               "privacy": {**params["arena"]["privacy"], "snr_eps": 3.0}}}
    with pytest.raises(ValueError, match="arena.privacy.snr_eps = 3.0"):
        settings(bad)


def test_each_private_curve_meets_its_target_tightly_under_the_accountant(params):
    """DP-FedAvg's noise multiplier composes over the T rounds to at most the target eps (and
    within 0.1 % of it: the smallest such noise)."""
    arena = settings(params)
    rounds, delta = arena["task"]["scale"]["rounds"], arena["privacy"]["delta"]
    private = {c: p for c, p in ARENA.curves(params).items()
               if "target_eps" in p and p["scheme"] == "gaussian_dp"}
    assert sorted(p["target_eps"] for p in private.values()) == sorted(arena["privacy"]["eps"])
    for curve in private.values():
        events = [[GaussianEvent(curve["noise_multiplier"]).to_dict()]] * rounds
        eps = float(epsilon_curve(events, delta)[-1])
        assert eps <= curve["target_eps"] and eps >= 0.999 * curve["target_eps"]
        assert curve["clip_norm"] == arena["task"]["clip_norm"]


def test_every_scheme_kind_runs_through_an_installed_wing(params):
    offered = scheme_wings()
    for name, curve in ARENA.curves(params).items():
        entrant = next(e for e in entrants.PRESENT if name.startswith(e.key))
        assert offered[curve["scheme"]].name == entrant.wing


def test_every_paper_wing_is_present_or_declared_absent_with_a_reason():
    papers = {w.name for w in wings() if w.catalogue and w.name not in ("arena", "baselines")}
    covered = {e.wing for e in entrants.PRESENT} | {a.wing for a in entrants.ABSENT}
    assert papers <= covered
    assert all(len(a.reason) > 40 for a in entrants.ABSENT)


# ---- the leaderboard on constructed figure data ----------------------------------------------

CURVES = {                           # 1 and 4 at 10 dB, 4 at 0 and 20 dB
    "ideal": {"scheme": "ideal_fedavg", "entrant": "Ideal FedAvg", "arena_panels": ["snr"],
              "arena_points": [[1.0, 10.0], [4.0, 10.0], [4.0, 0.0], [4.0, 20.0]]},
    "ota_fl": {"scheme": "ota_truncated_inversion", "entrant": "OTA-FL", "arena_snr_db": 10.0,
               "arena_points": [[1.0, 10.0], [4.0, 10.0]], "arena_panels": ["snr"]},
    "ota_fl_pm3dbm": {"scheme": "ota_truncated_inversion", "entrant": "OTA-FL",
                      "arena_snr_db": 0.0, "arena_points": [[4.0, 0.0]],
                      "arena_panels": ["snr"]},
    "ota_fl_p17dbm": {"scheme": "ota_truncated_inversion", "entrant": "OTA-FL",
                      "arena_snr_db": 20.0, "arena_points": [[4.0, 20.0]],
                      "arena_panels": ["snr"]},
    "dp_fedavg_eps1": {"scheme": "gaussian_dp", "entrant": "FedAvg + DP", "delta": 1e-5,
                       "target_eps": 1.0, "arena_points": [[1.0, 10.0]],
                       "arena_panels": ["eps"]},
    "dp_fedavg_eps4": {"scheme": "gaussian_dp", "entrant": "FedAvg + DP", "delta": 1e-5,
                       "target_eps": 4.0, "arena_panels": ["eps", "snr"],
                       "arena_points": [[4.0, 10.0], [4.0, 0.0], [4.0, 20.0]]},
    "other_eps1": {"scheme": "x", "entrant": "Other", "delta": 1e-5, "target_eps": 1.0,
                   "arena_points": [[1.0, 10.0]], "arena_panels": ["eps"]},
    "other_eps4_pm3dbm": {"scheme": "x", "entrant": "Other", "delta": 1e-5, "target_eps": 4.0,
                          "arena_snr_db": 0.0, "arena_points": [[4.0, 0.0]],
                          "arena_panels": ["snr"]},
}


def _frame(levels: dict[str, float], eps: dict[str, float], trials: int = 4,
           spread: float = 0.004, seed: int = 0) -> pd.DataFrame:
    """The figure stage's frame: two evaluated rounds per (curve, trial), the final accuracy at
    the curve's level plus a per-trial offset, the final eps as given."""
    rng = np.random.default_rng(seed)
    rows = []
    for curve, level in levels.items():
        for trial in range(trials):
            value = level + rng.normal(0, spread)
            for round_, accuracy in ((0, 0.1), (30, value)):
                rows.append({"curve": curve, "trial": trial, "round": round_,
                             "test_accuracy": accuracy, "epsilon_paper": eps[curve],
                             "epsilon_simulated": eps[curve],
                             "param_target_eps": CURVES[curve].get("target_eps", np.nan),
                             "param_arena_snr_db": CURVES[curve].get("arena_snr_db", np.nan)})
    return pd.DataFrame(rows)


EPS = {"ideal": math.inf, "ota_fl": 50.0, "ota_fl_pm3dbm": 40.0, "ota_fl_p17dbm": 60.0,
       "dp_fedavg_eps1": 1.0, "dp_fedavg_eps4": 4.0, "other_eps1": 0.9,
       "other_eps4_pm3dbm": 3.9}
LEVELS = {"ideal": 0.9, "ota_fl": 0.88, "ota_fl_pm3dbm": 0.878, "ota_fl_p17dbm": 0.881,
          "dp_fedavg_eps1": 0.5, "dp_fedavg_eps4": 0.7, "other_eps1": 0.6,
          "other_eps4_pm3dbm": 0.65}


def test_the_leaderboard_ranks_the_schemes_that_meet_the_target():
    frame = _frame(LEVELS, EPS)
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
    frame = _frame({**LEVELS, "other_eps1": 0.8}, eps)
    at1 = leaderboard.build(frame, CURVES).query("eps_target == 1.0").set_index("curve")
    assert math.isnan(at1.loc["other_eps1", "rank"])
    assert at1.loc["dp_fedavg_eps1", "rank"] == 1


def test_a_reference_whose_channel_noise_meets_the_target_is_ranked():
    eps = {**EPS, "ota_fl": 0.5}
    frame = _frame(LEVELS, eps)
    at1 = leaderboard.build(frame, CURVES).query("eps_target == 1.0").set_index("curve")
    assert at1.loc["ota_fl", "rank"] == 1


def test_the_leaderboard_has_one_group_per_eps_and_snr_point():
    """At 0 dB the OTA-FL curve set for 0 dB and the private scheme set for it join the schemes
    that do not depend on the power; the 10 dB curves of OTA-FL stay out."""
    table = leaderboard.build(_frame(LEVELS, EPS), CURVES)
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
    at1 = leaderboard.build(_frame(LEVELS, {**EPS, "other_eps1": 1.5}), CURVES).query(
        "eps_target == 1.0").set_index("curve")
    assert at1.loc["other_eps1", "status"] == "epsilon as simulated 1.5 > target"


def _point(curve: str, lower: float, simulated: float, paper: float) -> dict:
    """An audit point as the audit stage stores it (the fields the leaderboard reads)."""
    return {"mechanism": curve, "eps_audited_lower": lower, "eps_simulated": simulated,
            "eps_claimed": paper, "settings": {"trial": 0}}


def test_the_leaderboard_shows_each_private_curves_audit_and_says_not_private():
    """Beside the accounted epsilons: a private curve's audited bound and which accounting it
    exceeds (none, as simulated, as its paper states, both); a private curve without an audit
    says so; the non-private entrants say "not private", the channel-noise reference too."""
    audits = [_point("dp_fedavg_eps1", 0.4, 1.0, 1.0), _point("dp_fedavg_eps4", 3.0, 2.5, 3.5),
              _point("other_eps1", 2.0, 0.9, 1.5)]
    table = leaderboard.build(_frame(LEVELS, EPS), CURVES, audits)
    at1 = table.query("eps_target == 1.0").set_index("curve")
    assert at1.loc["dp_fedavg_eps1", "eps_audited_lower"] == 0.4
    assert at1.loc["dp_fedavg_eps1", "audit"] == \
        "within both accountings (trial 0: simulated 1, paper 1)"
    assert at1.loc["other_eps1", "audit"].startswith(
        "exceeds epsilon_simulated and epsilon_paper")
    assert at1.loc["ideal", "audit"] == "not private"
    assert math.isnan(at1.loc["ideal", "eps_audited_lower"])
    assert at1.loc["ota_fl", "audit"] == "not private (reference, not audited)"
    at4 = table.query("eps_target == 4.0 and snr_db == 0.0").set_index("curve")
    assert at4.loc["dp_fedavg_eps4", "audit"].startswith("exceeds epsilon_simulated (")
    assert at4.loc["other_eps4_pm3dbm", "audit"] == "not audited"
    assert table[table["status"].str.startswith("absent")]["audit"].isna().all()
    without = leaderboard.build(_frame(LEVELS, EPS), CURVES)          # a table with no audits
    assert without["audit"].isna().all() and without["eps_audited_lower"].isna().all()


def test_the_markdown_table_holds_every_row_and_escapes_pipes():
    rows = pd.DataFrame({"a": [1.23456, np.nan], "b": ["x|y", "z"]})
    text = markdown_table(rows, "T", "note")
    assert text.splitlines()[:4] == ["# T", "", "| a | b |", "|---|---|"]
    assert "| 1.235 | x\\|y |" in text and "|  | z |" in text and text.endswith("note\n")


# ---- the claims: data where each must say no -------------------------------------------------

def test_privacy_costs_accuracy_holds_and_fails():
    assert _privacy_costs_accuracy(_frame(LEVELS, EPS)).verdict == "holds"
    flipped = _frame({**LEVELS, "ideal": 0.4}, EPS)           # a private scheme above ideal
    assert _privacy_costs_accuracy(flipped).verdict == "contradicted"


def test_dp_fedavg_rising_with_eps_holds_and_fails():
    assert _dp_fedavg_rises(_frame(LEVELS, EPS)).verdict == "holds"
    falling = _frame({**LEVELS, "dp_fedavg_eps1": 0.8}, EPS)
    assert _dp_fedavg_rises(falling).verdict == "contradicted"


def test_the_figure_job_writes_the_leaderboard_beside_its_panels():
    """The table is one more output of the figure job (both tools), never a plot of it."""
    from airfl.pipeline import dag

    (figure,) = [j for j in dag.experiment_jobs(ARENA, load_params(REPO / "params.yaml"))
                 if j.stage == "figure"]
    assert {"figures/arena/leaderboard.csv", "figures/arena/leaderboard.md"} <= set(figure.outs)
    assert [p.path for p in figure.plots] == ["figures/arena/accuracy_vs_eps.csv",
                                              "figures/arena/accuracy_vs_snr.csv",
                                              "figures/arena/accuracy_vs_rounds.csv"]


def _snr_panel(levels: dict[str, float]) -> pd.DataFrame:
    """The SNR figure's CSV: its curves only (those drawn at snr_eps), final rows."""
    frame = _frame(levels, EPS)
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
    assert _privacy_costs_accuracy(_frame({**LEVELS, "other_eps4_pm3dbm": 0.95}, EPS)
                                   ).verdict == "holds"


def test_ota_fl_same_across_snr_holds_and_fails():
    assert _ota_fl_same_across_snr(_snr_panel(LEVELS)).verdict == "holds"
    noisy = _snr_panel({**LEVELS, "ota_fl_pm3dbm": 0.80})     # the 0 dB curve 8 pp lower
    assert _ota_fl_same_across_snr(noisy).verdict == "contradicted"
    one = _snr_panel(LEVELS).query("curve != 'ota_fl_p17dbm' and curve != 'ota_fl'")
    assert _ota_fl_same_across_snr(one).verdict == "n/a"


def test_the_cdpb_absence_reason_holds_on_the_arenas_budget(params):
    """CDPB's budget is RDP at its params.yaml order: the smallest eps that order converts to
    (an RDP budget of 1e-6 nats, the project's improved conversion) exceeds the arena's targets
    below 10, as its absence reason states, and an order that reaches the target exists."""
    order = params["cdpb"]["analytic"]["alpha"]
    delta = settings(params)["privacy"]["delta"]
    reason = next(a.reason for a in entrants.ABSENT if a.wing == "cdpb")
    assert f"alpha = {order}" in reason and "delta = 1e-5" in reason and delta == 1e-5
    floor = float(eps_from_rdp([order], [1e-6], delta)[0])
    assert f"{floor:.2f}" in reason
    for eps in settings(params)["privacy"]["eps"]:
        assert (floor > eps) == (eps < 10.0)
    assert float(eps_from_rdp([10], [1e-6], delta)[0]) < 1.0 < float(
        eps_from_rdp([9], [1e-6], delta)[0])
    assert float(eps_from_rdp([4], [1e-6], delta)[0]) < 4.0 < float(
        eps_from_rdp([3], [1e-6], delta)[0])


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




def _airfl_dp_curves(params) -> dict[str, dict]:
    return {c: p for c, p in ARENA.curves(params).items() if p["entrant"] == "AirFL-DP"}


def _arena_design(params, curve: dict, statistics=None, trial: int = 0) -> dict:
    """The dp_perk design of an arena curve for one trial, built by kind as the design stage
    does, on the trial's arena statistics (the pipeline's) unless `statistics` is given."""
    from airfl.core.scheme import DesignContext
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.runs import model_dim
    from airfl.pipeline.trial import channel_statistics

    block = ARENA.params(params)
    scheme = build_scheme("airfl_dp", curve, block["training"]["lr"])
    stats = statistics or channel_statistics(params, block, ARENA.id, trial, curve)
    n = block["num_devices"]
    context = DesignContext(n, model_dim(block), block["scale"]["rounds"],
                            torch.full((n,), 10, dtype=torch.long), stats, trial=trial,
                            seed=params["seed"], experiment=ARENA.id)
    return scheme.design(context)


def test_airfl_dp_is_posed_by_the_arenas_parameters(params):
    """AirFL-DP's curves: one per eps target at the base power and the SNR figure's target at
    every power of the sweep; eps = eps_tilde sqrt(d) (Sec. V-A), P and N0 B in watts, every
    device every round, its clip c on Delta_i = (theta - theta_i)/eta is the arena's C on an
    upload (c eta = C), the arena's m antennas (zero-forcing over n devices: m >= n), and its
    uplink's gains are the arena's (uplink_gains context, no geometry of its own)."""
    from airfl.pipeline.runs import model_dim

    arena = settings(params)
    radio, task = arena["radio"], arena["task"]
    d = model_dim(ARENA.params(params))
    curves = _airfl_dp_curves(params)
    base = round(edge_snr_db(radio), 6)
    assert sorted(p["target_eps"] for p in curves.values() if p["arena_snr_db"] == base) == \
        sorted(arena["privacy"]["eps"])
    assert sorted(p["arena_snr_db"] for p in curves.values()
                  if "snr" in p["arena_panels"]) == sorted(snr_sweep_db(radio).values())
    noise_w = float(dbm_to_watt(torch.tensor(radio["n0_dbm_per_hz"], dtype=torch.float64))
                    ) * radio["bandwidth_hz"]
    for curve in curves.values():
        assert curve["scheme"] == "dp_perk" and curve["method"] == "airfl_dp"
        assert curve["eps_tilde"] * math.sqrt(d) == pytest.approx(curve["target_eps"], rel=1e-12)
        assert curve["sigma2_w"] == pytest.approx(noise_w, rel=1e-12)
        assert curve["sample_ratio"] == 1.0 and curve["delta"] == arena["privacy"]["delta"]
        assert math.sqrt(curve["clip_factor"] * d) * task["lr"] == pytest.approx(
            task["clip_norm"], rel=1e-12)
        assert curve["antennas"] == radio["antennas"] >= task["num_devices"]
        assert curve["uplink_gains"] == "context"
        assert not {"radius_m", "min_distance_m", "carrier_hz", "distance_mode"} & set(curve)
    assert not any("antennas" in p for p in ARENA.curves(params).values()
                   if p["entrant"] != "AirFL-DP")        # the single-antenna entrants


@pytest.mark.parametrize("trial", [0, 1])
def test_airfl_dp_meets_every_target_as_simulated_and_as_its_paper_states(params, trial):
    """Each AirFL-DP curve's design, on the trial's arena channel, composed round by round as
    the run records it (the aggregation's events at the design's norms q_t) and accounted by
    the privacy stage: eps as simulated and as its paper states are at most the target, and the
    design's own (23) meets it with equality (the water-filling spends the budget)."""
    from airfl.papers.dp_perk.aggregation import AGGREGATORS
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.stages.privacy import simulated_epsilons, trial_epsilons

    generator = torch.Generator().manual_seed(0)
    for name, curve in _airfl_dp_curves(params).items():
        design = _arena_design(params, curve, trial=trial)
        scheme = build_scheme(name, curve, 0.05)
        allocation = scheme._allocation(design)
        rounds = []
        for t in range(len(design["q"])):      # the round records the run writes (their events)
            stored = scheme._round(design, allocation, t)
            updates = torch.randn(len(design["active"][t]), 3, generator=generator,
                                  dtype=torch.float64)
            rounds.append(AGGREGATORS["airfl_dp"](updates, stored, allocation, generator)[1])
        paper = trial_epsilons(rounds, curve["delta"])["improved"][-1]
        simulated = simulated_epsilons(rounds, curve["delta"])["improved"][-1]
        assert simulated <= curve["target_eps"] * (1 + leaderboard.SLACK), name
        assert paper <= curve["target_eps"] * (1 + leaderboard.SLACK), name
        assert simulated == pytest.approx(paper, rel=1e-12)       # r = 1, real_full: one mechanism
        assert design["privacy"]["eps_paper"] == pytest.approx(curve["target_eps"], rel=1e-9)
        assert simulated > 0.5 * curve["target_eps"]              # not a vacuous bound


def test_airfl_dp_design_reads_the_arenas_gains(params):
    """Its design reads the context's path gains: two contexts with different gains give
    different combiners (pi_t) and the context's distances are the ones it records; the same
    curve with its own geometry (uplink_gains own) ignores the context."""
    from airfl.core.scheme import ChannelStatistics

    curve = _airfl_dp_curves(params)["airfl_dp_eps4"]
    n = settings(params)["task"]["num_devices"]
    radio = settings(params)["radio"]
    distances = torch.linspace(radio["min_radius_m"], radio["radius_m"], n, dtype=torch.float64)

    def statistics(scale: float) -> ChannelStatistics:
        gain = gain_from_db(log_distance_db(distances * scale, pl0_db=radio["pl0_db"],
                                            exponent=radio["exponent"]))
        return ChannelStatistics(path_gain=gain, reference_gain=float(gain[-1]),
                                 bandwidth_hz=radio["bandwidth_hz"], distances_m=distances * scale)

    near, far = (_arena_design(params, curve, statistics(s)) for s in (0.5, 1.0))
    assert near["pi"] != far["pi"] and near["transmit_scalars"] != far["transmit_scalars"]
    assert far["device_distances_m"] == distances.tolist()
    assert near["device_distances_m"] == (distances * 0.5).tolist()
    assert near["active"] == far["active"]          # the same sampling stream either way
    own = {**curve, "uplink_gains": "own", "radius_m": 500.0, "min_distance_m": 50.0,
           "carrier_hz": 2.4e9, "distance_mode": "per_device"}
    assert _arena_design(params, own, statistics(0.5))["pi"] == \
        _arena_design(params, own, statistics(1.0))["pi"]


@pytest.mark.parametrize("change, message", [
    ({"uplink_gains": "mine"}, "uplink_gains: 'mine'; allowed: own, context"),
    ({"radius_m": 500.0}, "radius_m would be ignored"),
    ({"uplink_gains": "own"}, "uplink_gains own needs carrier_hz, radius_m"),
])
def test_a_bad_uplink_gains_setting_stops_naming_it(change, message):
    from airfl.pipeline.registry import build_scheme

    curve = _airfl_dp_curves({**load_params(REPO / "params.yaml"), "profile": "quick"})[
        "airfl_dp_eps1"]
    with pytest.raises(ValueError, match=re.escape(message)):
        build_scheme("airfl_dp_eps1", {**curve, **change}, 0.05)
