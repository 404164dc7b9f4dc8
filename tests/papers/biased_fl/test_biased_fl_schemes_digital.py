"""Biased FL's proposed digital scheme and what its baselines share (schemes/digital.py): the
estimator against Lemma 2, latency modes, determinism, the params schema; and the rounds of
several lockstep runs at once (`_DigitalScheme.aggregate_many`): every run gets exactly what its
own `aggregate` gives, and a lockstep grid of digital candidates makes the choices of the
candidates run one by one, its numbers equal up to the reassociation of the batched gradients."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from jsonschema import Draft202012Validator

import airfl.schemes  # noqa: F401
from airfl.core.engine import ClientData
from airfl.core.lockstep import run_lockstep
from airfl.core.loop import LocalWork, Schedule, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics, DesignContext, RoundState
from airfl.models.flat import SoftmaxRegression
from airfl.pipeline.registry import build_scheme, scheme_kinds
from airfl.papers.biased_fl.design import digital_model as dm
from airfl.papers.biased_fl.schemes import digital as ds
from airfl.runtime.rng import RoundStreams

from biased_fl_digital_helpers import (
    N0, D_MODEL, DESIGN_KW, N, D, LAM, ES, digital_context, digital_state, digital_stats, grads,
    mean_and_se)


def _hand_design(p, beta, r):
    lam = LAM.numpy()
    rho = np.sqrt(-lam * np.log(beta))
    q = dm.digital_quantities(rho, beta / p, r, lam, Es=ES, N0=N0, d=D, B=1e6)
    return {"rho": rho.tolist(), "nu": (beta / p).tolist(), "r": list(r), "R": q["R"].tolist(),
            "p": p.tolist(), "beta": beta.tolist()}


# ------------------------------------------------------------------ schemes


def test_proposed_is_unbiased_for_the_weighted_gradient_and_within_lemma2():
    p = np.array([0.35, 0.25, 0.2, 0.12, 0.08])
    beta = np.array([0.9, 0.6, 0.5, 0.3, 0.2])
    r = np.array([2, 3, 2, 4, 1])
    design = _hand_design(p, beta, r)
    scheme = build_scheme("prop", {"scheme": "biased_digital"})
    g = grads()
    rounds = 3000
    est = torch.stack([scheme.aggregate(g, digital_state(t), design)[0] for t in range(rounds)])
    target = torch.as_tensor(p) @ g
    mean, se = mean_and_se(est)
    assert torch.all((mean - target).abs() <= 5 * se + 1e-12)
    mse = float(((est - target) ** 2).sum(1).mean())
    G = float(torch.linalg.vector_norm(g, dim=1).max())
    zeta = dm.zeta_digital(p, beta, r, G=G, d=D)                   # Lemma 2 bound with ||g|| <= G
    assert mse <= zeta * 1.05


def test_proposed_latency_modes_and_empty_round():
    p, beta, r = np.full(N, 0.2), np.full(N, 0.5), np.array([2, 2, 3, 3, 4])
    design = _hand_design(p, beta, r)
    cap_scheme = build_scheme("c", {"scheme": "biased_digital"})
    fix_scheme = build_scheme("f", {"scheme": "biased_digital", "latency_mode": "fixed_rate"})
    g = grads()
    for t in range(50):
        state = digital_state(t)
        _, rec_c = cap_scheme.aggregate(g, state, design)
        _, rec_f = fix_scheme.aggregate(g, digital_state(t), design)
        chi = state.channel_power >= torch.as_tensor(design["rho"]) ** 2
        L = 64 + D * torch.as_tensor(r)
        cap = torch.log2(1 + ES * state.channel_power / N0)
        assert rec_c["latency_s"] == pytest.approx(float((L / (1e6 * cap))[chi].sum()), rel=1e-12)
        assert rec_f["latency_s"] == pytest.approx(
            float((L / (1e6 * torch.as_tensor(design["R"], dtype=torch.float64)))[chi].sum()), rel=1e-12)
        assert rec_c["latency_s"] <= rec_f["latency_s"] + 1e-15   # C >= R above the threshold
        assert rec_c["participants"] == int(chi.sum()) and rec_c["bits"] == int(L[chi].sum())
        assert rec_c["privacy"] is None
    est, rec = cap_scheme.aggregate(g, digital_state(0, power=torch.zeros(N, dtype=torch.float64)), design)
    assert torch.all(est == 0) and rec["latency_s"] == 0 and rec["participants"] == 0 and rec["bits"] == 0


def test_proposed_design_step_matches_the_sca(designs):
    lam = torch.as_tensor(DESIGN_KW["lam"])
    context = DesignContext(10, D_MODEL, 10, torch.full((10,), 100), digital_stats(lam))
    design = build_scheme("p", {"scheme": "biased_digital", "variant": "zb_qnv"}).design(context)
    json.dumps(design)
    assert design["psi"] == pytest.approx(designs["zb_qnv"]["psi"], rel=1e-9)
    assert design["r"] == designs["zb_qnv"]["r"].tolist()


def test_proposed_aggregation_is_deterministic():
    design = _hand_design(np.full(N, 0.2), np.full(N, 0.7), np.array([3] * N))
    scheme = build_scheme("p", {"scheme": "biased_digital"})
    g = grads().float()
    a = scheme.aggregate(g, digital_state(2, seed=9), design)
    b = scheme.aggregate(g, digital_state(2, seed=9), design)
    assert torch.equal(a[0], b[0]) and a[1] == b[1] and a[0].dtype == torch.float32


def test_params_schema_validates_and_fills_defaults():
    for kind, schema in ds.PARAMS_SCHEMA.items():
        Draft202012Validator.check_schema(schema)
        assert kind in scheme_kinds()
        scheme = build_scheme(kind, {"scheme": kind})
        defaults = {k: v["default"] for k, v in schema["properties"].items() if "default" in v}
        assert {k: scheme.params[k] for k in defaults} == defaults
    with pytest.raises(ValueError, match="variant"):
        build_scheme("x", {"scheme": "biased_digital", "variant": "bogus"})
    with pytest.raises(ValueError):
        build_scheme("x", {"scheme": "qml", "unknown_knob": 1})
    with pytest.raises(ValueError):
        build_scheme("x", {"scheme": "fedtoe", "p_out": 1.0})
    with pytest.raises(ValueError, match="K = 9 > N"):
        build_scheme("x", {"scheme": "best_channel", "K": 9}).design(digital_context())


# the lockstep grid's federation: the paper's E_s, N0 (dBm/Hz), B; four devices, a small model
N0_GRID, ES_GRID, B = 10.0 ** ((-161 - 30) / 10), 1e-9, 1e6
LAM_GRID = torch.tensor([4e-11, 2e-11, 1e-11, 5e-12], dtype=torch.float64)
STATS = ChannelStatistics(LAM_GRID, float(LAM_GRID.min()), B, torch.arange(1, 5) * 100.0,
                          energy_per_symbol=ES_GRID, noise_psd=N0_GRID)
MODEL = SoftmaxRegression(6, 3, l2=0.01)
D_GRID = MODEL.dim                                        # 21

# two parameter sets per kind: a group mixes candidates, as a tune job's grid does
GRID = {
    "best_channel": [{"K": 2, "T_BC_s": 2e-4}, {"K": 3, "T_BC_s": 1e-4}, {"K": 1}],
    "best_channel_norm": [{"K": 2, "K_prime": 3, "T_BC_s": 2e-4}, {"K": 3, "K_prime": 4},
                          {"K": 1, "K_prime": 3}],
    "proportional_fairness": [{"K": 2, "T_PF_s": 2e-4}, {"K": 3, "T_PF_s": 1e-4}, {"K": 1}],
    "uqos": [{"K": 2, "R": 0.05, "r_U": 3}, {"K": 3, "R": 0.2, "r_U": 8}, {"K": 1}],
    "qml": [{"K": 2, "eps0_rel": 0.01}, {"K": 3, "eps0_rel": 1.0}, {"K": 1}],
    "fedtoe": [{"K": 2, "p_out": 0.3, "T_TOE_s": 5e-4}, {"K": 3, "p_out": 0.1, "T_TOE_s": 2e-4},
               {"K": 1}],
    "biased_digital": [{}, {"latency_mode": "fixed_rate"}],
}


def _proposed_design():
    """A hand-made design of the proposed scheme (p, beta, r), its rates from the paper's model."""
    p, beta, r = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.9, 0.6, 0.5, 0.3]), [2, 3, 4, 1]
    rho = np.sqrt(-LAM_GRID.numpy() * np.log(beta))
    q = dm.digital_quantities(rho, beta / p, np.array(r), LAM_GRID.numpy(), Es=ES_GRID, N0=N0_GRID,
                              d=D_GRID, B=B)
    return {"rho": rho.tolist(), "nu": (beta / p).tolist(), "r": r, "R": q["R"].tolist()}


