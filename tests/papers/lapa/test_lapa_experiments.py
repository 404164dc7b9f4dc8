"""LAPA's catalogue per profile (experiments.py): Pilot B and its Fig. 7 level in the paper
profile only, the Fig. 6 mixes as a per-profile parameter (every panel in the paper profile, a
subset in quick), and Figs. 6(b) / 7(b) on Fashion-MNIST, as the DAG expands them."""

from __future__ import annotations

import pytest
import yaml

from airfl.papers.lapa import claims as cl
from airfl.papers.lapa import power


@pytest.fixture(scope="module")
def params():
    with open("params.yaml") as f:
        return yaml.safe_load(f)


def _profile(params, profile):
    return {**params, "profile": profile}


def _lapa_jobs(params, profile):
    """The jobs of the LAPA experiments the profile runs (as dag.jobs expands them)."""
    from airfl.pipeline import dag
    from airfl.pipeline.registry import active_experiments

    run = _profile(params, profile)
    return {j.name: j for e in active_experiments(run) if e.paper == "lapa"
            for j in dag.experiment_jobs(e, run)}


def test_pilot_b_runs_in_the_paper_profile_and_feeds_ddpg(params):
    from airfl.pipeline import paths

    jobs = _lapa_jobs(params, "paper")
    level = str(paths.derived("lapa/fig4", "fig7_level"))
    assert level in jobs["derive-lapa-fig4-fig7_level"].outs
    pilot_a = str(paths.run_records("lapa/fig4", "lapa_nu4"))
    assert pilot_a in jobs["derive-lapa-fig4-fig7_level"].deps
    assert level in jobs["train-lapa-fig4-pilot_b"].deps
    ddpg = jobs["derive-lapa-fig4-ddpg"].deps
    assert str(paths.run_records("lapa/fig4", "pilot_b")) in ddpg
    assert str(paths.run_records("lapa/fig7b", "pilot_b")) in jobs["derive-lapa-fig7b-ddpg"].deps


def test_quick_keeps_the_shortcut_and_its_fig6_panels(params):
    """Quick: no Pilot B (our quick shortcut), no Fashion-MNIST privacy figures, Fig. 6 at
    0 + 15, 5 + 10 and 15 + 0."""
    from airfl.pipeline import paths

    jobs = _lapa_jobs(params, "quick")
    assert not [n for n in jobs if "pilot_b" in n or "fig7_level" in n or "fig7b" in n
                or "fig6b" in n]
    assert str(paths.run_records("lapa/fig4", "pilot_b")) not in jobs["derive-lapa-fig4-ddpg"].deps
    panels = {n.removeprefix("partition-lapa-") for n in jobs if n.startswith("partition-lapa")}
    assert panels == {"fig4", "fig4b", "fig6_iid0", "fig6_iid15"}


def test_paper_profile_runs_every_fig6_mix_on_both_datasets(params):
    from airfl.pipeline.registry import active_experiments

    paper = _profile(params, "paper")
    active = {e.figure: e for e in active_experiments(paper) if e.paper == "lapa"}
    for prefix, dataset, lr in (("fig6", "mnist", 0.01), ("fig6b", "fashion_mnist", 0.008)):
        for n in (0, 3, 7, 9, 15):
            block = active[f"{prefix}_iid{n}"].params(paper)
            assert block["partition"]["num_iid"] == n and block["dataset"] == dataset
            assert set(block["curves"]) == set(cl.FIG6_CURVES)
            assert block["training"]["lr"] == lr       # the schemes' lam (no copy per curve)
            assert not any("lr" in c for c in block["curves"].values())
    fig7b = active["fig7b"].params(paper)
    assert fig7b["dataset"] == "fashion_mnist" and fig7b["partition"]["num_iid"] == 5
    assert set(fig7b["curves"]) == {*cl.FIG6_CURVES, *power.TARGETS, power.PILOT_B}


def test_a_fig6_mix_outside_the_panels_stops_with_the_key(params):
    from airfl.params.config import ConfigError
    from airfl.pipeline.params import validate_params

    training = {**params["lapa"]["training"], "fig6_mixes": {"quick": [0, 4], "paper": [0]}}
    bad = {**params, "lapa": {**params["lapa"], "training": training}}
    with pytest.raises(ConfigError, match="fig6_mixes"):
        validate_params(bad)
