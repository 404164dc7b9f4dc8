"""Trials in lockstep with batched gradients (airfl.core.lockstep):
each trial gives what it gives when run alone (same streams: identical channels, participants
and latencies; parameters equal up to float reassociation of the wider GEMMs), whatever trials
step beside it; reruns are bit-identical; runs with different horizons stop on their own.
Local-SGD (CNN) trials in lockstep: bit-identical to their runs alone on CPU, whatever runs
share the step; the CUDA form (vmap) up to reassociation; the CPU/CUDA choice by structure."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import airfl.schemes  # noqa: F401
from airfl.core import lockstep, memory
from airfl.core.engine import ClientData, client_gradients, client_gradients_many, gather
from airfl.core.engine import full_batches, local_sgd, local_sgd_many
from airfl.core.lockstep import batchable, run_lockstep
from airfl.core.loop import LocalWork, Schedule, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics, Scheme
from airfl.models.flat import SoftmaxRegression, build_model
from airfl.pipeline.registry import build_scheme

MODEL = SoftmaxRegression(6, 3, l2=0.01)
PER_ROUND = 21 / 1e6                               # OTA latency d / B, d = 3 * (6 + 1)


def _data(per_client=(20, 20, 20, 20), dim=6, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    total = sum(per_client)
    x, y = torch.randn(total, dim, generator=g), torch.randint(0, classes, (total,), generator=g)
    sizes = torch.tensor(per_client)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes, 0)])
    return ClientData(x, y, torch.randperm(total, generator=g), offsets, sizes)


DATA = _data()
STATS = ChannelStatistics(torch.ones(4, dtype=torch.float64), 1.0, 1e6, torch.ones(4))


def _setup(trial=0, server_lr=0.5, rounds=40, horizon_s=None, upload="gradient"):
    return TrialSetup("test/lockstep", 11, trial, MODEL, DATA, (DATA.x, DATA.y), (DATA.x, DATA.y),
                      STATS, rounds=rounds, eval_every=5,
                      local=LocalWork(1, 5, 0.1, upload=upload, full_batch=upload == "gradient"),
                      server=ServerStep(server_lr), schedule=Schedule(horizon_s=horizon_s),
                      track_objective=True)


OTA = build_scheme("ota", {"scheme": "ota_truncated_inversion", "snr_db": 0.0,
                           "truncation_threshold": 0.3, "clip_norm": 1.0})
OTA_DESIGN = {"amplitude": 2.0, "threshold_power": 0.3, "noise_multiplier": 0.5}
IDEAL = build_scheme("ideal", {"scheme": "ideal_fedavg"})


def _jobs():
    """Candidates of a tune job: two step sizes x two trials of a noisy OTA scheme with a time
    horizon (they stop at different rounds) and a noise-free one with a round budget."""
    return [(_setup(0, 0.5, rounds=1000, horizon_s=17.5 * PER_ROUND), OTA, OTA_DESIGN),
            (_setup(1, 0.5, rounds=1000, horizon_s=17.5 * PER_ROUND), OTA, OTA_DESIGN),
            (_setup(0, 0.25, rounds=1000, horizon_s=30.5 * PER_ROUND), OTA, OTA_DESIGN),
            (_setup(1, 0.25, rounds=40), IDEAL, {})]


def _assert_same_run(batched, alone):
    """Same rounds, same stream-driven fields exactly; model-driven numbers to float32
    reassociation (measured: agreement to ~1e-7 relative)."""
    (table, records), (ref_table, ref_records) = batched, alone
    assert list(table.columns) == list(ref_table.columns)
    assert table["round"].tolist() == ref_table["round"].tolist()
    assert table["time_s"].tolist() == ref_table["time_s"].tolist()
    for column in table.columns:
        if column in ("participants", "latency_s"):
            assert table[column].equals(ref_table[column])
        else:
            pd.testing.assert_series_equal(table[column], ref_table[column], rtol=1e-5, atol=1e-7)
    assert [r["participants"] for r in records if "participants" in r] == \
        [r["participants"] for r in ref_records if "participants" in r]


def test_each_lockstep_trial_equals_its_run_alone_and_stops_at_its_own_horizon():
    jobs = _jobs()
    assert batchable(jobs)
    batched = run_lockstep(jobs)
    alone = [run_trial(*job, progress=False) for job in _jobs()]
    for got, ref in zip(batched, alone):
        _assert_same_run(got, ref)
    assert [len(r) for _, r in batched] == [18, 18, 31, 40]          # each stopped on its own
    # the batch changed something only by reassociation: the objective did move
    assert batched[3][0]["objective"].dropna().iloc[-1] < batched[3][0]["objective"].iloc[0]


def test_a_trials_result_does_not_depend_on_its_partners_beyond_reassociation():
    jobs = _jobs()
    with_all = run_lockstep(jobs)[0]
    with_one = run_lockstep([jobs[0], jobs[3]])[0]
    _assert_same_run(with_one, with_all)
    for got, ref in zip(run_lockstep(_jobs(), max_batch=3), run_lockstep(_jobs())):  # groups
        _assert_same_run(got, ref)


def test_lockstep_reruns_are_bit_identical():
    first, second = run_lockstep(_jobs()), run_lockstep(_jobs())
    for (a, ra), (b, rb) in zip(first, second):
        assert a.equals(b) and ra == rb


def test_batched_softmax_gradients_equal_the_per_model_gradients():
    """client_gradients_many: J models' full-batch gradients in one computation equal each
    model's own (`client_gradients`, itself checked against autograd in test_engine.py)."""
    models = torch.randn(5, MODEL.dim, generator=torch.Generator().manual_seed(2))
    batch = gather(DATA, full_batches(DATA))
    many = client_gradients_many(MODEL, models, batch)
    assert many.shape == (5, 4, MODEL.dim) and many.is_contiguous()
    for j in range(5):
        torch.testing.assert_close(many[j], client_gradients(MODEL, models[j], DATA, batch)[1],
                                   rtol=1e-5, atol=1e-6)


