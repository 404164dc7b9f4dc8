"""The arena's entrants (airfl.arena.entrants): their curves on the committed params.yaml (the
(eps, SNR) grid, DP-FedAvg's calibrated noise, AirFL-DP posed by the arena's parameters and
meeting every target), every paper wing present or absent with a reason that holds."""

from __future__ import annotations

import math
import re

import pytest
import torch

from airfl.arena import entrants, leaderboard
from airfl.arena.experiments import (ARENA)
from airfl.arena.task import edge_snr_db, settings, snr_sweep_db
from airfl.channel.pathloss import dbm_to_watt, gain_from_db, log_distance_db
from airfl.pipeline.params import load_params
from airfl.pipeline.registry import scheme_wings, wings
from airfl.privacy import epsilon_curve
from airfl.privacy.conversion import eps_from_rdp
from airfl.privacy.events import GaussianEvent


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
def test_a_bad_uplink_gains_setting_stops_naming_it(change, message, repo_root):
    from airfl.pipeline.registry import build_scheme

    curve = _airfl_dp_curves({**load_params(repo_root / "params.yaml"), "profile": "quick"})[
        "airfl_dp_eps1"]
    with pytest.raises(ValueError, match=re.escape(message)):
        build_scheme("airfl_dp_eps1", {**curve, **change}, 0.05)


def _lapa_curves(params) -> dict[str, dict]:
    return {c: p for c, p in ARENA.curves(params).items() if p["scheme"] == "lapa"}


def test_lapa_is_posed_by_the_arenas_parameters(params):
    """LAPA's uniform DP (at both budget levels) and ARB: one curve each per eps target at
    the base power and
    per power of the SNR sweep; the arena's gains (uplink_gains context), its P and N0 B in
    watts on a single-antenna base station, its C on an upload (C_LAPA lam = C), every device
    (no SER selection), the Wasserstein aggregation, eps_T = the target, and the allocation
    settings its own figures run (arena.lapa = lapa.alloc)."""
    arena = settings(params)
    radio, task = arena["radio"], arena["task"]
    curves = _lapa_curves(params)
    noise_w = float(dbm_to_watt(torch.tensor(radio["n0_dbm_per_hz"], dtype=torch.float64))
                    ) * radio["bandwidth_hz"]
    base = round(edge_snr_db(radio), 6)
    assert {p["privacy"] for p in curves.values()} == {"uniform", "arb"}
    levels = {(p["privacy"], p.get("budget_level", "sample")) for p in curves.values()}
    assert levels == {("uniform", "sample"), ("arb", "sample"), ("uniform", "device")}
    for privacy, level in levels:
        mine = {c: p for c, p in curves.items()
                if (p["privacy"], p.get("budget_level", "sample")) == (privacy, level)}
        assert sorted(p["target_eps"] for p in mine.values() if p["arena_snr_db"] == base) == \
            sorted(arena["privacy"]["eps"])
        assert sorted(p["arena_snr_db"] for p in mine.values() if "snr" in p["arena_panels"]) \
            == sorted(snr_sweep_db(radio).values())
    alloc = params["lapa"]["alloc"]
    assert arena["lapa"] == alloc and alloc["invert_share"] is False
    for curve in curves.values():
        assert curve["uplink_gains"] == "context" and curve["channel"] == "practical"
        assert curve["aggregation"] == "wasserstein" and "ser_threshold" not in curve
        assert curve["radio"]["antennas"] == 1
        assert curve["radio"]["noise_w"] == pytest.approx(noise_w, rel=1e-12)
        power_dbm = 10 * math.log10(curve["radio"]["max_power_w"]) + 30
        assert power_dbm == pytest.approx(
            radio["power_dbm"] + curve["arena_snr_db"] - base, abs=1e-6)
        assert curve["clip"] * task["lr"] == pytest.approx(task["clip_norm"], rel=1e-12)
        assert curve["eps_total"] == curve["target_eps"] and "nu" not in curve
        assert curve["alloc"] == alloc
        assert curve["delta"] == arena["privacy"]["delta"]


