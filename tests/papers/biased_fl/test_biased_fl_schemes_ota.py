"""Biased FL's proposed OTA scheme and the round primitives its baselines share (schemes/ota.py,
paper Sec. II-B): unbiasedness for the p-weighted mean, energy and record, the design's Psi and
bound, the receiver noise's real part, every kind's determinism and params schema."""

from __future__ import annotations

import json
import math

import jsonschema
import numpy as np
import pytest
import torch

from airfl.pipeline.registry import scheme_kinds
from airfl.papers.biased_fl.schemes import ota as osch

from biased_fl_ota_helpers import (
    ETA, MU, KAPPA, NS, DS, STATS, G_S, ota_context, ota_state, unit_gradients, make_scheme,
    mean_estimate)


@pytest.mark.parametrize("variant", ["nv", "zb", "opt"])
def test_biased_ota_is_unbiased_for_the_p_weighted_mean(variant):
    scheme = make_scheme("biased_ota", variant=variant)
    design = scheme.design(ota_context())
    p = torch.tensor(design["p"], dtype=torch.float64)
    if variant == "zb":
        assert torch.allclose(p, torch.full((NS,), 1 / NS, dtype=torch.float64), atol=1e-12)
    updates = unit_gradients(0.9)
    mean, se = mean_estimate(scheme, design, updates, 2000)
    target = p @ updates                                                 # eq. 10: E g_hat = sum p g
    assert torch.all((mean - target).abs() <= 5 * se + 1e-12)
    if variant == "nv":                                                  # biased: not the plain mean
        assert (updates.mean(0) - target).abs().max() > 10 * se.max()


def test_biased_ota_formula_energy_and_record():
    scheme = make_scheme("biased_ota", variant="nv")
    design = scheme.design(ota_context())
    updates = unit_gradients(1.0)
    for t in range(1, 30):
        state = ota_state(t)
        est, rec = scheme.aggregate(updates, state, design)
        gamma = torch.tensor(design["gamma"], dtype=torch.float64)
        chi = state.channel_power.sqrt() >= G_S * gamma / math.sqrt(DS * 0.5)     # eq. 8
        noise = torch.randn(DS, generator=ota_state(t).streams("noise"), dtype=torch.float64)
        expected = ((chi * gamma) @ updates + math.sqrt(1e-3) * noise) / design["alpha"]  # eq. 9
        assert torch.allclose(est, expected, rtol=1e-12, atol=1e-12)
        assert rec["participants"] == int(chi.sum())
        assert rec["latency_s"] == DS / 2e5 and rec["privacy"] is None
        assert rec["max_energy_ratio"] <= 1.0 + 1e-12 and rec["energy_violations"] == 0
    _, rec = scheme.aggregate(unit_gradients(3.0), ota_state(1), design)        # ||g|| > G: logged, not clipped
    assert rec["max_energy_ratio"] > 1.0 and rec["energy_violations"] >= 1


def test_biased_ota_design_reports_psi_and_bound():
    design = make_scheme("biased_ota", variant="opt", diameter=10.0).design(ota_context(rounds=50))
    bias = NS * KAPPA ** 2 / MU ** 2 * np.sum((np.array(design["p"]) - 1 / NS) ** 2)
    assert design["psi"] == pytest.approx(ETA / MU * design["zeta"] + bias)
    assert design["bound"]["init"] == pytest.approx(2 * 100.0 * (1 - ETA * MU) ** 100)
    assert design["sca"]["converged"]
    json.dumps(design)                                                   # JSON-able


@pytest.mark.parametrize("kind,params", [
    ("biased_ota", {"variant": "zb"}), ("opc_ota_comp", {}), ("lcpc_ota_comp", {}),
    ("opc_ota_fl", {"eta0_grid": 5}), ("vanilla_ota_fl", {}),
    ("bbfl_interior", {"radius_m": 1000.0}), ("bbfl_alternative", {"radius_m": 1000.0}),
    ("bbfl_interior", {"radius_m": 1000.0, "power_constraint": "peak"})])
