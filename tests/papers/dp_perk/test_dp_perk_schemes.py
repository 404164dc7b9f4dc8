"""DP as a perk's scheme adapter (schemes.py): units, the plan's active sets, common random
numbers (AirFL-DP bit-identical to AirFL-MIMO below the perk threshold and across P above full
binding, our reading), training from the stored design and plan."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch

from airfl.core.loop import LocalWork, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics, DesignContext
from airfl.pipeline.registry import build_scheme
from airfl.models.flat import SoftmaxRegression

from dp_perk_helpers import DIM_IN, N, toy_client_data


def _curve(method, power_w=2e-3, eps_tilde=None, beamformer="zf"):
    curve = {"scheme": "dp_perk", "method": method, "power_w": power_w,
             "antennas": 16, "sample_ratio": 0.8, "clip_factor": 0.012, "sigma2_w": 1e-13,
             "carrier_hz": 2.4e9, "radius_m": 1000.0, "min_distance_m": 1.0,
             "distance_mode": "per_device", "zf_columns": "active", "beamformer": beamformer,
             "noise_model": "complex_real_part", "dp_noise_convention": "paper",
             "accountant": "paper", "delta": 1e-5}
    if eps_tilde is not None:
        curve["eps_tilde"] = eps_tilde
    return build_scheme(method, curve, 0.1)         # eta: the local work's step size


def _run(scheme, rounds=5):
    data = toy_client_data()
    model = SoftmaxRegression(DIM_IN, 3)
    stats = ChannelStatistics(torch.ones(N, dtype=torch.float64), 1.0, 1e6, torch.zeros(N))
    context = DesignContext(N, model.dim, rounds, data.sizes, stats, trial=0, seed=3,
                            experiment="test/dp_perk")
    design = scheme.design(context)
    setup = TrialSetup("test/dp_perk", 3, 0, model, data, (data.x, data.y), (data.x, data.y),
                       stats, rounds=rounds, eval_every=1,
                       local=LocalWork(2, 5, 0.1, epochs=1), server=ServerStep(1.0))
    table, records = run_trial(setup, scheme, design, progress=False)
    return design, table, records


def test_vanilla_moves_the_model_by_the_mean_of_the_active_devices_updates():
    """Units: the adapter divides uploads by -eta into Delta_i (4) and returns -eta times the
    estimate, so Vanilla FL is plain FedAvg over I^(t) (5)."""
    scheme = _curve("vanilla")
    data, model = toy_client_data(), SoftmaxRegression(DIM_IN, 3)
    stats = ChannelStatistics(torch.ones(N, dtype=torch.float64), 1.0, 1e6, torch.zeros(N))
    design = scheme.design(DesignContext(N, model.dim, 3, data.sizes, stats, 0, None, 3, "x"))
    assert len(design["active"]) == 3 and all(len(a) == 8 for a in design["active"])
    updates = torch.randn(8, model.dim, generator=torch.Generator().manual_seed(0))
    from airfl.core.scheme import RoundState
    from airfl.runtime.rng import RoundStreams
    state = RoundState(1, torch.ones(N), data.sizes, stats, RoundStreams(3, "x", 0, 1))
    out, record = scheme.aggregate(updates, state, design)
    torch.testing.assert_close(out, updates.mean(dim=0))
    assert scheme.participants(state, design).tolist() == design["active"][0]
    assert record["participants"] == 8


def test_dp_equals_mimo_below_the_threshold_and_is_flat_above_full_binding():
    """Our reading (q independent of P) on whole training runs with common random numbers."""
    low, high = 1e-15, 1e-3                                   # far below P_thr / above P_full
    probe, _, _ = _run(_curve("airfl_dp", low, eps_tilde=1.0), rounds=1)
    assert probe["power_threshold_w"] > low and probe["power_full_w"] < high
    dp_low, a, ra = _run(_curve("airfl_dp", low, eps_tilde=1.0))
    _, b, rb = _run(_curve("airfl_mimo", low))
    assert dp_low["q"] == dp_low["pi"]
    pd.testing.assert_frame_equal(a.drop(columns=["snr_threshold_db", "snr_full_db"]), b)
    _, c, _ = _run(_curve("airfl_dp", high, eps_tilde=1.0))
    _, e, _ = _run(_curve("airfl_dp", 10 * high, eps_tilde=1.0))
    metrics = ["test_accuracy", "train_loss", "q", "noise_std_sum"]
    pd.testing.assert_frame_equal(c[metrics], e[metrics])
    _, m, _ = _run(_curve("airfl_mimo", high))
    assert (c["noise_std_sum"].iloc[1:] > m["noise_std_sum"].iloc[1:]).all()
    assert (c["tx_power_max_w"].iloc[1:] <= high * (1 + 1e-9)).all()    # (7) holds


@pytest.mark.parametrize("method, eps_tilde", [("airfl_dp", 1.0), ("airfl_mimo", None),
                                               ("fl_clip", None)])
def test_training_reads_the_stored_design_and_equals_the_drawn_plan(method, eps_tilde,
                                                                     monkeypatch):
    """the train stage trains on the design stage's JSON (a fresh scheme, the plan
    never redrawn) and every round's update and record equal those of the aggregation rule on
    the drawn plan (RoundChannel), bit for bit: s_i, q_t, pi_t and the allocation survive JSON."""

    from airfl.core.scheme import RoundState
    from airfl.papers.dp_perk import schemes as sch
    from airfl.papers.dp_perk.aggregation import AGGREGATORS
    from airfl.runtime.rng import RoundStreams

    rounds, data, model = 4, toy_client_data(), SoftmaxRegression(DIM_IN, 3)
    stats = ChannelStatistics(torch.ones(N, dtype=torch.float64), 1.0, 1e6, torch.zeros(N))
    context = DesignContext(N, model.dim, rounds, data.sizes, stats, trial=0, seed=3,
                            experiment="test/dp_perk")
    designer = _curve(method, 2e-9, eps_tilde=eps_tilde)
    stored = json.loads(json.dumps(designer.design(context)))
    plan, airfl = designer._plan(3, "test/dp_perk", 0, N, rounds, model.dim)

    def no_redraw(*args, **kwargs):
        raise AssertionError("training redrew the uplink plan")

    monkeypatch.setattr(sch, "plan_uplink", no_redraw)
    trainer = _curve(method, 2e-9, eps_tilde=eps_tilde)                 # a train job's scheme
    for t in range(1, rounds + 1):
        updates = torch.randn(8, model.dim, generator=torch.Generator().manual_seed(t))
        streams = RoundStreams(3, "test/dp_perk", 0, t)
        state = RoundState(t, torch.ones(N), data.sizes, stats, streams)
        out, record = trainer.aggregate(updates, state, stored)
        want, expected = AGGREGATORS[method](updates / -0.1, plan.round(t - 1), airfl,
                                             RoundStreams(3, "test/dp_perk", 0, t)("noise"))
        assert torch.equal(out, want * -0.1)
        expected = {k: v for k, v in expected.items() if k not in ("method", "round_index")}
        assert {k: v for k, v in record.items() if k in expected} == expected


def test_the_stored_allocation_and_round_come_back_exactly():
    from airfl.papers.dp_perk.design import AirflDesign, design_airfl_dp
    from airfl.papers.dp_perk.uplink import StoredRound

    design = design_airfl_dp([2e-6, 3e-6, 1e-6], eps_tilde=0.5, delta=1e-5, dim=100, clip=1.1,
                             sample_ratio=0.8, sigma2=1e-13, power_w=1e-3)
    back = AirflDesign.from_dict(json.loads(json.dumps(design.to_dict())))
    assert back == design and back.privacy_dp == design.privacy_dp
    assert math.isinf(back.domain_B) and back.q == design.q
    stored = StoredRound(0, torch.tensor([1, 2]), 2e-6, design.q[0], torch.ones(2) + 0j)
    assert torch.equal(stored.transmit_scalars(design.q[0]), torch.ones(2) + 0j)
    with pytest.raises(ValueError, match="re-run the design stage"):
        stored.transmit_scalars(design.q[0] * 1.5)              # other scalars need channels
