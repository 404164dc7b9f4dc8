"""Batched local training and the round loop: correctness against a per-client reference,
determinism (bit-identical reruns) and common random numbers across schemes."""

from __future__ import annotations

import numpy as np
import torch

import airfl.schemes  # noqa: F401
from airfl.core.engine import ClientData, epoch_batches, local_sgd, round_batches, sample_batches
from airfl.core.loop import LocalWork, Schedule, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics
from airfl.pipeline.registry import build_scheme
from airfl.models.flat import SoftmaxRegression


def _data(n_clients=4, per_client=(5, 9, 3, 7), dim=6, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    total = sum(per_client)
    x = torch.randn(total, dim, generator=g)
    y = torch.randint(0, classes, (total,), generator=g)
    sizes = torch.tensor(per_client)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes, 0)])
    index = torch.randperm(total, generator=g)
    return ClientData(x, y, index, offsets, sizes)


def test_batches_stay_inside_each_clients_data():
    data = _data()
    index, weights = sample_batches(data, 50, torch.Generator().manual_seed(1))
    for m in range(4):
        own = set(data.client_index[data.offsets[m]:data.offsets[m + 1]].tolist())
        assert set(index[m].tolist()) <= own
        assert len(set(index[m].tolist())) == len(own)        # 50 draws cover tiny datasets
    assert torch.allclose(weights.sum(dim=1), torch.ones(4))


def _with_bias_feature(x):
    """Inputs with the constant-1 feature whose weight is the bias (the model's layout)."""
    return torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)


def test_local_sgd_matches_a_per_client_loop():
    data = _data()
    model = SoftmaxRegression(6, 3, l2=0.01)
    w0 = torch.randn(model.dim, generator=torch.Generator().manual_seed(3)) * 0.1
    updates = local_sgd(model, w0, data, steps=3, batch_size=4, lr=0.2,
                        generator=torch.Generator().manual_seed(9))
    replay = torch.Generator().manual_seed(9)
    batches = [sample_batches(data, 4, replay)[0] for _ in range(3)]
    for m in range(4):
        w = w0.clone().requires_grad_(True)
        for step in range(3):
            idx = batches[step][m]
            logits = _with_bias_feature(data.x[idx]) @ w.view(3, 7).T
            loss = torch.nn.functional.cross_entropy(logits, data.y[idx]) + 0.005 * (w * w).sum()
            (grad,) = torch.autograd.grad(loss, w)
            w = (w - 0.2 * grad).detach().requires_grad_(True)
        assert torch.allclose(updates[m], (w - w0).detach(), atol=1e-6)


def _setup(trial=0):
    data = _data(per_client=(20, 20, 20, 20))
    stats = ChannelStatistics(torch.ones(4, dtype=torch.float64), 1.0, 1e6, torch.ones(4))
    return TrialSetup("test/exp", 11, trial, SoftmaxRegression(6, 3), data,
                      (data.x, data.y), (data.x, data.y), stats, rounds=6, eval_every=2,
                      local=LocalWork(2, 5, 0.1), server=ServerStep(1.0))


def test_a_trial_is_bit_identical_when_rerun():
    scheme = build_scheme("ota", {"scheme": "ota_truncated_inversion", "snr_db": 0.0,
                                  "truncation_threshold": 0.3, "clip_norm": 1.0})
    design = {"amplitude": 2.0, "threshold_power": 0.3, "noise_multiplier": 0.5}
    a, ra = run_trial(_setup(), scheme, design, progress=False)
    b, rb = run_trial(_setup(), scheme, design, progress=False)
    assert a.equals(b) and ra == rb
    c, _ = run_trial(_setup(trial=1), scheme, design, progress=False)
    assert not a.equals(c)


def test_schemes_in_one_trial_see_the_same_channels_and_batches():
    """Common random numbers: the participation pattern of OTA is a function of the channel
    draws only, so two OTA schemes with different SNRs see identical participant counts, and the
    ideal scheme's training is unaffected by other schemes' noise draws."""
    low = build_scheme("lo", {"scheme": "ota_truncated_inversion", "snr_db": -10.0,
                              "truncation_threshold": 0.3, "clip_norm": 1.0})
    high = build_scheme("hi", {"scheme": "ota_truncated_inversion", "snr_db": 20.0,
                               "truncation_threshold": 0.3, "clip_norm": 1.0})
    design = {"threshold_power": 0.3, "noise_multiplier": 1.0}
    a, _ = run_trial(_setup(), low, {**design, "amplitude": 0.5}, progress=False)
    b, _ = run_trial(_setup(), high, {**design, "amplitude": 50.0}, progress=False)
    assert a["participants"].equals(b["participants"])
    assert a["participants"].iloc[1:].nunique() > 1             # the channel really varies


