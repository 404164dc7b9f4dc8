"""Biased FL's six digital baselines of Fig. 3(b,c) (schemes/digital_baselines.py, paper Sec.
V-D): UQOS, FedTOE, proportional fairness, best channel (and its norm variant), QML;
capacity-charged latency, unbiasedness, determinism."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch

from airfl.channel.digital import outage_probability_rayleigh, shannon_rate
from airfl.core.scheme import DesignContext
from airfl.pipeline.registry import build_scheme
from airfl.papers.biased_fl.schemes import digital as ds
from airfl.papers.biased_fl.schemes import digital_baselines as dsb

from biased_fl_digital_helpers import (
    N, D, LAM, ES, digital_context, digital_state, digital_stats, grads, mean_and_se,
    default_lam)


N0 = 10.0 ** ((-161 - 30) / 10)


# ------------------------------------------------------------------ schemes


def test_uqos_inclusion_and_madow_sampling():
    s = np.array([0.9, 0.6, 0.3, 0.05, 0.8])
    pi = dsb.uqos_inclusion(s, 3)
    assert pi.sum() == pytest.approx(3.0, abs=1e-12) and np.all((pi > 0) & (pi <= 1))
    free = pi < 1
    assert np.allclose(pi[free] * np.sqrt(s[free]), (pi[free] * np.sqrt(s[free]))[0])  # KKT: pi ~ 1/sqrt(s)
    objective = lambda v: np.mean(1 / (s * v))                          # (1/N) sum 1/(s pi)
    rng = np.random.default_rng(0)
    for _ in range(200):                                                # feasible competitors
        other = rng.dirichlet(np.ones(5)) * 3
        if np.all(other <= 1):
            assert objective(other) >= objective(pi) - 1e-12
    gen = torch.Generator().manual_seed(5)
    draws = torch.stack([dsb.madow_sample(torch.as_tensor(pi), gen) for _ in range(20000)])
    assert torch.all(draws.sum(1) == 3)
    freq = draws.double().mean(0).numpy()
    assert np.all(np.abs(freq - pi) <= 5 * np.sqrt(pi * (1 - pi) / 20000) + 1e-9)


def test_uqos_estimator_is_unbiased_for_the_mean_gradient():
    scheme = build_scheme("u", {"scheme": "uqos", "K": 3, "R": 0.05, "r_U": 3})
    design = scheme.design(digital_context())
    assert sum(design["pi"]) == pytest.approx(3.0)
    g = grads()
    est, recs = zip(*[scheme.aggregate(g, digital_state(t), design) for t in range(4000)])
    mean, se = mean_and_se(torch.stack(est))
    assert torch.all((mean - g.mean(0)).abs() <= 5 * se)
    L = 64 + D * 3
    assert all(rec["scheduled"] == 3 for rec in recs)
    fixed = build_scheme("uf", {"scheme": "uqos", "K": 3, "R": 0.05, "r_U": 3,
                                "latency_mode": "fixed_rate"})
    assert all(fixed.aggregate(g, digital_state(t), design)[1]["latency_s"]
               == pytest.approx(3 * L / (1e6 * 0.05)) for t in range(50))


def test_fixed_rate_schemes_are_charged_capacity_when_decoded():
    """Paper §V-D: "our per-round latency calculation uses channel capacity for all schemes":
    a decoded upload costs L/(B C_t) (C_t >= its fixed rate), an upload in outage its slot L/(B R)."""
    # UQOS with K = N (everyone sampled): devices 0-2 far above the threshold, 3-4 in deep fade
    power = torch.tensor([3e-10, 1e-10, 5e-11, 1e-16, 0.0], dtype=torch.float64)
    scheme = build_scheme("u", {"scheme": "uqos", "K": N, "R": 0.5, "r_U": 3})
    design = scheme.design(digital_context())
    _, rec = scheme.aggregate(grads(), digital_state(0, power=power), design)
    L = 64 + D * 3
    cap = torch.log2(1 + ES * power / N0)
    expected = float((L / (1e6 * cap[:3])).sum()) + 2 * L / (1e6 * 0.5)
    assert rec["outages"] == 2 and rec["latency_s"] == pytest.approx(expected, rel=1e-12)
    # FedTOE: never more than the fixed-rate charge, same bits and receptions
    params = {"scheme": "fedtoe", "K": 3, "p_out": 0.3, "T_TOE_s": 5e-3}
    fedtoe = build_scheme("f", params)
    fixed = build_scheme("g", {**params, "latency_mode": "fixed_rate"})
    design = fedtoe.design(digital_context())
    cheaper = 0
    for t in range(200):
        _, rec = fedtoe.aggregate(grads(), digital_state(t), design)
        _, rec_fixed = fixed.aggregate(grads(), digital_state(t), design)
        assert rec["bits"] == rec_fixed["bits"] and rec["participants"] == rec_fixed["participants"]
        assert rec["latency_s"] <= rec_fixed["latency_s"] * (1 + 1e-12)
        cheaper += rec["latency_s"] < rec_fixed["latency_s"] * (1 - 1e-9)
    assert cheaper > 100                                   # decoded uploads run above their rate
    # hand case of the rule: one device decoded (capacity 3), one in outage (fixed rate 0.5)
    rate = ds.fixed_rate_charge("capacity_on_success", torch.tensor([0.5, 0.5]),
                                torch.tensor([3.0, 0.2], dtype=torch.float64),
                                torch.tensor([True, False]))
    assert rate.tolist() == [3.0, 0.5]
    with pytest.raises(ValueError, match="latency_mode"):
        ds.fixed_rate_charge("bogus", torch.ones(2), torch.ones(2), torch.ones(2, dtype=torch.bool))


def test_uqos_rate_that_nobody_decodes_stops_the_design():
    from airfl.core.participation import NoTransmissionError

    lam = torch.as_tensor(default_lam())                               # literal SNR, 1200 m disc
    context = DesignContext(10, D, 10, torch.full((10,), 100), digital_stats(lam))
    with pytest.raises(NoTransmissionError, match="'u'.*R = 2 bit.*lower R"):
        build_scheme("u", {"scheme": "uqos", "K": 5, "R": 2.0}).design(context)
    assert sum(build_scheme("u", {"scheme": "uqos", "K": 5, "R": 0.2}).design(context)["pi"]) \
        == pytest.approx(5.0)


def test_fedtoe_outage_is_p_out_and_estimator_is_unbiased():
    scheme = build_scheme("f", {"scheme": "fedtoe", "K": 3, "p_out": 0.3, "T_TOE_s": 5e-3})
    design = scheme.design(digital_context())
    rates = torch.as_tensor(design["rates"])
    mean_snr = LAM * ES / N0
    assert torch.allclose(outage_probability_rayleigh(mean_snr, rates),
                          torch.full((N,), 0.3, dtype=torch.float64), rtol=1e-12)
    gen = torch.Generator().manual_seed(2)
    power = LAM * torch.empty(100000, N, dtype=torch.float64).exponential_(generator=gen)
    empirical = (shannon_rate(ES * power / N0) < rates).double().mean(0)
    assert torch.all((empirical - 0.3).abs() < 5 * math.sqrt(0.21 / 100000))
    g = grads()
    est, recs = zip(*[scheme.aggregate(g, digital_state(t), design) for t in range(4000)])
    mean, se = mean_and_se(torch.stack(est))
    assert torch.all((mean - g.mean(0)).abs() <= 5 * se)
    assert all(rec["latency_s"] <= 5e-3 * (1 + 1e-12) for rec in recs if rec["within_budget"])
    assert any(rec["within_budget"] for rec in recs)


def test_proportional_fairness_selects_devices_equally_often():
    lam = torch.tensor([1e-10, 3e-11, 1e-11, 3e-12, 1e-12, 5e-13], dtype=torch.float64)
    scheme = build_scheme("pf", {"scheme": "proportional_fairness", "K": 2})
    rounds = 6000
    counts = torch.as_tensor(np.stack([scheme.schedule(digital_state(t, lam=lam)) for t in range(rounds)])).double().sum(0)
    expected = rounds * 2 / 6
    sd = math.sqrt(rounds * (1 / 3) * (2 / 3))
    assert torch.all((counts - expected).abs() <= 5 * sd)
    bc = build_scheme("bc", {"scheme": "best_channel", "K": 2})
    counts_bc = torch.as_tensor(np.stack([bc.schedule(digital_state(t, lam=lam)) for t in range(500)])).double().sum(0)
    assert counts_bc[0] > counts_bc[-1] * 5                   # contrast: best channel is biased


def test_best_channel_picks_the_k_strongest_and_fills_its_budget():
    scheme = build_scheme("bc", {"scheme": "best_channel", "K": 3})
    design = scheme.design(digital_context())
    assert design == scheme.design(digital_context())                 # seeded Monte-Carlo rule
    assert design != scheme.design(digital_context(trial=1))
    g = grads()
    rs = []
    for t in range(300):
        state = digital_state(t)
        mask = scheme.schedule(state)
        top = torch.topk(state.channel_power, 3).indices
        assert set(np.flatnonzero(mask).tolist()) == set(top.tolist())
        _, rec = scheme.aggregate(g, state, design)
        rs.append(rec["mean_bits"])
        if rec["mean_bits"] > 1:
            assert rec["latency_s"] <= design["T_BC_s"] * (1 + 1e-12)
    assert np.median(rs) >= 15                                  # T_BC gives r ~ r_max typically


def test_best_channel_norm_prefers_large_gradients():
    scheme = build_scheme("bcn", {"scheme": "best_channel_norm", "K": 2, "K_prime": 4})
    design = scheme.design(digital_context())
    g = grads() * torch.tensor([[1.0], [5.0], [0.2], [3.0], [0.1]], dtype=torch.float64)
    norms = torch.linalg.vector_norm(g, dim=1)
    for t in range(50):
        state = digital_state(t)
        mask = scheme.schedule(state, norms.numpy())
        pre = set(torch.topk(state.channel_power, 4).indices.tolist())
        chosen = set(np.flatnonzero(mask).tolist())
        assert chosen <= pre and len(chosen) == 2
        assert min(norms[list(chosen)]) >= max(norms[list(pre - chosen)])
        _, rec = scheme.aggregate(g, state, design)
        assert rec["participants"] == 2


def test_qml_allocation_is_latency_minimal_by_brute_force():
    rng = np.random.default_rng(7)
    d, r_max = 20, 6
    for case in range(30):
        sinf2 = rng.uniform(0.1, 2.0, 3) ** 2
        spb = rng.uniform(0.2, 5.0, 3) * 1e-6
        eps0 = float(rng.choice([1e-3, 1e-2, 0.1])) * d
        r, feasible = dsb.qml_allocate(sinf2, spb, d, eps0, r_max)
        best = None
        for combo in itertools.product(range(1, r_max + 1), repeat=3):
            c = np.array(combo, dtype=float)
            if np.mean(d * sinf2 / (2 ** c - 1) ** 2) <= eps0:
                lat = float(np.sum((64 + d * c) * spb))
                best = lat if best is None else min(best, lat)
        if best is None:
            assert not feasible
            continue
        assert feasible and np.mean(d * sinf2 / (2.0 ** r - 1) ** 2) <= eps0
        assert float(np.sum((64 + d * r) * spb)) <= best * (1 + 1e-12)


def test_qml_round_meets_the_variance_constraint():
    scheme = build_scheme("q", {"scheme": "qml", "K": 3, "eps0_rel": 0.5, "G": 1.0})
    design = scheme.design(digital_context())
    g = grads()
    for t in range(20):
        _, rec = scheme.aggregate(g, digital_state(t), design)
        assert rec["variance_feasible"] and rec["quantization_variance"] <= design["eps0"]
        assert rec["participants"] == 3


@pytest.mark.parametrize("K", [1, 3])         # K = 1: the bottom of the paper profile's grids
@pytest.mark.parametrize("kind", sorted(set(ds.PARAMS_SCHEMA) - {"biased_digital"}))
def test_baselines_are_deterministic_with_json_designs(kind, K):
    extra = {"K_prime": K + 1} if kind == "best_channel_norm" else \
        {"R": 0.05} if kind == "uqos" and K == 1 else {}   # R = 0.2, K = 1: too few decode here
    scheme = build_scheme(kind, {"scheme": kind, "K": K, **extra})
    design = scheme.design(digital_context())
    json.dumps(design)
    g = grads()
    a = scheme.aggregate(g, digital_state(4, seed=1), design)
    b = scheme.aggregate(g, digital_state(4, seed=1), design)
    c = scheme.aggregate(g, digital_state(5, seed=1), design)
    assert torch.equal(a[0], b[0]) and a[1] == b[1]
    assert not torch.equal(a[0], c[0]) or a[1] != c[1]
    assert a[0].dtype == g.dtype and a[0].shape == (D,)
    assert {"participants", "latency_s", "bits", "privacy"} <= set(a[1]) and a[1]["privacy"] is None


def test_fedtoe_budget_no_round_can_reach_is_inert_and_changes_no_run():
    """T_TOE is inert when (64 + d r_max) sum of the K largest 1/(B R_k) fits it
    (FedToe.inert_params). Two such budgets give bit-identical rounds; a budget below that
    bound is not inert and does bind in some round (fewer bits)."""
    base = {"scheme": "fedtoe", "K": 3, "p_out": 0.3}
    design = build_scheme("f", {**base, "T_TOE_s": 1.0}).design(digital_context())
    slowest = sorted(1.0 / (1e6 * r) for r in design["rates"])[-3:]
    worst = (64 + D * 16) * math.fsum(slowest)
    loose = [build_scheme("f", {**base, "T_TOE_s": worst * f}) for f in (1.01, 4.0)]
    tight = build_scheme("f", {**base, "T_TOE_s": worst * 0.5})
    assert all(s.inert_params(design, digital_stats(), D) == {"T_TOE_s"} for s in loose)
    assert tight.inert_params(design, digital_stats(), D) == frozenset()
    assert build_scheme("f", {**base, "T_TOE_s": worst * 0.999}).inert_params(
        design, digital_stats(), D) == frozenset()
    binding = 0
    for t in range(300):
        g = grads(seed=t)
        (a, rec_a), (b, rec_b) = (s.aggregate(g, digital_state(t), design) for s in loose)
        assert torch.equal(a, b) and rec_a == rec_b and rec_a["mean_bits"] == 16
        _, rec_t = tight.aggregate(g, digital_state(t), design)
        binding += rec_t["mean_bits"] < 16
    assert binding > 0
    assert build_scheme("q", {"scheme": "qml", "K": 3}).inert_params(
        {}, digital_stats(), D) == frozenset()                      # the default claims nothing
