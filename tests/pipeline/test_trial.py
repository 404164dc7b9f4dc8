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
    the JSON (issue 12: train reads what design stored): every experiment's trial-0 statistics
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