def test_ideal_training_reduces_the_loss():
    ideal = build_scheme("ideal", {"scheme": "ideal_fedavg"})
    table, records = run_trial(_setup(), ideal, {}, progress=False)
    evaluated = table.dropna(subset=["train_loss"])
    assert evaluated["train_loss"].iloc[-1] < evaluated["train_loss"].iloc[0]
    assert len(records) == 6 and all(r["privacy"] is None for r in records)


def test_full_batches_give_exact_local_objectives_and_gradients():
    from airfl.core.engine import client_gradients, full_batches

    data = _data()                                  # unequal sizes 5, 9, 3, 7
    model = SoftmaxRegression(6, 3, l2=0.02)
    w = torch.randn(model.dim, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    data64 = ClientData(data.x.double(), data.y, data.client_index, data.offsets, data.sizes)
    losses, grads = client_gradients(model, w, data64, full_batches(data64))
    for m in range(4):
        idx = data.client_index[data.offsets[m]:data.offsets[m + 1]]
        wr = w.clone().requires_grad_(True)
        logits = _with_bias_feature(data64.x[idx]) @ wr.view(3, 7).T
        f_m = torch.nn.functional.cross_entropy(logits, data.y[idx]) + 0.01 * (wr * wr).sum()
        (g,) = torch.autograd.grad(f_m, wr)
        assert torch.allclose(losses[m], f_m.detach()) and torch.allclose(grads[m], g)


def _gradient_setup(rounds=50, projection_radius=None, horizon_s=None, eval_every_s=None,
                    eval_batch=None):
    base = _setup()
    return TrialSetup(base.experiment, base.seed, 0, SoftmaxRegression(6, 3, l2=0.01), base.data,
                      base.test, base.train_eval, base.statistics, rounds=rounds, eval_every=5,
                      local=LocalWork(1, 1, 0.0, upload="gradient", full_batch=True),
                      server=ServerStep(0.5, projection_radius=projection_radius),
                      schedule=Schedule(horizon_s=horizon_s, eval_every_s=eval_every_s),
                      track_objective=True, eval_batch=eval_batch)


def test_gradient_upload_is_projected_gradient_descent_on_F():
    ideal = build_scheme("ideal", {"scheme": "ideal_fedavg"})   # equal sizes: weights 1/N
    table, _ = run_trial(_gradient_setup(), ideal, {}, progress=False)
    objective = table["objective"].dropna().to_numpy()
    assert (objective[1:] <= objective[:-1] + 1e-12).all()      # GD with a small step descends
    tiny = _gradient_setup(projection_radius=1e-3)
    table, _ = run_trial(tiny, ideal, {}, progress=False)
    assert table["objective"].notna().any()


def test_horizon_stops_the_run_and_time_schedule_drives_evaluation():
    scheme = build_scheme("ota", {"scheme": "ota_truncated_inversion", "snr_db": 0.0,
                                  "truncation_threshold": 0.3, "clip_norm": 1.0})
    design = {"amplitude": 2.0, "threshold_power": 0.3, "noise_multiplier": 0.5}
    per_round = 21 / 1e6                           # OTA latency d / B, d = 3 * (6 + 1)
    setup = _gradient_setup(rounds=1000, horizon_s=34.5 * per_round, eval_every_s=10 * per_round)
    table, records = run_trial(setup, scheme, design, progress=False)
    assert len(records) == 35                      # the first round that reaches the horizon
    assert table["time_s"].iloc[-1] >= setup.schedule.horizon_s > table["time_s"].iloc[-2]
    evaluated = table.dropna(subset=["test_accuracy"])["round"].tolist()
    assert evaluated == [0, 10, 20, 30, 35]


def test_batched_evaluation_matches_one_model_at_a_time():
    """evaluate_many / objective_many (one GEMM for all snapshots) agree with a per-model
    cross-entropy and with the clients' own full-batch losses."""
    from airfl.core.engine import (client_gradients, evaluate_many, full_batches, gather,
                                   objective_many)

    data = _data()
    model = SoftmaxRegression(6, 3, l2=0.02)
    snapshots = torch.randn(5, model.dim, generator=torch.Generator().manual_seed(8))
    loss, accuracy = evaluate_many(model, snapshots, data.x, data.y, chunk=7)   # chunks too
    full = gather(data, full_batches(data))
    objective = objective_many(model, snapshots, full)
    some = objective_many(model, snapshots, full, clients=(0, 2))      # a subset of the clients
    for e, w in enumerate(snapshots):
        logits = _with_bias_feature(data.x) @ w.view(3, 7).T
        assert torch.isclose(loss[e].float(),
                             torch.nn.functional.cross_entropy(logits, data.y), atol=1e-6)
        assert accuracy[e] == (logits.argmax(1) == data.y).double().mean()
        losses, _ = client_gradients(model, w, data, full)
        assert torch.isclose(objective[e], losses.double().mean(), atol=1e-6)
        assert torch.isclose(some[e], losses.double()[[0, 2]].mean(), atol=1e-6)


def test_deferred_evaluation_fills_the_same_rows_whatever_the_batch():
    ideal = build_scheme("ideal", {"scheme": "ideal_fedavg"})
    table, _ = run_trial(_gradient_setup(rounds=12), ideal, {}, progress=False)
    single, _ = run_trial(_gradient_setup(rounds=12, eval_batch=1), ideal, {}, progress=False)
    assert list(single.columns) == list(table.columns)
    evaluated = table["objective"].notna()
    assert evaluated.equals(single["objective"].notna()) and evaluated.sum() == 4  # 0,5,10,12
    for column in ("objective", "test_loss", "test_accuracy", "train_loss"):
        assert torch.allclose(torch.tensor(table[column].dropna().to_numpy()),
                              torch.tensor(single[column].dropna().to_numpy()), atol=1e-6)


def test_eval_last_adds_the_rounds_before_the_last_with_the_same_numbers():
    """A run evaluated at its last round only, with `eval_last=1`, also evaluates round T-1
    (a theta^(T-1) panel reads it); those rows equal an every-round run's up to float32
    reassociation (the loop evaluates the snapshots it holds together, so another set of
    snapshots sums in another order: here <= 4e-9 relative), accuracies exactly."""
    import dataclasses

    ideal = build_scheme("ideal", {"scheme": "ideal_fedavg"})
    every, _ = run_trial(dataclasses.replace(_setup(), eval_every=1), ideal, {}, progress=False)
    sparse, _ = run_trial(dataclasses.replace(_setup(), eval_every=10 ** 9, eval_last=1), ideal,
                          {}, progress=False)
    evaluated = sparse.dropna(subset=["test_accuracy"])["round"].tolist()
    assert evaluated == [0, 5, 6]
    picked = [frame.loc[frame["round"].isin(evaluated)].reset_index(drop=True)
              for frame in (sparse, every)]
    assert picked[0]["test_accuracy"].equals(picked[1]["test_accuracy"])
    for column in ("test_loss", "train_loss"):
        assert np.allclose(picked[0][column], picked[1][column], rtol=1e-6, atol=0)


def test_a_run_without_the_training_subset_has_no_training_columns_and_the_same_numbers():
    """`TrialSetup.train_eval` None (no reader of the training metrics): the round loop never
    evaluates a training subset (counted) and its table has no training columns; every other
    column equals the run with the subset bit for bit (its evaluation draws nothing)."""
    import dataclasses

    from airfl.core import loop

    ota = build_scheme("ota", {"scheme": "ota_truncated_inversion", "snr_db": 0.0,
                               "truncation_threshold": 0.3, "clip_norm": 1.0})
    design = {"amplitude": 2.0, "threshold_power": 0.3, "noise_multiplier": 0.5}
    setup = _setup()
    sets = []                         # one entry per evaluated set (test, training subset)
    real = loop.evaluate_many

    def counted(model, params, x, y, *rest):
        sets.append(len(x))
        return real(model, params, x, y, *rest)

    loop.evaluate_many = counted
    try:
        measured, _ = run_trial(setup, ota, design, progress=False)
        with_subset = len(sets)
        sets.clear()
        skipped, _ = run_trial(dataclasses.replace(setup, train_eval=None), ota, design,
                               progress=False)
    finally:
        loop.evaluate_many = real
    assert with_subset == 2 * len(sets) and len(sets) >= 1
    evaluated = measured["test_accuracy"].notna()
    assert evaluated.sum() >= 3 and all(measured[c].notna().equals(evaluated)
                                        for c in ("train_loss", "train_accuracy"))
    assert not {"train_loss", "train_accuracy"} & set(skipped.columns)
    assert skipped.equals(measured.drop(columns=["train_loss", "train_accuracy"]))


def test_a_rounds_batches_made_at_once_are_the_per_step_draws():
    """round_batches draws the round's uniforms in one call: the same numbers, hence the same
    indices, as one `sample_batches` (or `epoch_batches`) call a step, in order."""
    data = _data()
    at_once = round_batches(data, 4, 6, torch.Generator().manual_seed(2))
    generator = torch.Generator().manual_seed(2)
    for index, weights in at_once:
        ref_index, ref_weights = sample_batches(data, 6, generator)
        assert torch.equal(index, ref_index) and torch.equal(weights, ref_weights)
    balanced = _data(per_client=(6, 6, 6, 6))
    epochs = round_batches(balanced, 0, 4, torch.Generator().manual_seed(3), epochs=2)
    generator = torch.Generator().manual_seed(3)
    reference = epoch_batches(balanced, 4, generator) + epoch_batches(balanced, 4, generator)
    assert len(epochs) == len(reference) == 4
    for (index, weights), (ref_index, ref_weights) in zip(epochs, reference):
        assert torch.equal(index, ref_index) and torch.equal(weights, ref_weights)
    assert round_batches(data, 0, 6, torch.Generator()) == []