def test_only_full_batch_gradient_trials_of_one_data_set_are_batched():
    assert not batchable([_jobs()[0]])                               # nothing to batch
    delta = [(_setup(upload="delta"), IDEAL, {}), (_setup(1, upload="delta"), IDEAL, {})]
    assert not batchable(delta)
    other = _setup(1)
    other.data = _data(seed=1)
    assert not batchable([_jobs()[0], (other, IDEAL, {})])
    with pytest.raises(ValueError, match="run_trial"):
        run_lockstep(delta)


def test_softmax_gradients_of_read_rows_on_sparse_inputs_equal_the_per_model_gradients():
    """`grads_rows` with a rows mask and inputs with zero columns (some all-zero for one client
    only, one for all): the read rows equal each model's own gradient (l2 term included on the
    dropped columns), the other rows are exactly 0; with rows None every row is computed."""
    data = _data(dim=6, seed=3)
    data.x[:, 0] = 0.0                                            # zero for every client
    first = data.client_index[data.offsets[0]:data.offsets[1]]
    data.x[first, 4] = 0.0                                        # zero for client 0 only
    model = SoftmaxRegression(6, 3, l2=0.05)
    models = torch.randn(5, model.dim, generator=torch.Generator().manual_seed(4))
    batch = gather(data, full_batches(data))
    rows = torch.rand(5, 4, generator=torch.Generator().manual_seed(5)) < 0.5
    rows[:, 2] = False                                            # a client nobody reads
    rows[0] = True                                                # a model that reads all
    got = client_gradients_many(model, models, batch, rows)
    full = client_gradients_many(model, models, batch)
    for j in range(5):
        ref = client_gradients(model, models[j], data, batch)[1]
        torch.testing.assert_close(full[j], ref, rtol=1e-5, atol=1e-6)
        for m in range(4):
            if rows[j, m]:
                torch.testing.assert_close(got[j, m], ref[m], rtol=1e-5, atol=1e-6)
            else:
                assert torch.equal(got[j, m], torch.zeros(model.dim))
    assert model._client_columns(batch.x, batch.y)[0][0].tolist() == [1, 2, 3, 5]   # per batch


# ------------------------------------------------------------------ local SGD (CNN) in lockstep

