"""The arena's leaderboard (airfl.arena.leaderboard) on constructed figure data: ranks among the
schemes that meet the target, one group per (eps, SNR) point, the audit column, its table.

The LAPA entrants' epsilon as their paper states it (the leaderboard's epsilon_paper): eps_c
of LAPA's eq. 12, the round budgets eps^[t] = sum_k eps_k^[t] spent (eq. 16; eq. 18's per-sample
sensitivity, eq. 19's noise) summed over the rounds, read from the runs' records as the figure
stage's frame carries them (a running sum) - not the lapa wing's record at a device's 2C."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from airfl.arena import entrants, leaderboard
from airfl.arena.experiments import ARENA
from airfl.arena.task import partition, settings, trial_statistics
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


NAMES = ("lapa_uniform_eps4", "lapa_arb_eps4", "lapa_uniform_user_eps4")


def _run(params: dict, name: str, trial: int) -> tuple[dict, list[dict]]:
    """The curve's design as the design stage makes it (the pipeline's scheme, the arena's
    partition and the trial's statistics) and the records of its T rounds on random uploads."""
    from airfl.core.audit_draws import audit_round_state
    from airfl.core.scheme import DesignContext
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.runs import model_dim

    block = ARENA.params(params)
    curve = {k: v for k, v in block["curves"][name].items() if k not in ARENA.panel_keys}
    scheme = build_scheme(name, curve, block["training"]["lr"])
    split, histograms = partition(params, ARENA.id)
    n, rounds = block["num_devices"], block["scale"]["rounds"]
    design = scheme.design(DesignContext(
        n, model_dim(block), rounds, torch.as_tensor(split.sizes), trial_statistics(
            params, ARENA.id, trial), trial=trial, seed=params["seed"], experiment=ARENA.id,
        label_histograms=histograms))
    generator = torch.Generator().manual_seed(trial)
    records = [scheme.aggregate(0.01 * torch.randn(n, 3, generator=generator,
                                                   dtype=torch.float64),
                                audit_round_state(n, 0, "test", 0, round_index=t + 1),
                                design)[1] for t in range(rounds)]
    return design, records


def _frame(monkeypatch, params: dict, runs: dict[str, list[list[dict]]]) -> pd.DataFrame:
    """The figure stage's frame of these curves' runs (its `_curve_frame`: the evaluated rows,
    the leaderboard's running sums), every round evaluated but the odd ones."""
    from airfl.pipeline.stages import figure
    from airfl.pipeline.stages.privacy import simulated_epsilons, trial_epsilons

    curves = ARENA.curves(params)
    tables, eps = {}, {}
    for name, trials in runs.items():
        rows, eps_rows = [], []
        for trial, records in enumerate(trials):
            delta = curves[name]["delta"]
            paper = trial_epsilons(records, delta)["improved"]
            simulated = simulated_epsilons(records, delta)["improved"]
            rows.append({"trial": trial, "round": 0, "test_accuracy": 0.1})
            for t, record in enumerate(records, start=1):
                rows.append({"trial": trial, "round": t, "budget": record["budget"],
                             "test_accuracy": 0.5 if t % 2 == 0 or t == len(records)
                             else float("nan")})
                eps_rows.append({"trial": trial, "round": t, "epsilon_paper": paper[t - 1],
                                 "epsilon_simulated": simulated[t - 1]})
        tables[name] = pd.DataFrame(rows)
        eps[name] = pd.DataFrame(eps_rows)
    monkeypatch.setattr(figure, "run_table", lambda _, curve, trials: tables[curve])
    monkeypatch.setattr(figure, "read_table", lambda path, columns: eps[Path(path).stem])
    return pd.concat([figure._curve_frame(ARENA, name, curves[name], (), len(trials),
                                          leaderboard.RUNNING_SUMS)
                      for name, trials in runs.items()], ignore_index=True)


