"""DP as a perk in the pipeline: the MLP of the quick profile, epoch-mode local training, partial
participation, the scheme adapter (units, the plan's active sets, common random numbers: AirFL-DP
bit-identical to AirFL-MIMO below the perk threshold and across P above full binding, our reading),
the registry and the claims on stored figure data."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch
from torch import nn
from torch.func import functional_call

from airfl.pipeline.params import load_params
from airfl.core.engine import ClientData, epoch_batches, local_sgd
from airfl.core.loop import LocalWork, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics, DesignContext
from airfl.pipeline.registry import build_scheme
from airfl.models.flat import SoftmaxRegression, build_model
from airfl.papers.dp_perk.claims import training as dpx
from airfl.papers.dp_perk.run_blocks import compose, dp_curve, power_curve

N, PER, DIM_IN = 10, 20, 12


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N * PER, DIM_IN, generator=g)
    y = torch.randint(0, 3, (N * PER,), generator=g)
    sizes = torch.full((N,), PER)
    return ClientData(x, y, torch.randperm(N * PER, generator=g),
                      torch.arange(0, (N + 1) * PER, PER), sizes)


def test_mlp_gradients_match_autograd_of_the_torch_module():
    model = build_model("mlp32", (1, 28, 28), 10)
    assert model.dim == 25_450                                   # mlp32: 784-32-10
    g = torch.Generator().manual_seed(1)
    params = torch.stack([model.init(g) for _ in range(3)])
    x, y = torch.randn(3, 7, 1, 28, 28, generator=g), torch.randint(0, 10, (3, 7), generator=g)
    weights = torch.full((3, 7), 1 / 7)
    loss, grad = model.loss_and_grads(params, x, y, weights)
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    names = [n for n, _ in net.named_parameters()]
    for i in range(3):
        leaves = [t.clone().requires_grad_() for t in model._split(params[i])]
        out = functional_call(net, dict(zip(names, leaves)), (x[i],))
        ref = (weights[i] * nn.functional.cross_entropy(out, y[i], reduction="none")).sum()
        ref_grad = torch.cat([t.reshape(-1) for t in torch.autograd.grad(ref, leaves)])
        assert loss[i].item() == pytest.approx(ref.item(), rel=1e-6)
        torch.testing.assert_close(grad[i], ref_grad, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model.logits(params[i], x[i]), out.detach())


def test_an_epoch_visits_every_sample_of_every_client_once():
    data = _data()
    batches = epoch_batches(data, 6, torch.Generator().manual_seed(0))
    assert [b[0].shape[1] for b in batches] == [6, 6, 6, 2]      # the last batch is smaller
    seen = torch.cat([b[0] for b in batches], dim=1)
    for c in range(N):
        mine = data.client_index[data.offsets[c]:data.offsets[c + 1]]
        assert sorted(seen[c].tolist()) == sorted(mine.tolist())
    assert all(torch.allclose(w.sum(dim=1), torch.ones(N)) for _, w in batches)
    uneven = ClientData(data.x, data.y, data.client_index, torch.tensor([0, 5, 200]),
                        torch.tensor([5, 195]))
    with pytest.raises(ValueError, match="equally sized"):
        epoch_batches(uneven, 5, torch.Generator())


def test_a_subset_trains_exactly_the_chosen_clients():
    data, model = _data(), SoftmaxRegression(DIM_IN, 3)
    chosen = torch.tensor([7, 2, 5])
    sub = data.subset(chosen)
    assert sub.sizes.tolist() == [PER] * 3
    for row, c in enumerate(chosen.tolist()):
        assert sub.client_index[sub.offsets[row]:sub.offsets[row + 1]].tolist() == \
            data.client_index[data.offsets[c]:data.offsets[c + 1]].tolist()
    params = torch.zeros(model.dim)
    every = local_sgd(model, params, data, 0, 5, 0.1, torch.Generator().manual_seed(0), epochs=1)
    some = local_sgd(model, params, sub, 0, 5, 0.1, torch.Generator().manual_seed(0), epochs=1)
    assert some.shape == (3, model.dim) and every.shape == (N, model.dim)
    assert some.abs().sum() > 0


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
    data = _data()
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
    data, model = _data(), SoftmaxRegression(DIM_IN, 3)
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

    rounds, data, model = 4, _data(), SoftmaxRegression(DIM_IN, 3)
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


def test_registry_builds_every_panel_from_params():
    params = load_params("params.yaml", {"profile": "quick"})
    iid = compose("iid")(params)
    curves = iid["curves"]
    pick = params["dp_perk"]["training"]
    assert iid["training"]["local_epochs"] == pick["local_epochs"]["quick"]
    assert dp_curve(1.0) in curves and curves[dp_curve(1.0)]["in_fig6"]
    for power in pick["fig6_power_w"]["quick"]:
        for method in ("airfl_dp", "airfl_mimo"):
            assert curves[power_curve(method, power, "zf")]["in_fig6"]
            assert curves[power_curve(method, power, "zf_opt")]["beamformer"] == "zf_opt"
    non = compose("noniid")(params)
    assert non["partition"] == {"kind": "shards", "classes_per_device": 2, "pool_per_class": 400}
    assert {c for c, p in non["curves"].items() if p["method"] == "airfl_dp"} == \
        {dp_curve(e) for e in pick["fig3_eps_tilde"]["quick"]}


def _fig6_frame(dp_values, threshold=-45.0, full=-43.0):
    rows = []
    for trial in range(4):
        for snr, (dp, mimo) in dp_values.items():
            spread = 0.001 * trial if dp != mimo else 0.0     # trials differ above the threshold
            for method, acc in (("AirFL-DP", dp), ("AirFL-MIMO", mimo + spread)):
                rows.append({"curve": f"{method}{snr}", "trial": trial, "round": 20,
                             "style_key": method, "param_snr_wc_db": snr,
                             "param_power_w": 10 ** (snr / 10), "test_accuracy": acc,
                             "test_loss": 1 - acc, "train_loss": 1 - acc,
                             "snr_threshold_db": threshold if method == "AirFL-DP" else math.nan,
                             "snr_full_db": full if method == "AirFL-DP" else math.nan})
    return pd.DataFrame(rows)


def test_fig6_claims_detect_a_broken_identity():
    good = _fig6_frame({-50.0: (0.7, 0.7), -40.0: (0.75, 0.76), 3.0: (0.75, 0.77)})
    assert dpx._identical_below(good).holds and dpx._flat_above_full(good).holds
    assert dpx._dp_below_mimo_above(good).holds
    broken = _fig6_frame({-50.0: (0.69, 0.7), -40.0: (0.75, 0.76), 3.0: (0.74, 0.77)})
    assert not dpx._identical_below(broken).holds
    assert not dpx._flat_above_full(broken).holds


def test_authors_numbers_do_not_apply_to_the_quick_model():
    frame = pd.DataFrame({"curve": ["vanilla"], "trial": [0], "round": [20],
                          "test_accuracy": [0.8], "model": ["mlp32"]})
    result = dpx._authors({"vanilla": 0.895}, lambda f: {"vanilla": 0.8})(frame)
    assert result.holds is None and "not the paper's model" in result.numbers
    paper = frame.assign(model="fedavg_cnn")
    assert dpx._authors({"vanilla": 0.895}, lambda f: {"vanilla": 0.8})(paper).holds is False
    assert dpx._authors({"vanilla": 0.81}, lambda f: {"vanilla": 0.8})(paper).holds is True


def test_claims_table_escapes_pipes_and_counts_not_applicable_apart():
    from airfl.pipeline.stages.claims import markdown

    results = [{"figure": "p/f", "claim": "a", "statement": "|x| small", "numbers": "||w||",
                "verdict": "holds", "reason": "||w||"},
               {"figure": "p/f", "claim": "b", "statement": "s", "numbers": "n",
                "verdict": "n/a", "reason": "n"}]
    text = markdown(results, {"profile": "quick", "seed": 0})
    row = next(line for line in text.splitlines() if line.startswith("| p/f | a"))
    assert row.count("|") - row.count("\\|") == 6              # five cells, unbroken
    assert "| n/a |" in text and "| p | 1 | 0 | 0 | 0 | 1 | 2 |" in text


def test_authors_claims_read_theta_T_or_theta_T_minus_1():
    """theta^(T-1) (the last model the authors' code evaluates) and theta^T are read apart: a
    reference met at one round and missed at the other flips the verdict."""
    frame = pd.DataFrame({"curve": ["vanilla"] * 3, "trial": [0] * 3, "round": [18, 19, 20],
                          "test_accuracy": [0.80, 0.85, 0.90], "model": ["fedavg_cnn"] * 3})
    pick = lambda f: {"vanilla": float(f.sort_values("round")["test_accuracy"].iloc[-1])}  # noqa: E731
    at_t = dpx._authors({"vanilla": 0.895}, pick)(frame)
    before = dpx._authors({"vanilla": 0.895}, pick, rounds_back=1, model="theta^(T-1)")(frame)
    assert at_t.holds is True and "theta^T (round 20)" in at_t.numbers
    assert before.holds is False and "theta^(T-1) (round 19)" in before.numbers
    gap = frame[frame["round"] != 19]
    assert dpx._authors({"vanilla": 0.895}, pick, rounds_back=1)(gap).holds is None


def test_fig6_reference_lists_the_published_powers():
    """Every power of the authors' Fig. 6 grid has its published numbers; AirFL-DP at 2e-11 W is
    not published and is left out of the comparison, not invented."""
    from airfl.papers.dp_perk.claims.training import FIG6_AUTHORS, FIG6_REFERENCE

    assert sorted(FIG6_AUTHORS) == [2e-11, 7e-11, 2e-10, 7e-10, 2e-9, 7e-9, 2e-8, 7e-8, 2e-7]
    assert FIG6_AUTHORS[2e-11][0] is None and "AirFL-DP 2e-11 W" not in FIG6_REFERENCE
    assert FIG6_REFERENCE["AirFL-MIMO 2e-11 W"] == 0.557 and len(FIG6_REFERENCE) == 17
