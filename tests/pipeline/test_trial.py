"""Shared set-up of the train and tune stages: the per-process cache of a dataset split."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import airfl.pipeline.trial as setup


def test_a_split_is_read_once_per_process_and_cannot_be_changed_through_the_cache(
        mnist_mirror, monkeypatch):
    reads = []
    original = setup.load_dataset

    def counted(name, root, split, verify_md5=True):
        reads.append(split)
        return original(name, root, split, verify_md5)

    monkeypatch.setattr(setup, "load_dataset", counted)
    setup.dataset_split.cache_clear()
    params = {"data": {"root": str(mnist_mirror)}}
    block = {"dataset": "mnist", "scale": {"test_subset": 100}}
    first = setup.test_data(params, block, torch.device("cpu"))
    first[0].add_(1.0)                                  # a caller mutating its tensors ...
    first[1].zero_()
    second = setup.test_data(params, block, torch.device("cpu"))
    assert reads == ["test"]                            # ... read once, not once per candidate
    x, y = original("mnist", mnist_mirror, "test")
    assert torch.equal(second[0], torch.from_numpy(x[:100]).float().div_(255.0).unsqueeze(1))
    assert torch.equal(second[1], torch.from_numpy(y[:100]))   # ... leaves the cache intact
    cached_x, cached_y = setup.dataset_split("mnist", str(mnist_mirror), "test")
    assert not cached_x.flags.writeable and not cached_y.flags.writeable
    with pytest.raises(ValueError):
        cached_y[0] = 3
    assert np.array_equal(cached_y, y)
    setup.dataset_split.cache_clear()


def test_stored_channel_statistics_rebuild_bit_for_bit(repo_root):
    """The design stage stores each trial's statistics and the train stage rebuilds them from
    the JSON (train reads what design stored): every experiment's trial-0 statistics
    survive the round trip exactly, dtype included."""
    import json

    import yaml

    from airfl.core.scheme import ChannelStatistics
    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import all_experiments

    params = validate_params(yaml.safe_load((repo_root / "params.yaml").read_text()))
    for experiment in all_experiments():
        block = experiment.params(params)
        curve = next(iter(block["curves"].values()))
        stats = setup.channel_statistics(params, block, experiment.id, 0, curve)
        back = ChannelStatistics.from_record(json.loads(json.dumps(stats.to_record())))
        for field in ("path_gain", "distances_m"):
            assert torch.equal(getattr(back, field), getattr(stats, field)), experiment.id
        assert back.to_record() == stats.to_record(), experiment.id


def _block(channel: dict) -> dict:
    return {"num_devices": 4, "channel": channel}


def test_rayleigh_mean_gain_model_gives_every_device_the_stated_mean_gain():
    """`channel.model: rayleigh_mean_gain`: E|h_m|^2 = mean_gain for every device, no layout
    (CDPB's h_bar), and the round loop's Rayleigh draw has that mean."""
    from airfl.core.loop import draw_channel_power
    from airfl.runtime.rng import RoundStreams

    stats = setup.channel_statistics({"seed": 0}, _block({"model": "rayleigh_mean_gain",
                                                          "mean_gain": 2.5}), "t/e", 0)
    assert torch.equal(stats.path_gain, torch.full((4,), 2.5, dtype=torch.float64))
    assert stats.reference_gain == 2.5 and torch.equal(stats.distances_m, torch.zeros(4,
                                                                           dtype=torch.float64))
    draws = torch.stack([draw_channel_power(stats.path_gain, RoundStreams(0, "t/e", 0, t))
                         for t in range(1, 2001)])
    assert float(draws.mean()) == pytest.approx(2.5, rel=0.05)      # 8,000 Exp draws: ~1.1% sd


def test_geometry_model_places_devices_in_the_disc_with_path_loss_decreasing_in_distance():
    channel = {"model": "geometry", "radius_m": 100.0, "min_radius_m": 10.0,
               "placement": "uniform", "bandwidth_hz": 1.0e6,
               "pathloss": {"model": "log_distance", "pl0_db": 30.0, "exponent": 3.0}}
    stats = setup.channel_statistics({"seed": 3}, _block(channel), "t/e", 1)
    assert bool(((stats.distances_m >= 10.0) & (stats.distances_m <= 100.0)).all())
    order = stats.distances_m.argsort()
    assert bool((stats.path_gain[order].diff() <= 0).all())
    assert stats.reference_gain <= float(stats.path_gain.min())    # the edge is the farthest
    assert stats.energy_per_symbol is None                         # no power: no radio units


@pytest.mark.parametrize("channel, expected", [
    ({"mean_gain": 1.0}, "wing.fig.channel.model: None is not a channel model; allowed: "
                         "geometry, rayleigh_mean_gain"),
    ({"model": "rician", "mean_gain": 1.0}, "wing.fig.channel.model: 'rician' is not"),
])
def test_a_composed_block_without_a_known_channel_model_stops_naming_the_key(channel, expected):
    """A wing's composed block is not checked by the params schema: the builder lookup names
    the key and what is allowed (no guess from the block's shape)."""
    from airfl.params.config import ConfigError

    with pytest.raises(ConfigError) as info:
        setup.channel_statistics({"seed": 0}, _block(channel), "t/e", 0, where="wing.fig.channel")
    assert expected in str(info.value)
    with pytest.raises(ConfigError) as info:       # what the design and tune stages call first
        setup.check_channel_model(_block(channel), "wing.fig.channel")
    assert expected in str(info.value)


def test_one_call_builds_the_parts_of_a_trial_from_the_block():
    """trial_setup fills local work, server step and schedule from the resolved block and the
    reference; final_only drops every evaluation before the last round."""
    from airfl.core.engine import ClientData
    from airfl.core.scheme import ChannelStatistics
    from airfl.models.flat import SoftmaxRegression
    from airfl.pipeline.registry import get_experiment

    experiment = get_experiment("biased_fl/fig2a")
    x = torch.zeros(4, 3)
    data = ClientData(x, torch.zeros(4, dtype=torch.long), torch.arange(4), torch.tensor([0, 2, 4]),
                      torch.tensor([2, 2]))
    shared = setup.CurveInputs(SoftmaxRegression(3, 2), data, (x, data.y), (x, data.y),
                               {"projection_radius": 7.5})
    stats = ChannelStatistics(torch.ones(2, dtype=torch.float64), 1.0, 1e6, torch.ones(2))
    block = {"training": {"upload": "gradient", "full_batch": True, "local_steps": 1,
                          "batch_size": 2, "lr": 0.0},
             "scale": {"rounds": 30, "eval_every": 5, "horizon_s": 2.5, "eval_every_s": 0.5}}
    made = setup.trial_setup({"seed": 9}, experiment, block, shared, 3, server_lr=0.25,
                             statistics=stats)
    assert (made.experiment, made.seed, made.trial, made.rounds) == (experiment.id, 9, 3, 30)
    assert (made.local.upload, made.local.full_batch, made.local.epochs) == ("gradient", True, None)
    assert (made.server.lr, made.server.projection_radius) == (0.25, 7.5)
    assert (made.schedule.horizon_s, made.schedule.eval_every_s) == (2.5, 0.5)
    assert made.track_objective and made.full_batch_data is not None
    block["training"] = {"local_steps": 3, "batch_size": 2, "lr": 0.1, "local_epochs": 2}
    final = setup.trial_setup({"seed": 9}, experiment, block, setup.CurveInputs(
        shared.model, data, shared.test, shared.train_eval, {}), 0, server_lr=1.0,
        statistics=stats, final_only=True)
    assert (final.local.upload, final.local.epochs, final.server.projection_radius) == \
        ("delta", 2, None)
    assert final.schedule.eval_every_s is None and final.eval_every == setup.NEVER
    assert not final.track_objective and final.full_batch_data is None