def _candidates(kind):
    """(scheme, design) of each parameter set of `kind`."""
    out = []
    for i, params in enumerate(GRID[kind]):
        scheme = build_scheme(f"{kind}{i}", {"scheme": kind, **params})
        design = _proposed_design() if kind == "biased_digital" else \
            scheme.design(DesignContext(4, D_GRID, 10, torch.full((4,), 20), STATS, trial=0))
        out.append((scheme, design))
    return out


def _grid_state(trial, t):
    """A fresh round state (streams are stateful: every evaluation gets its own)."""
    streams = RoundStreams(5, "digital-many", trial, t)
    power = LAM_GRID * torch.empty(4, dtype=torch.float64).exponential_(generator=streams("channel"))
    return RoundState(t, power, torch.full((4,), 20), STATS, streams)


@pytest.mark.parametrize("kind", sorted(GRID))
def test_each_run_of_a_group_gets_what_its_own_aggregate_gives(kind):
    """Runs = 2 candidates x 2 trials (the candidates of a trial share the quantizer's draws);
    several rounds, so that sampling and outages vary."""
    runs = [(scheme, design, trial) for trial in (0, 1) for scheme, design in _candidates(kind)]
    cls = type(runs[0][0])
    for t in range(1, 9):
        updates = torch.randn(len(runs), 4, D_GRID, generator=torch.Generator().manual_seed(t))
        group = cls.aggregate_many([s for s, _, _ in runs], updates,
                                   [_grid_state(trial, t) for _, _, trial in runs],
                                   [d for _, d, _ in runs])
        alone = [s.aggregate(updates[j], _grid_state(trial, t), d)
                 for j, (s, d, trial) in enumerate(runs)]
        partners = cls.aggregate_many([runs[3][0], runs[0][0]], updates[[3, 0]],
                                      [_grid_state(runs[3][2], t), _grid_state(runs[0][2], t)],
                                      [runs[3][1], runs[0][1]])
        for (est, rec), (ref, ref_rec) in zip(group, alone):
            assert est.dtype == updates.dtype and torch.equal(est, ref) and rec == ref_rec
        for (est, rec), j in zip(partners, (3, 0)):
            assert torch.equal(est, group[j][0]) and rec == group[j][1]


