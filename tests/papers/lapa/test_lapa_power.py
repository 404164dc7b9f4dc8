"""Fig. 7's power control as a derivation (power.py): the Fig. 7 privacy level against the
channel noise, DDPG against the direct solution of P1 with the same number of evaluations, Pilot
B's frozen trajectory, and the derive stage between the pilot and the Fig. 7 curves."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import yaml

from airfl.papers.lapa import control as ctl
from airfl.papers.lapa import mechanism as mech
from airfl.papers.lapa import power
from airfl.papers.lapa.ddpg import DdpgConfig


SETTINGS = {"p0_w": 1.0, "p_min_w": 0.3, "p_max_w": 3.0, "floor_fraction": 1e-3, "mu": 0.1,
            "smooth": 10.0, "dissimilarity": 2.0, "line_points": 50, "random_samples": 500,
            "ddpg": {}}
#: DDPG's stated tolerance against the direct solution: its P1 value at most 5 % above the best
#: point of an exhaustive grid (DDPG of Sec. IV-C should match the direct searches).
TOLERANCE = 1.05


def _small_problem(k: int = 3, rounds: int = 20) -> power.Problem:
    """K = 3, T = 20, budgets growing 4x over the run; the channel is scaled as Fig. 7 is:
    at p_bar the channel noise meets the requirement at T/2, so T_th(p) moves with
    p and both terms of eq. 28 matter."""
    rng = np.random.default_rng(7)
    eps = np.linspace(1.0, 4.0, rounds)[:, None] * rng.uniform(0.6, 1.4, k)[None, :] * 2e-3
    sizes = rng.integers(80, 360, k).astype(float)
    shape = rng.uniform(0.5, 2.0, k)
    sens = mech.sensitivity(lr=0.05, clip=10.0, sizes=sizes)
    s_req = np.sum(mech.gaussian_constant(1e-5) * sens / eps[rounds // 2 - 1])
    average = ctl.average_power(p_min=SETTINGS["p_min_w"], p_max=SETTINGS["p_max_w"], devices=k)
    scale = (np.sum(ctl.channel_std(average, shape, 1e-3)) / s_req) ** 2
    return power.Problem(eps=eps, weights=np.array([0.5, 0.3, 0.2])[:k], sizes=sizes,
                         channel_norm2=shape * scale, lr=0.05, clip=10.0, delta=1e-5,
                         noise_w=1e-3, settings=SETTINGS)


def _config(episodes: int = 30) -> DdpgConfig:
    return DdpgConfig(episodes=episodes, steps=25, hidden=(32, 32), lr_actor=1e-3,
                      lr_critic=1e-3, gamma=0.9, tau=0.01, batch=32, buffer=5000, warmup=100,
                      expl_sigma=0.2, expl_decay=0.95, expl_min=0.02)


def test_ddpg_is_within_tolerance_of_the_direct_solution_of_p1():
    """A direct numerical solution of P1 exists on a small instance: an exhaustive grid over
    the action cube (21^3 points, each projected onto the feasible set). DDPG's p* must be
    within TOLERANCE of it and not above the average power or the 1-D line search."""
    problem = _small_problem()
    grid = np.linspace(0.0, 1.0, 21)
    values = [problem.value(problem.power(np.array(a))) for a in itertools.product(grid, repeat=3)]
    direct = min(v for v, _ in values)
    assert len({t for _, t in values}) > 5 and max(v for v, _ in values) > 2 * direct  # not flat
    out = power.solve(problem, config=_config(), seed=1, generator=np.random.default_rng(1),
                      random_generator=np.random.default_rng(2),
                      equal_generator=np.random.default_rng(3))
    assert out["p1_ddpg"] <= out["p1_average"]                               # L(p*) <= L(p_bar)
    assert out["p1_ddpg"] <= TOLERANCE * direct, (out["p1_ddpg"], direct)
    p = out["power_ddpg"]
    assert np.all(p <= 1.0 + 1e-12) and 0.3 - 1e-9 <= p.sum() <= 3.0 + 1e-9   # eqs. 5, 28c


def test_direct_searches_get_ddpgs_number_of_evaluations():
    """The line and random searches the Fig. 7 claim compares DDPG with make as many objective
    evaluations as DDPG did (its start p_bar and every step); their best values are those of
    the searches run with that size, the random one from its own generator."""
    problem = _small_problem()
    calls = []
    config = _config(episodes=4)

    def counted(action):
        calls.append(1)
        return problem.value(problem.power(action))

    from airfl.papers.lapa.ddpg import train_ddpg
    average = problem.average()
    result = train_ddpg(counted, start=problem.action(average), rounds=problem.eps.shape[0],
                        reference=problem.value(average)[0], config=config, seed=1,
                        generator=np.random.default_rng(1))
    assert result.evaluations == len(calls) == 1 + config.episodes * config.steps
    out = power.solve(problem, config=config, seed=1, generator=np.random.default_rng(1),
                      random_generator=np.random.default_rng(2),
                      equal_generator=np.random.default_rng(3))
    assert out["evaluations"] == result.evaluations
    objective = lambda p: problem.value(p)[0]                                  # noqa: E731
    kw = dict(p0=1.0, p_min=0.3, p_max=3.0, devices=3)
    assert out["p1_line_equal_evals"] == ctl.line_search(objective, **kw,
                                                         points=out["evaluations"])[1]
    assert out["p1_random_equal_evals"] == ctl.random_search(
        objective, **kw, samples=out["evaluations"], floor_fraction=1e-3,
        generator=np.random.default_rng(3))[1]


#: the experiment's block as the derivation reads it: lam, the clients' local step size
BLOCK = {"training": {"lr": 0.05}}


def _pilot_inputs(trials: int = 2, k: int = 15, rounds: int = 12):
    rng = np.random.default_rng(3)
    curve = {"clip": 10.0, "delta": 1e-5}
    designs, records = [], []
    for trial in range(trials):
        sizes = rng.integers(80, 360, k).astype(float)
        weights = rng.dirichlet(np.ones(k))
        eps = np.linspace(1.0, 1.5, rounds)[:, None] * rng.uniform(0.5, 1.5, k)[None, :] * 1e-3
        designs.append({"sizes": sizes.tolist(), "weights": weights.tolist(), "eps_total": 1.0,
                        "radio": {"channel_norm2": (rng.uniform(0.3, 3.0, k) * 5e4).tolist()}})
        records.append({"trial": trial, "rounds": [{"round": t + 1, "eps": e.tolist()}
                                                   for t, e in enumerate(eps)]})
    return {power.PILOT: {"design": {"trials": designs},
                          "records": {"params": curve, "trials": records}}}


@pytest.fixture(scope="module")
def params():
    with open("params.yaml") as f:
        return yaml.safe_load(f)


@pytest.fixture()
def small_params(params):
    control = dict(params["lapa"]["control"])
    control["ddpg"] = {**control["ddpg"], "episodes": 4, "steps": 10, "warmup": 20,
                       "hidden": [16, 16], "batch": 8}
    control["random_samples"] = 200
    return {**params, "profile": "quick", "lapa": {**params["lapa"], "control": control}}


def test_fig7_privacy_level_puts_the_requirement_on_the_channel_noise_at_half_time(small_params):
    """Fig. 7 (Sec. V), our calibration:
    eps_T7 = eps_T_A S_req^A(T/2) / S_ch(p_bar), i.e. at the Fig. 7 level the
    frozen requirement of round T/2 equals the channel noise at average power (eq. 23)."""
    inputs = _pilot_inputs()
    out = power.compute(small_params, BLOCK, inputs)
    radio = small_params["lapa"]["radio"]
    pilot = inputs[power.PILOT]
    for trial, report in enumerate(out["report"]["trials"]):
        design = pilot["design"]["trials"][trial]
        eps7 = out["arrays"][f"trial{trial}_eps_fig7"]
        sens = mech.sensitivity(lr=0.05, clip=10.0, sizes=np.asarray(design["sizes"]))
        s_req7 = np.sum(mech.gaussian_constant(1e-5) * sens / eps7[eps7.shape[0] // 2 - 1])
        p_bar = ctl.average_power(p_min=1.5, p_max=15.0, devices=15)
        s_ch = np.sum(ctl.channel_std(p_bar, np.asarray(design["radio"]["channel_norm2"]),
                                      radio["noise_w"]))
        assert s_req7 == pytest.approx(s_ch, rel=1e-9)
        assert report["p1_ddpg"] <= report["p1_average"]
        assert report["eps_total_fig7"] == pytest.approx(1.0 * 4.0 / report["nu7"])
    assert set(out["params"]) == set(power.TARGETS)
    assert len(out["params"]["config5"]["powers"]) == 2
    for key in power.EQUAL_EVALS:          # Config 5's runs carry the equal-work searches
        assert out["params"]["config5"][key] == [t[key] for t in out["report"]["trials"]]
        assert len(out["params"]["config5"][key]) == 2
    assert out["params"]["config5"]["nu"] == pytest.approx(
        np.mean([t["nu7"] for t in out["report"]["trials"]]))
    assert any(k.startswith("trial0_actor_") for k in out["arrays"])         # the policy
    again = power.compute(small_params, BLOCK, _pilot_inputs())                 # same seed: same p*
    assert again["params"]["config5"]["powers"] == out["params"]["config5"]["powers"]


def test_dag_runs_the_derivation_between_the_pilot_and_the_fig7_curves(params):
    from airfl.pipeline import dag, paths
    from airfl.pipeline.registry import get_experiment

    experiment = get_experiment("lapa/fig4")
    jobs = {j.name: j for j in dag.experiment_jobs(experiment, params)}
    derive = jobs["derive-lapa-fig4-ddpg"]
    assert str(paths.run_records("lapa/fig4", "lapa_nu4")) in derive.deps
    assert str(paths.design("lapa/fig4", "lapa_nu4")) in derive.deps
    assert str(paths.run_table("lapa/fig4", "lapa_nu4")) in derive.deps
    ddpg_json = str(paths.derived("lapa/fig4", "ddpg"))
    assert ddpg_json in derive.outs
    for curve in power.TARGETS:
        assert ddpg_json in jobs[f"design-lapa-fig4-{curve}"].deps
        assert ddpg_json in jobs[f"train-lapa-fig4-{curve}"].deps
    assert ddpg_json not in jobs["train-lapa-fig4-lapa_nu4"].deps


def test_derive_stage_stores_the_policy_and_the_targets_train_with_it(small_params, tmp_path,
                                                                      monkeypatch):
    """Stage `derive` end to end on stored pilot files: it writes the JSON, the learning curve
    (CSV) and the policy (NPZ), and the design/train stages' merge (runs.derived) hands the
    Fig. 7 curves their derived nu and powers while other curves keep theirs."""

    from airfl.runtime.io import read_json, write_csv, write_json
    from airfl.pipeline import paths
    from airfl.pipeline.registry import get_experiment
    from airfl.pipeline.runs import derived
    from airfl.pipeline.stages import derive

    monkeypatch.chdir(tmp_path)
    pilot = _pilot_inputs()[power.PILOT]
    write_json(paths.design("lapa/fig4", power.PILOT), pilot["design"])
    write_json(paths.run_records("lapa/fig4", power.PILOT), pilot["records"])
    write_csv(paths.run_table("lapa/fig4", power.PILOT), pd.DataFrame({"round": [0]}))
    derive.run(small_params, "lapa/fig4", "ddpg")
    stored = read_json(paths.derived("lapa/fig4", "ddpg"))
    curve = pd.read_csv(paths.derived("lapa/fig4", "ddpg", "csv"))
    assert list(curve.columns) == ["trial", "episode", "mean_reward", "best_p1"]
    assert len(curve) == 2 * small_params["lapa"]["control"]["ddpg"]["episodes"]
    policy = np.load(paths.derived("lapa/fig4", "ddpg", "npz"))
    assert "trial1_actor_0_0_weight" in policy and "trial0_power_ddpg" in policy
    experiment = get_experiment("lapa/fig4")
    curves = experiment.curves(small_params)
    merged = derived(experiment, "config5", {"nu": 4.0, "lr": 0.05}, curves)
    assert merged["nu"] == stored["params"]["config5"]["nu"] != 4.0
    assert merged["powers"] == stored["params"]["config5"]["powers"] and merged["lr"] == 0.05
    assert derived(experiment, "lapa_nu4", {"nu": 4.0}, curves) == {"nu": 4.0}


def _small(params, profile="paper"):
    control = dict(params["lapa"]["control"])
    control["ddpg"] = {**control["ddpg"], "episodes": {"quick": 3, "paper": 3},
                       "steps": {"quick": 8, "paper": 8}, "warmup": {"quick": 10, "paper": 10},
                       "hidden": {"quick": [8, 8], "paper": [8, 8]},
                       "batch": {"quick": 8, "paper": 8}}
    control["random_samples"] = {"quick": 100, "paper": 100}
    return {**params, "profile": profile, "lapa": {**params["lapa"], "control": control}}


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
