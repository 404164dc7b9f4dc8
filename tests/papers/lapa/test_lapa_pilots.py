"""The paper profile's pieces: Pilot B and its Fig. 7 level, the Fig. 6
mixes as a per-profile parameter (every panel of the paper in the paper profile, a subset
in quick), and Figs. 6(b) / 7(b) on Fashion-MNIST, as the DAG expands them per profile."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from airfl.papers.lapa import claims as cl
from airfl.papers.lapa import control as ctl
from airfl.papers.lapa import mechanism as mech
from airfl.papers.lapa import power


@pytest.fixture(scope="module")
def params():
    with open("params.yaml") as f:
        return yaml.safe_load(f)


def _profile(params, profile):
    return {**params, "profile": profile}


def _small(params, profile="paper"):
    control = dict(params["lapa"]["control"])
    control["ddpg"] = {**control["ddpg"], "episodes": {"quick": 3, "paper": 3},
                       "steps": {"quick": 8, "paper": 8}, "warmup": {"quick": 10, "paper": 10},
                       "hidden": {"quick": [8, 8], "paper": [8, 8]},
                       "batch": {"quick": 8, "paper": 8}}
    control["random_samples"] = {"quick": 100, "paper": 100}
    return {**params, "profile": profile, "lapa": {**params["lapa"], "control": control}}


#: the experiment's block as the derivations read it: lam, the clients' local step size
BLOCK = {"training": {"lr": 0.05}}


def _pilot(trials=2, k=15, rounds=12, seed=3, scale=1.0):
    rng = np.random.default_rng(seed)
    curve = {"clip": 10.0, "delta": 1e-5}
    designs, records = [], []
    for trial in range(trials):
        sizes = rng.integers(80, 360, k).astype(float)
        designs.append({"sizes": sizes.tolist(), "weights": rng.dirichlet(np.ones(k)).tolist(),
                        "eps_total": 1.0,
                        "radio": {"channel_norm2": (rng.uniform(0.3, 3.0, k) * 5e4).tolist()}})
        eps = np.linspace(1.0, 1.5, rounds)[:, None] * rng.uniform(0.5, 1.5, k)[None, :] * 1e-3
        records.append({"trial": trial, "rounds": [{"round": t + 1, "eps": (scale * e).tolist()}
                                                   for t, e in enumerate(eps)]})
    return {"design": {"trials": designs}, "records": {"params": curve, "trials": records}}


def test_fig7_level_meets_the_channel_noise_at_half_time(params):
    """Fig. 7 (Sec. V), our calibration:
    nu_7 = nu_A S_ch(p_bar) / S_req^A(T/2), so Pilot A's requirement at T/2 scaled
    to nu_7 (budgets ~ 1/nu) equals the channel noise at average power (eq. 23);
    Pilot B's nu is the mean over trials."""
    small = _small(params)
    pilot = _pilot()
    out = power.level(small, BLOCK, {power.PILOT: pilot})
    radio = small["lapa"]["radio"]
    nus = []
    for design, records in zip(pilot["design"]["trials"], pilot["records"]["trials"]):
        eps = np.array([r["eps"] for r in records["rounds"]])
        sens = mech.sensitivity(lr=0.05, clip=10.0, sizes=np.asarray(design["sizes"]))
        s_req = np.sum(mech.gaussian_constant(1e-5) * sens / eps[eps.shape[0] // 2 - 1])
        p_bar = ctl.average_power(p_min=1.5, p_max=15.0, devices=15)
        s_ch = np.sum(ctl.channel_std(p_bar, np.asarray(design["radio"]["channel_norm2"]),
                                      radio["noise_w"]))
        nu7 = power.PILOT_NU * s_ch / s_req
        assert s_req * nu7 / power.PILOT_NU == pytest.approx(s_ch, rel=1e-12)
        nus.append(nu7)
    assert out["params"] == {power.PILOT_B: {"nu": pytest.approx(np.mean(nus))}}
    assert out["table"]["nu7"].tolist() == pytest.approx(nus)


def test_ddpg_freezes_pilot_b_trajectory_where_it_ran(params):
    """P1 (eq. 28): with Pilot B the surrogate is Pilot B's own trajectory (not Pilot A's
    rescaled); without it (quick) the rescaled one; the Fig. 7 curves run at Pilot B's nu."""
    small = _small(params)
    pilot_a = _pilot()
    pilot_b = _pilot(seed=11, scale=0.3)          # another trajectory (same designs' shape)
    with_b = power.compute(small, BLOCK, {power.PILOT: pilot_a, power.PILOT_B: pilot_b})
    without = power.compute(small, BLOCK, {power.PILOT: pilot_a})
    level = power.level(small, BLOCK, {power.PILOT: pilot_a})["params"][power.PILOT_B]["nu"]
    for trial, records in enumerate(pilot_b["records"]["trials"]):
        b_eps = np.array([r["eps"] for r in records["rounds"]])
        np.testing.assert_array_equal(with_b["arrays"][f"trial{trial}_eps_fig7"], b_eps)
        assert not np.allclose(without["arrays"][f"trial{trial}_eps_fig7"], b_eps)
    assert with_b["report"]["trajectory"].startswith("Pilot B")
    assert without["report"]["trajectory"].startswith("Pilot A rescaled")
    assert with_b["params"]["config5"]["nu"] == pytest.approx(level)
    for report in with_b["report"]["trials"]:
        assert report["p1_ddpg"] <= report["p1_average"]              # L(p*) <= L(p_bar)


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
