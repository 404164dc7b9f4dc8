"""Trials in lockstep with batched gradients (airfl.core.lockstep):
each trial gives what it gives when run alone (same streams: identical channels, participants
and latencies; parameters equal up to float reassociation of the wider GEMMs), whatever trials
step beside it; reruns are bit-identical; runs with different horizons stop on their own."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import airfl.schemes  # noqa: F401
from airfl.core.engine import ClientData, client_gradients, client_gradients_many, gather
from airfl.core.engine import full_batches
from airfl.core.lockstep import batchable, run_lockstep
from airfl.core.loop import LocalWork, Schedule, ServerStep, TrialSetup, run_trial
from airfl.core.scheme import ChannelStatistics
from airfl.models import SoftmaxRegression
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