def _lapa_design(params, curve: dict, trial: int = 0) -> tuple[dict, object]:
    """A LAPA curve's design on the trial's arena statistics (the pipeline's) with the arena's
    partition sizes and label histograms of a constructed split (the design reads both)."""
    import numpy as np

    from airfl.core.scheme import DesignContext
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.runs import model_dim
    from airfl.pipeline.trial import channel_statistics

    block = ARENA.params(params)
    scheme = build_scheme("lapa", curve, block["training"]["lr"])
    stats = channel_statistics(params, block, ARENA.id, trial, curve)
    n = block["num_devices"]
    hist = np.tile(np.arange(1, 11, dtype=np.int64) * 24, (n, 1))
    hist[: n // 2, 0] += 600                      # two kinds of device
    sizes = torch.tensor(hist.sum(axis=1), dtype=torch.float64)
    context = DesignContext(n, model_dim(block), block["scale"]["rounds"], sizes, stats,
                            trial=trial, seed=params["seed"], experiment=ARENA.id,
                            label_histograms=hist)
    return scheme.design(context), stats


@pytest.mark.parametrize("trial", [0, 1])
def test_lapa_design_reads_the_arenas_gains_and_meets_eps_t(trial, repo_root):
    """The design's path gains and distances are the trial's arena statistics; its eps_T (its
    own accounting) is at most the target and within 1e-12 of it; the channel noise is
    sqrt(N0 B / (P Lambda_k |g_k|^2)) with P the curve's power."""
    import numpy as np

    params = {**load_params(repo_root / "params.yaml"), "profile": "quick"}
    for name in ("lapa_arb_eps1", "lapa_uniform_eps4_p17dbm"):
        curve = _lapa_curves(params)[name]
        design, stats = _lapa_design(params, curve, trial)
        assert design["radio"]["path_gain"] == stats.path_gain.tolist()
        assert design["radio"]["distances_m"] == stats.distances_m.tolist()
        assert design["eps_total"] <= curve["target_eps"]
        assert design["eps_total"] == pytest.approx(curve["target_eps"], rel=1e-12)
        expected = np.sqrt(curve["radio"]["noise_w"] / (curve["radio"]["max_power_w"] * np.asarray(
            design["radio"]["channel_norm2"])))
        np.testing.assert_allclose(design["sigma_ch"], expected, rtol=1e-12)


def test_lapa_uniform_dp_at_its_paper_budget_is_far_above_it_per_device(repo_root):
    """LAPA's eps_T bounds a sample's change (Delta s = 2 lam C / |D_k|, eq. 18); at the
    clipped upload's sensitivity 2 C_LAPA the same noise over the T rounds is accounted (the
    run's records, composed by the privacy stage: as simulated and as the records state it)
    far above the target: the arena's finding for every LAPA curve, here uniform DP at
    eps_T = 4."""
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.stages.privacy import simulated_epsilons, trial_epsilons
    from airfl.core.scheme import RoundState
    from airfl.runtime.rng import RoundStreams

    params = {**load_params(repo_root / "params.yaml"), "profile": "quick"}
    curve = _lapa_curves(params)["lapa_uniform_eps4"]
    design, stats = _lapa_design(params, curve)
    scheme = build_scheme("lapa_uniform_eps4", curve, 0.05)
    n, rounds = len(design["sizes"]), design["rounds"]
    generator = torch.Generator().manual_seed(0)
    records = []
    for t in range(1, rounds + 1):
        state = RoundState(t, torch.ones(n), torch.ones(n), stats, RoundStreams(1, "t", 0, t))
        updates = 0.01 * torch.randn(n, 4, generator=generator, dtype=torch.float64)
        records.append(scheme.aggregate(updates, state, design)[1])
    paper = trial_epsilons(records, curve["delta"])["improved"][-1]
    simulated = simulated_epsilons(records, curve["delta"])["improved"][-1]
    assert design["eps_total"] == pytest.approx(4.0, rel=1e-12)
    assert simulated == pytest.approx(paper, rel=1e-9)   # uniform: one worst device every round
    assert simulated > 25 * curve["target_eps"]


def _lapa_records(scheme, design, stats, dim: int = 4) -> list[dict]:
    """The T rounds' records of a LAPA scheme on random uploads."""
    from airfl.core.scheme import RoundState
    from airfl.runtime.rng import RoundStreams

    n, rounds = len(design["sizes"]), design["rounds"]
    generator = torch.Generator().manual_seed(0)
    records = []
    for t in range(1, rounds + 1):
        state = RoundState(t, torch.ones(n), torch.ones(n), stats, RoundStreams(1, "t", 0, t))
        updates = 0.01 * torch.randn(n, dim, generator=generator, dtype=torch.float64)
        records.append(scheme.aggregate(updates, state, design)[1])
    return records


@pytest.mark.parametrize("name", ["lapa_uniform_user_eps1", "lapa_uniform_user_eps4",
                                  "lapa_uniform_user_eps4_pm3dbm"])
@pytest.mark.parametrize("trial", [0, 1])
def test_lapa_user_level_curve_meets_the_target_as_accounted(name, trial, repo_root):
    """The user-level LAPA uniform DP: the run's records, composed by the privacy stage (as
    simulated and as the records state them, improved conversion at the curve's delta), give
    an eps at most the target and within 1e-3 of it, in each trial's design; its eps_T
    (sample-level, eq. 18) is far below the target, and its noise far above the sample-level
    curve's."""
    from airfl.pipeline.registry import build_scheme
    from airfl.pipeline.stages.privacy import simulated_epsilons, trial_epsilons

    params = {**load_params(repo_root / "params.yaml"), "profile": "quick"}
    curves = _lapa_curves(params)
    curve = curves[name]
    assert curve["budget_level"] == "device"
    design, stats = _lapa_design(params, curve, trial)
    records = _lapa_records(build_scheme(name, curve, 0.05), design, stats)
    simulated = simulated_epsilons(records, curve["delta"])["improved"][-1]
    paper = trial_epsilons(records, curve["delta"])["improved"][-1]
    target = curve["target_eps"]
    assert simulated <= target
    assert simulated == pytest.approx(target, rel=1e-3)
    assert paper == pytest.approx(simulated, rel=1e-9)    # uniform: one worst device each round
    assert design["eps_total"] < target / 100
    sample, _ = _lapa_design(params, curves[name.replace("_user", "")], trial)
    assert design["nu"] > 100 * sample["nu"]


def test_lapas_adaptive_budget_collapses_at_the_smallest_quick_target(repo_root):
    """The absence reason of LAPA's Configuration 3: on the arena's design at eps_T = 1, with
    noise alone (zero uploads), its eq. 12 round budget falls below 1e-100 of B_1 within six
    rounds, its l2_rel fallback engaged, and the mechanism fails by round 7 (infinite noise,
    then a non-number) in every quick trial."""
    from airfl.core.scheme import RoundState
    from airfl.pipeline.registry import build_scheme
    from airfl.runtime.rng import RoundStreams

    params = {**load_params(repo_root / "params.yaml"), "profile": "quick"}
    reason = next(a.reason for a in entrants.ABSENT if a.legend.startswith("LAPA"))
    assert "eps_T = 1" in reason and "round-7" in reason
    curve = {**_lapa_curves(params)["lapa_uniform_eps1"], "privacy": "lapa"}
    for trial in range(settings(params)["task"]["scale"]["trials"]):
        design, _ = _lapa_design(params, curve, trial)
        scheme = build_scheme("lapa_eps1", curve, 0.05)
        n = len(design["sizes"])
        failed = None
        for t in range(1, 8):
            state = RoundState(t, torch.ones(n), torch.ones(n), None,
                               RoundStreams(params["seed"], ARENA.id, trial, t))
            try:
                step, _ = scheme.aggregate(torch.zeros(n, 16, dtype=torch.float64), state,
                                           design)
            except ValueError as error:
                failed = str(error)
                break
            if not torch.isfinite(step).all():
                failed = "not finite"
                break
        lapa = scheme._runs[trial]["lapa"]
        assert min(lapa.budgets[:6]) < 1e-100 * lapa.budgets[0] and lapa.fallback
        assert failed is not None, trial
