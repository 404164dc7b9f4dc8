"""The LAPA entrants' epsilon as their paper states it (the leaderboard's epsilon_paper): eps_c
of LAPA's eq. 12, the round budgets eps^[t] = sum_k eps_k^[t] spent (eq. 16; eq. 18's per-sample
sensitivity, eq. 19's noise) summed over the rounds, read from the runs' records as the figure
stage's frame carries them (a running sum) - not the lapa wing's record at a device's 2C."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from airfl.arena import entrants, leaderboard
from airfl.arena.experiments import ARENA
from airfl.arena.task import partition, settings, trial_statistics
from airfl.pipeline.params import load_params

REPO = Path(__file__).resolve().parents[2]
NAMES = ("lapa_uniform_eps4", "lapa_arb_eps4", "lapa_uniform_user_eps4")


@pytest.fixture(scope="module")
def quick():
    return {**load_params(REPO / "params.yaml"), "profile": "quick"}


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