def test_every_kind_is_deterministic_with_latency_d_over_b(kind, params):
    future = torch.stack([ota_state(t).channel_power for t in range(1, 6)])
    scheme = make_scheme(kind, **params)
    design = scheme.design(ota_context(rounds=5, future=lambda rounds: future[:rounds]))
    updates = unit_gradients(1.0).float()
    for t in range(1, 6):
        a, rec_a = scheme.aggregate(updates, ota_state(t), design)
        b, rec_b = scheme.aggregate(updates, ota_state(t), design)
        assert torch.equal(a, b) and a.dtype == torch.float32 and a.shape == (DS,)
        assert rec_a == rec_b
        assert rec_a["latency_s"] == DS / STATS.bandwidth_hz and rec_a["privacy"] is None
        assert isinstance(rec_a["participants"], int)
    validator = jsonschema.Draft202012Validator(osch.PARAMS_SCHEMA[kind])
    validator.validate({"scheme": kind, "G": G_S, **params})
    assert kind in scheme_kinds()


def test_params_schema_covers_every_kind_and_rejects_bad_values():
    kinds = {"biased_ota", "opc_ota_comp", "lcpc_ota_comp", "opc_ota_fl", "vanilla_ota_fl",
             "bbfl_interior", "bbfl_alternative"}
    assert set(osch.PARAMS_SCHEMA) == kinds
    for kind, schema in osch.PARAMS_SCHEMA.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        assert not validator.is_valid({"scheme": kind})                  # G required
        assert not validator.is_valid({"scheme": kind, "G": -1.0, "radius_m": 1.0})
    bad = {"scheme": "biased_ota", "G": 1.0, "variant": "best"}
    assert not jsonschema.Draft202012Validator(osch.PARAMS_SCHEMA["biased_ota"]).is_valid(bad)


@pytest.mark.parametrize("kind,params", [
    ("biased_ota", {"variant": "nv"}), ("opc_ota_comp", {}), ("lcpc_ota_comp", {}),
    ("opc_ota_fl", {"eta0_grid": 5}), ("vanilla_ota_fl", {}),
    ("bbfl_interior", {"radius_m": 1000.0}), ("bbfl_alternative", {"radius_m": 1000.0})])
def test_ota_noise_real_part_halves_the_noise_variance(kind, params):
    """ota_noise: real_part keeps Re of the CN(0, N0) noise of paper eq. 6: with zero gradients
    the estimate is the noise alone, the same draw scaled by sqrt(1/2) (variance halved), and the
    record's noise_std says so; the design is the same (it keeps the paper's N0)."""
    future = torch.stack([ota_state(t).channel_power for t in range(1, 6)])
    context = ota_context(rounds=5, future=lambda rounds: future[:rounds])
    full, half = make_scheme(kind, **params), make_scheme(kind, ota_noise="real_part", **params)
    assert full.param("ota_noise") == "real_full"                        # default unchanged
    design = full.design(context)
    assert half.design(context) == design
    zero = torch.zeros(NS, DS, dtype=torch.float64)
    powers = []
    for t in range(1, 6):
        a, rec_a = full.aggregate(zero, ota_state(t), design)
        b, rec_b = half.aggregate(zero, ota_state(t), design)
        assert rec_b["noise_std"] == pytest.approx(rec_a["noise_std"] * math.sqrt(0.5), rel=1e-12)
        assert torch.allclose(b, a * math.sqrt(0.5), rtol=1e-12, atol=0.0)
        powers.append((float(a.pow(2).sum()), float(b.pow(2).sum())))
    full_power, half_power = map(sum, zip(*powers))
    if full_power > 0:                                     # a round with someone received
        assert half_power / full_power == pytest.approx(0.5, rel=1e-12)