def test_the_lapa_entrants_state_their_papers_eps_t(monkeypatch, quick):
    """Sample-level uniform DP states eps_T, the target it was designed for (within float);
    ARB at most it (its last rounds may leave some unspent); the user-level uniform DP its
    design's sample-level eps_T, far below its device-level epsilon (which meets the target).
    The privacy stage's epsilon_paper (the lapa wing's record at 2C) is not what is shown."""
    trials = range(2)
    runs = {name: [_run(quick, name, t) for t in trials] for name in NAMES}
    frame = _frame(monkeypatch, quick, {n: [r for _, r in runs[n]] for n in NAMES})
    curves = {n: p for n, p in ARENA.curves(quick).items() if n in NAMES}
    paper = leaderboard.paper_eps(frame, curves)
    records_paper = leaderboard.final_eps(frame, "epsilon_paper")
    simulated = leaderboard.final_eps(frame, "epsilon_simulated")
    target = 4.0
    assert paper["lapa_uniform_eps4"] == pytest.approx(target, rel=1e-12)
    assert paper["lapa_uniform_eps4"] == pytest.approx(
        max(d["eps_total"] for d, _ in runs["lapa_uniform_eps4"]), rel=1e-12)
    assert 0.99 * target < paper["lapa_arb_eps4"] <= target * (1 + 1e-12)
    user_eps_t = max(d["eps_total"] for d, _ in runs["lapa_uniform_user_eps4"])
    assert paper["lapa_uniform_user_eps4"] == pytest.approx(user_eps_t, rel=1e-12)
    assert paper["lapa_uniform_user_eps4"] < 0.01 * simulated["lapa_uniform_user_eps4"]
    assert simulated["lapa_uniform_user_eps4"] <= target * (1 + leaderboard.SLACK)
    for name in NAMES:                  # the wing's records' 2C accounting is another number
        assert records_paper[name] > 100 * paper[name]
    table = leaderboard.build(frame, curves)
    shown = table.dropna(subset=["curve"]).set_index("curve")["epsilon_paper"]
    assert shown.to_dict() == pytest.approx(paper.to_dict(), rel=1e-12)


def test_the_paper_columns_are_the_lapa_entrants_budget():
    """Every LAPA entrant, and only they, states its paper's epsilon as the budget spent."""
    assert leaderboard.PAPER_COLUMNS == {e.legend: entrants.PAPER_BUDGET
                                         for e in entrants.PRESENT if e.wing == "lapa"}
    assert leaderboard.RUNNING_SUMS == (entrants.PAPER_BUDGET,)
    assert ARENA.tables[0].running_sums == leaderboard.RUNNING_SUMS


def test_a_frame_without_the_budget_stops(quick):
    curves = {n: p for n, p in ARENA.curves(quick).items() if n == "lapa_uniform_eps4"}
    frame = pd.DataFrame({"curve": ["lapa_uniform_eps4"], "trial": [0], "round": [30],
                          "epsilon_paper": [1e4], "epsilon_simulated": [1e4]})
    with pytest.raises(ValueError, match="lapa_uniform_eps4: its paper's epsilon is the run "
                                         "table's 'budget'"):
        leaderboard.paper_eps(frame, curves)


def test_the_arena_partition_is_the_partition_stages(quick):
    """The arena's split as the audit and these tests rebuild it is the partition stage's:
    the same declared partition from the same stream (airfl.data.partition_spec)."""
    from airfl.data import load_labels
    from airfl.data.partition_spec import declared_partition
    from airfl.pipeline.trial import partition_generator

    task = settings(quick)["task"]
    labels = load_labels(task["dataset"], quick["data"]["root"], "train")
    theirs = declared_partition(ARENA.params(quick)["partition"], labels,
                                ARENA.params(quick)["num_devices"],
                                partition_generator(quick, ARENA.id))
    ours, histograms = partition(quick, ARENA.id)
    assert [i.tolist() for i in ours.indices] == [i.tolist() for i in theirs.indices]
    assert histograms.sum() == sum(len(i) for i in ours.indices)


def test_a_user_level_arb_is_absent_because_its_budgets_move(quick):
    """ARB's round budgets (and so its per-device noise) move during the run (after its first
    two windows of progress statistics), so no nu set in the design fixes its device-level
    epsilon: the leaderboard lists a user-level ARB as absent, saying so."""
    _, records = _run(quick, "lapa_arb_eps4", 0)
    budgets = [r["budget"] for r in records]
    assert len({round(b, 12) for b in budgets[:10]}) == 1     # the uniform split first
    assert len({round(b, 12) for b in budgets[10:]}) > 1
    (absent,) = [a for a in entrants.ABSENT if a.legend == "LAPA ARB (user-level ε)"]
    assert absent.wing == "lapa" and "known only after the run" in absent.reason
    assert not any(e.legend == absent.legend for e in entrants.PRESENT)