def _grid_setup(trial, lr):
    data = _DATA
    return TrialSetup("test/digital-many", 11, trial, MODEL, data, (data.x, data.y),
                      (data.x, data.y), STATS, rounds=400, eval_every=5,
                      local=LocalWork(1, 5, 0.1, upload="gradient", full_batch=True),
                      server=ServerStep(lr), schedule=Schedule(horizon_s=6e-3, eval_every_s=1e-3),
                      track_objective=True)


def _data():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(80, 6, generator=g), torch.randint(0, 3, (80,), generator=g)
    sizes = torch.tensor([20, 20, 20, 20])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes, 0)])
    return ClientData(x, y, torch.randperm(80, generator=g), offsets, sizes)


_DATA = _data()
CHOICES = ("participants", "scheduled", "bits", "outages", "latency_s", "mean_bits")


def test_a_lockstep_grid_makes_the_choices_of_the_one_by_one_runs():
    """A small tune grid (FedTOE and UQOS candidates, two step sizes, two trials; their
    horizons end at different rounds) in lockstep vs one by one."""
    jobs = [(_grid_setup(trial, lr), scheme, design) for kind in ("fedtoe", "uqos")
            for scheme, design in _candidates(kind) for lr in (0.5, 0.1) for trial in (0, 1)]
    batched = run_lockstep(jobs)
    alone = [run_trial(*job, progress=False) for job in jobs]
    assert len({len(records) for _, records in batched}) > 1           # horizons differ
    for (table, records), (ref_table, ref_records) in zip(batched, alone):
        assert [{k: r.get(k) for k in CHOICES} for r in records] == \
            [{k: r.get(k) for k in CHOICES} for r in ref_records]
        assert table["time_s"].tolist() == ref_table["time_s"].tolist()
        pd.testing.assert_frame_equal(table, ref_table, rtol=1e-5, atol=1e-7)
    assert any(t["objective"].iloc[-1] < t["objective"].iloc[0] for t, _ in batched)  # trains