def _images(clients=4, per_client=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    total = clients * per_client
    x, y = torch.rand(total, 1, 28, 28, generator=g), torch.randint(0, 10, (total,), generator=g)
    sizes = torch.full((clients,), per_client)
    offsets = torch.arange(0, total + 1, per_client)
    return ClientData(x, y, torch.randperm(total, generator=g), offsets, sizes)


IMAGES = _images()
CNN = build_model("cnn_mnist", (1, 28, 28), 10)
CNN_STATS = ChannelStatistics(torch.ones(4, dtype=torch.float64), 1.0, 1e6, torch.ones(4))


class _RandomParticipants(Scheme):
    """A test scheme with partial participation: 2 of the 4 devices a round, from the round's
    `sampling` stream, their updates averaged (so runs differ in which rows they train)."""

    kind = "test_random_participants"

    def participants(self, state, design):
        return torch.randperm(4, generator=state.streams("sampling"))[:2]

    def aggregate(self, updates, state, design):
        return updates.mean(dim=0), {"participants": int(updates.shape[0]), "latency_s": 0.0}


def _cnn_jobs(trials=(0, 1, 2), epochs=None):
    local = LocalWork(2, 4, 0.05, epochs=epochs)
    jobs = []
    for trial in trials:
        setup = TrialSetup("test/cnn_lockstep", 5, trial, CNN, IMAGES, (IMAGES.x, IMAGES.y),
                           (IMAGES.x, IMAGES.y), CNN_STATS, rounds=3, eval_every=1, local=local,
                           server=ServerStep(1.0))
        scheme = _RandomParticipants("random") if trial % 2 else IDEAL
        jobs.append((setup, scheme, {}))
    return jobs


@pytest.fixture
def cnn_batched_on_cpu(monkeypatch):
    """The trial-batched form for cnn_mnist on CPU (not measured faster there: off by default)."""
    monkeypatch.setattr(lockstep, "CPU_TRIAL_BATCHED", frozenset({"cnn_mnist"}))


@pytest.mark.parametrize("epochs", [None, 1])
def test_a_cnn_run_trained_beside_others_is_bit_identical_to_its_run_alone(cnn_batched_on_cpu,
                                                                          epochs):
    """Trial x client rows in one local step (CPU loop engine): each run's table and records
    are exactly its run alone, with every trial, with a subset, and in groups of one."""
    jobs = _cnn_jobs(epochs=epochs)
    assert lockstep.local_batchable(jobs) and not batchable(jobs)
    together = run_lockstep(jobs)
    alone = [run_trial(*job, progress=False) for job in _cnn_jobs(epochs=epochs)]
    pair = run_lockstep(_cnn_jobs((1, 2), epochs=epochs))
    singles = run_lockstep(_cnn_jobs(epochs=epochs), max_batch=1)
    for got, ref in zip(together, alone):
        assert got[0].equals(ref[0]) and got[1] == ref[1]
    for got, ref in zip(pair, alone[1:]):
        assert got[0].equals(ref[0]) and got[1] == ref[1]
    for got, ref in zip(singles, alone):
        assert got[0].equals(ref[0]) and got[1] == ref[1]
    assert together[0][0]["train_loss"].iloc[-1] != together[0][0]["train_loss"].iloc[0]
    assert [r["participants"] for r in together[1][1]] == [2, 2, 2]


def test_trial_batching_is_chosen_per_device_and_model():
    """On CPU only FedAvgCNN measured faster trial-batched (the loop engine steps row by row
    either way), so the train stage runs the other CNNs' trials one after the other there; on
    CUDA it batches every model's."""
    for name in ("cnn_mnist", "cnn_mnist_k3", "fedavg_cnn", "resnet18_gn"):
        model = build_model(name, (1, 28, 28), 10)
        assert lockstep.trial_batching(model, "cuda")
        assert lockstep.trial_batching(model, "cpu") == (name in lockstep.CPU_TRIAL_BATCHED)
    assert lockstep.CPU_TRIAL_BATCHED == {"fedavg_cnn"}
    assert not lockstep.local_batchable(_cnn_jobs())             # CPU default: one by one
    with pytest.raises(ValueError, match="run_trial"):
        run_lockstep(_cnn_jobs())


def test_only_runs_with_the_same_local_work_and_sample_shape_step_together(cnn_batched_on_cpu):
    jobs = _cnn_jobs((0, 1))
    assert lockstep.local_batchable(jobs) and not lockstep.local_batchable(jobs[:1])
    other = _cnn_jobs((1,))[0]
    other[0].local = LocalWork(3, 4, 0.05)
    assert not lockstep.local_batchable([jobs[0], other])
    other = _cnn_jobs((1,))[0]
    other[0].data = _images(seed=1)                  # a partition per trial: its own samples
    assert lockstep.local_batchable([jobs[0], other])
    other[0].data = ClientData(torch.rand(48, 1, 27, 27), IMAGES.y, IMAGES.client_index,
                               IMAGES.offsets, IMAGES.sizes)
    assert not lockstep.local_batchable([jobs[0], other])


def test_runs_on_their_own_data_sets_are_bit_identical_to_their_runs_alone(cnn_batched_on_cpu):
    """A partition per trial: each run's samples gathered into its rows of the step's batch."""
    def jobs():
        out = _cnn_jobs((0, 1, 2))
        for job, seed in zip(out, (1, 2, 3)):
            job[0].data = _images(seed=seed)
        out[2][0].data = out[2][0].data.subset(torch.tensor([3, 0, 2]))    # fewer clients
        return out
    together = run_lockstep(jobs())
    for got, ref in zip(together, [run_trial(*job, progress=False) for job in jobs()]):
        assert got[0].equals(ref[0]) and got[1] == ref[1]


def test_runs_are_grouped_to_the_memory_budget(monkeypatch):
    setup = _cnn_jobs((0,))[0][0]
    run_bytes = 4 * CNN.dim * 4                                  # 4 clients x d x fp32
    monkeypatch.setattr(memory, "ROUND_BUDGET_BYTES", 3 * run_bytes + 1)
    assert lockstep._runs_per_group(setup, 32) == 3 and lockstep._runs_per_group(setup, 2) == 2
    monkeypatch.setattr(memory, "ROUND_BUDGET_BYTES", 1)
    assert lockstep._runs_per_group(setup, 32) == 1             # a run is never split


def test_vmap_over_trial_and_client_rows_agrees_with_runs_alone():
    """The CUDA form (vmap over all rows), run on CPU: each run's updates equal its own
    `local_sgd` up to float reassociation of the grouped kernels."""
    model = build_model("cnn_mnist", (1, 28, 28), 10, engine="vmap")
    starts = torch.stack([model.init(torch.Generator().manual_seed(s)) for s in (1, 2)])
    parts = [IMAGES, IMAGES.subset(torch.tensor([2, 0]))]
    many = local_sgd_many(model, starts, parts, 2, 4, 0.05,
                          [torch.Generator().manual_seed(s) for s in (3, 4)])
    first = local_sgd(model, starts[0], parts[0], 2, 4, 0.05, torch.Generator().manual_seed(3))
    second = local_sgd(model, starts[1], parts[1], 2, 4, 0.05, torch.Generator().manual_seed(4))
    torch.testing.assert_close(many, torch.cat([first, second]), rtol=1e-4, atol=1e-6)


def test_fedavg_cnn_rows_trained_beside_another_run_are_bit_identical():
    """The model batched on CPU (`CPU_TRIAL_BATCHED`): its fused per-row step gives each run's
    updates bit for bit, a subset of clients included."""
    model = build_model("fedavg_cnn", (1, 28, 28), 10)
    starts = torch.stack([model.init(torch.Generator().manual_seed(s)) for s in (1, 2)])
    parts = [IMAGES.subset(torch.tensor([1, 3])), IMAGES.subset(torch.tensor([2]))]
    many = local_sgd_many(model, starts, parts, 1, 3, 0.05,
                          [torch.Generator().manual_seed(s) for s in (3, 4)])
    alone = [local_sgd(model, start, part, 1, 3, 0.05, torch.Generator().manual_seed(s))
             for start, part, s in zip(starts, parts, (3, 4))]
    assert torch.equal(many, torch.cat(alone))