@pytest.mark.parametrize("kind", sorted(GRID))
def test_a_scheme_reads_only_the_rows_it_declares(kind):
    """`read_rows` (known before the uploads): zeroing every other row of the uploads leaves
    the estimate and the record bit-identical (the lockstep then skips those gradients); the
    rows the estimate uses are among them. Best Channel-Norm schedules by gradient norms, so
    it reads every row (None)."""
    for scheme, design in _candidates(kind):
        for t in range(1, 9):
            updates = torch.randn(4, D_GRID, generator=torch.Generator().manual_seed(100 + t))
            state = _grid_state(0, t)
            reads = scheme.read_rows(state, design)
            if kind == "best_channel_norm":
                assert reads is None
                continue
            est, rec = scheme.aggregate(updates, state, design)
            ref, ref_rec = scheme.aggregate(updates * reads.unsqueeze(-1), _grid_state(0, t), design)
            assert torch.equal(est, ref) and rec == ref_rec
            plan = scheme.plan(updates, updates.abs().amax(-1).double().numpy(), state, design)
            assert not (plan.used & ~reads.numpy()).any()


def test_weighted_quantized_sums_are_the_weighted_sums_of_the_quantizer():
    """sum_m w_m Q(g_m) without the quantized copy equals weights @ stochastic_quantize with the
    same uniforms (float64 reassociation only), for rows of several bit widths."""
    from airfl.channel.quantization import stochastic_quantize

    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 4, D_GRID, generator=g)
    x[1, 2] = 0.0                                                 # a zero row
    plans = [ds.Plan(torch.tensor([1, 3, 8, 16]), torch.tensor([True, False, True, True]),
                     torch.tensor([0.5, 0.0, 2.0, 1.0], dtype=torch.float64), {}),
             ds.Plan(torch.tensor([2, 2, 4, 1]), torch.tensor([False, True, True, False]),
                     torch.tensor([0.0, 1.5, 0.25, 0.0], dtype=torch.float64), {})]
    states = [_grid_state(0, 1), _grid_state(1, 1)]
    scale = x.abs().amax(-1).double()
    got = ds.weighted_quantized_sums(x, scale, plans, states)
    for j, plan in enumerate(plans):                              # the same first draw
        noise = _grid_state(j, 1).streams.uniform_block("quantization", (4, D_GRID))
        q = stochastic_quantize(x[j].double(), plan.bits, None, noise=noise)
        torch.testing.assert_close(got[j], plan.weights @ q, rtol=1e-12, atol=1e-12)
